/**
 * The manual flow: the kit prints, per step, the push_notification_config and context to
 * register; here a "tester" reads them from that text and has a scripted sender deliver.
 */
import t from 'tap';
import { generateSigningKey, publishedJwk } from '../../../shared/signing/keys.js';
import { ManualDriver } from '../../../conformance/grade-sender/driver.js';
import { gradeSender } from '../../../conformance/grade-sender/grade-sender.js';
import { profile } from '../support/receivers.js';
import { publishKeys, ScriptedSender } from '../support/senders.js';

/** Parses the printed instructions and delivers like a sender registered by hand would. */
function tester(sender: ScriptedSender) {
  const printed: string[] = [];
  const err = (text: string) => {
    printed.push(text);
    const m = /\[(\w+)\][^\n]*\n\s+push_notification_config: (\{.*\})\n\s+context: (\{.*\})\n/.exec(
      text,
    );
    if (!m) return;
    const config = JSON.parse(m[2]!) as { url: string; operation_id: string };
    const initial = m[1] === 'terminal' ? 'terminal' : 'async';
    void sender.trigger({
      stepId: m[1]!,
      url: config.url,
      operationId: config.operation_id,
      context: JSON.parse(m[3]!) as Record<string, unknown>,
      initial,
      instructions: '',
    });
  };
  return { printed, err };
}

t.test('by hand, with a terminal to confirm on: every check graded', async (t) => {
  const { key } = await generateSigningKey('ed25519');
  const pub = await publishKeys(t, [publishedJwk(key, profile)]);
  const sender = new ScriptedSender(key);
  const who = tester(sender);
  const prompts: string[] = [];
  const report = await gradeSender({
    profile,
    protocolVersion: '3.2',
    driver: new ManualDriver({ err: who.err, confirm: async (p) => void prompts.push(p) }),
    keys: { jwksUrl: pub.jwksUrl, allowLoopback: true },
    stepTimeoutMs: 8000,
    quietMs: 1200,
  });
  await sender.close();
  const text = who.printed.join('');
  t.match(text, /\[echo\] Register this push_notification_config/);
  t.match(text, /\[retry\][^\n]*503 to the first 3 deliveries/);
  t.match(text, /\[conflict\][^\n]*409/);
  t.equal(prompts.length, 1, 'the terminal step asks for confirmation');
  const notPassed = report.checks.filter((c) => c.status !== 'passed');
  t.same(
    notPassed.map((c) => c.id),
    ['keys.published'],
    'all but publication, which needs --agent-url or --brand-json-url',
  );
});

t.test('by hand without a terminal: the terminal step is not applicable', async (t) => {
  const { key } = await generateSigningKey('ed25519');
  const pub = await publishKeys(t, [publishedJwk(key, profile)]);
  const sender = new ScriptedSender(key, { webhookOnTerminal: true });
  const who = tester(sender);
  const report = await gradeSender({
    profile,
    protocolVersion: '3.2',
    driver: new ManualDriver({ err: who.err }),
    keys: { agentUrl: pub.agentUrl, allowLoopback: true },
    stepTimeoutMs: 8000,
    quietMs: 1200,
  });
  await sender.close();
  const c = report.checks.find((x) => x.id === 'terminal-initial.no-webhook')!;
  t.equal(
    c.status,
    'not_applicable',
    'silence proves nothing unconfirmed, even from a flawed sender',
  );
  t.match(c.detail, /confirm/);
  t.equal(report.summary.failed, 0);
});
