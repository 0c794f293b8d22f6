/** `svc deliveries list|show|redeliver|recover`, in-process against a real outbox and worker. */
import { execFile } from 'node:child_process';
import { PassThrough } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import t from 'tap';
import { ConsoleActionError, ConsoleActions } from '../../../sender/console/actions.js';
import {
  cliOperator,
  listDeliveries,
  recoverCommand,
  redeliverCommand,
  showDelivery,
} from '../../../sender/console/cli.js';
import { ConsoleInputError } from '../../../sender/console/filters.js';
import { ConsoleStore } from '../../../sender/console/store.js';
import { buildProgram } from '../../../cli/main.js';
import { newIdempotencyKey } from '../../../sender/outbox/keys.js';
import { DATABASE_URL, REDIS_URL, testDatabase } from '../../helpers/db.js';
import { senderHarness, startReceiver } from '../harness.js';

// tsx child processes on a shared machine.
t.setTimeout(300_000);
const SVC = fileURLToPath(new URL('../../../bin/svc.js', import.meta.url));

function capture() {
  const stream = new PassThrough();
  let text = '';
  stream.on('data', (c) => (text += c));
  return { stream, text: () => text };
}

t.test('svc deliveries', async (t) => {
  const h = await senderHarness(t);
  let status = 410;
  // The refusal echoes the HMAC secret and carries a terminal escape: neither is shown.
  const rx = await startReceiver(() => ({
    status,
    body:
      status === 200
        ? ''
        : JSON.stringify({ error: 'gone', you_sent: 'sssssssssssssssssssssssssssssssss' }) +
          '\u001b[2J',
  }));
  t.teardown(() => rx.close());
  h.startWorker();
  const store = new ConsoleStore(h.pool, h.schema);
  const actions = new ConsoleActions(h.pool, h.queue, h.schema);
  const key = newIdempotencyKey();
  const [id] = await h.outbox.enqueue([
    {
      target: {
        url: rx.url,
        auth: { mode: 'hmac', secret: 'sssssssssssssssssssssssssssssssss' },
        channel: 'task',
      },
      payload: { idempotency_key: key, status: 'completed' },
      idempotencyKey: key,
      notificationType: 'completed',
      mediaBuyId: 'mb_cli',
    },
  ]);
  await h.waitForState(id!, ['stopped']);

  const list = capture();
  await listDeliveries(store, { status: 'stopped', limit: '1' }, list.stream);
  t.match(
    list.text(),
    new RegExp(
      `^id\\tstate\\tevent\\turl\\tattempts\\tlast\\tcreated\\n${id}\\tstopped\\tcompleted\\t${rx.url}\\tattempts=1\\t410`,
    ),
    'a header row, then the rows',
  );
  const json = capture();
  await listDeliveries(store, { mediaBuy: 'mb_cli', json: true }, json.stream);
  t.equal(JSON.parse(json.text()).items[0].id, id);
  const none = capture();
  await listDeliveries(store, { status: 'pending' }, none.stream);
  t.equal(none.text(), 'no delivery matches\n');
  await t.rejects(listDeliveries(store, { from: 'soon' }, none.stream), ConsoleInputError);

  const show = capture();
  t.ok(await showDelivery(store, id!, false, show.stream));
  t.match(show.text(), /attempts:\n {2}1 {2}failed/);
  t.notMatch(show.text(), /sssssss/, 'never the HMAC secret');
  t.match(
    show.text(),
    /\n {5}key - {2}response "\{\\"error\\":\\"gone\\",\\"you_sent\\":\\"\[redacted\]\\"\} \[2J"\n/,
  );
  // eslint-disable-next-line no-control-regex
  t.notMatch(show.text(), /\u001b/, 'no terminal escape from the receiver');
  t.notOk(await showDelivery(store, '424242424', false, show.stream));
  const showJson = capture();
  await showDelivery(store, id!, true, showJson.stream);
  t.equal(JSON.parse(showJson.text()).state, 'stopped');

  status = 200;
  const re = capture();
  await redeliverCommand(actions, id!, re.stream);
  t.equal(re.text(), `delivery ${id}: attempt 2 requested\n`);
  await h.waitForState(id!, ['delivered']);
  await t.rejects(redeliverCommand(actions, 'x', re.stream), ConsoleActionError);

  status = 410;
  const more = await h.outbox.enqueue(
    [1, 2].map(() => {
      const k = newIdempotencyKey();
      return {
        target: { url: rx.url, auth: { mode: 'rfc9421' as const }, channel: 'task' as const },
        payload: { idempotency_key: k },
        idempotencyKey: k,
        notificationType: 'completed',
      };
    }),
  );
  for (const m of more) await h.waitForState(m, ['stopped']);
  status = 200;
  const rec = capture();
  await recoverCommand(
    actions,
    new URL(rx.url).origin,
    new Date(Date.now() - 60_000).toISOString(),
    rec.stream,
  );
  t.match(rec.text(), /: 2 stopped or expired deliveries since .* sent again\n$/);
  for (const m of more) t.equal(await h.waitForState(m, ['delivered']), 'delivered');
  const audit = await store.audit();
  t.equal(audit[0]!.operator, cliOperator().name);
  t.equal(audit[0]!.via, 'cli');
  await t.rejects(recoverCommand(actions, 'nope', 'x', rec.stream), ConsoleInputError);
});

t.test('the commands are registered with help', async (t) => {
  const program = buildProgram();
  const deliveries = program.commands.find((c) => c.name() === 'deliveries');
  t.same(deliveries?.commands.map((c) => c.name()).sort(), [
    'list',
    'pause',
    'recover',
    'redeliver',
    'resume',
    'search-index',
    'show',
    'test',
  ]);
  for (const verb of ['pause', 'resume', 'test', 'recover']) {
    const help = deliveries!.commands.find((c) => c.name() === verb)!.helpInformation();
    t.match(help, /Arguments:\s+origin\s+destination origin/, `${verb} --help names its argument`);
  }
  t.match(
    deliveries!.commands.find((c) => c.name() === 'recover')!.helpInformation(),
    /--dry-run[\s\S]*--all/,
  );
  const consoleCmd = program.commands.find((c) => c.name() === 'console');
  t.match(
    consoleCmd!.helpInformation(),
    /--auth <token\|oidc>\s+browser sign-in:[\s\S]*\(env\s+SVC_CONSOLE_AUTH,\s+default\s+token\)/,
    'the sign-in setting, documented',
  );
  t.match(
    deliveries!.commands.find((c) => c.name() === 'list')!.helpInformation(),
    /--status <state>/,
  );
});

t.test('svc deliveries redeliver of an unknown id: NOT_FOUND and nothing after it', async (t) => {
  const { schema } = testDatabase(t, 'rdnf');
  // Several at once: the connection set-up race showed about one run in four.
  const runs = await Promise.all(
    [1, 2, 3, 4].map(() =>
      promisify(execFile)(
        process.execPath,
        [SVC, 'deliveries', 'redeliver', '999', '--schema', schema],
        { env: { ...process.env, DATABASE_URL, REDIS_URL, LOG_LEVEL: 'silent' } },
      ).catch((e: { code: number; stdout: string; stderr: string }) => e),
    ),
  );
  for (const r of runs) {
    t.equal((r as { code?: number }).code, 1);
    t.equal(r.stderr, 'NOT_FOUND: no delivery 999\n', 'the answer, and no stack trace after it');
  }
});
