/**
 * One check per kind of webhook a buyer receives beside task envelopes (service spec
 * reliability rule 2, supplement §6.7): governance list changes (`property_list_changed`,
 * `collection_list_changed`, whose `signature` marker is accepted in any string form),
 * artifact push webhooks and rights `revocation-notification`. Each valid body must be
 * acknowledged and deduplicated by its `idempotency_key` (the same delivery again: 2xx,
 * not dispatched twice where a count URL is given); the same kind without a required
 * member is refused before dispatch, naming `missing_envelope_fields`.
 */
import { CheckRecorder, type CheckResult } from '../report/report.js';
import { describe, is2xx, type ReceiverRun } from './context.js';
import { agentKindBodies, AGENT_KIND_REQUIRED, bytesOf } from './payloads.js';

async function accepted(run: ReceiverRun, kind: string, body: Buffer): Promise<CheckResult> {
  const rec = new CheckRecorder(
    `kind.${kind}.accepted`,
    'kinds',
    `A ${kind} webhook is acknowledged, and its repeat is a duplicate`,
    '2xx both times; dispatched once where a count URL is given',
  );
  const c0 = await run.dispatchCount();
  const first = await run.deliver(run.signed(body), 'first');
  rec.add(first.exchange);
  const c1 = await run.dispatchCount();
  const again = await run.deliver(run.signed(body), 'duplicate');
  rec.add(again.exchange);
  const c2 = await run.dispatchCount();
  if (!is2xx(first.status)) return rec.fail(`first delivery ${describe(first)}`);
  if (!is2xx(again.status)) return rec.fail(`duplicate ${describe(again)}`);
  if (typeof c0 === 'number' && typeof c1 === 'number' && typeof c2 === 'number') {
    if (c1 - c0 !== 1) return rec.fail(`first delivery moved the dispatch count by ${c1 - c0}`);
    if (c2 !== c1) return rec.fail(`dispatched again: count ${c1} -> ${c2}`, 'duplicate_dispatch');
    return rec.pass(`both acknowledged, count ${c0} -> ${c1} -> ${c2}`);
  }
  return rec.pass(`both acknowledged (${first.status}, ${again.status}); count not available`);
}

async function refused(
  run: ReceiverRun,
  kind: string,
  value: Record<string, unknown>,
): Promise<CheckResult> {
  const member = AGENT_KIND_REQUIRED[kind] as string;
  const rec = new CheckRecorder(
    `kind.${kind}.required-member`,
    'kinds',
    `A ${kind} webhook without its required ${member} is refused before dispatch`,
    'non-2xx (4xx, not 401) naming missing_envelope_fields',
  );
  const broken = { ...value };
  delete broken[member];
  const before = await run.dispatchCount();
  const a = await run.deliver(run.signed(bytesOf(broken)));
  rec.add(a.exchange);
  const after = await run.dispatchCount();
  const status = a.status;
  if (status === undefined || status < 400 || status >= 500 || status === 401) {
    return rec.fail(describe(a));
  }
  if (typeof before === 'number' && typeof after === 'number' && after > before) {
    return rec.fail(`${describe(a)} but the event was dispatched`);
  }
  const named = a.text.includes('missing_envelope_fields')
    ? ', names missing_envelope_fields'
    : '; the body does not name missing_envelope_fields';
  return rec.pass(`${describe(a)}${named}`);
}

export async function kindChecks(run: ReceiverRun): Promise<CheckResult[]> {
  const out: CheckResult[] = [];
  for (const [kind, value] of Object.entries(agentKindBodies())) {
    out.push(await accepted(run, kind, bytesOf(value)));
    out.push(await refused(run, kind, value));
  }
  return out;
}
