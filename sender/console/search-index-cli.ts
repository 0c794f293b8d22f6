/**
 * `svc deliveries search-index status|enable|disable [--contains] [--payload]`: the
 * operator's search indexes (search-index.ts) from the command line, the same calls as the
 * console's page and JSON API, audited as `cli:<user>`. Output goes to a given stream so
 * tests run it in-process.
 */
import type { Writable } from 'node:stream';
import {
  SEARCH_INDEXES,
  searchesHow,
  searchIndexKinds,
  type SearchIndexes,
  type SearchIndexState,
} from './search-index.js';
import type { Operator } from './actions.js';

export const SEARCH_INDEX_ACTIONS = ['status', 'enable', 'disable'] as const;
export type SearchIndexAction = (typeof SEARCH_INDEX_ACTIONS)[number];

/** The `--help` text's costs: what each index adds to every event's insert. */
export const SEARCH_INDEX_HELP = `
Off by default: every event's insert writes each index (PostgreSQL backend CPU per
event, npm run bench -- console-write 20, three runs: 43-45 µs with neither, 79-84 µs
with both).
  --contains  ${SEARCH_INDEXES.contains.name}: pg_trgm GIN over task, principal,
              media buy and destination; *value* searches read it instead of walking
              the list. ${SEARCH_INDEXES.contains.cost}.
              Needs the pg_trgm extension: created if the role may, else an error
              naming what to do.
  --payload   ${SEARCH_INDEXES.payload.name}: jsonb_path_ops GIN over the body; a rare
              path=value search reads it. ${SEARCH_INDEXES.payload.cost}.
Neither flag: both. Enable builds partition by partition (CREATE INDEX CONCURRENTLY:
deliveries go on), printing each; about 50 s for both on 1M events. Run it again to
finish one cut short. Disable drops them.`;

function statusLine(s: SearchIndexState): string {
  const how = `searches ${searchesHow(s)}`;
  return `${s.kind.padEnd(9)} ${s.state.padEnd(8)} ${s.index.padEnd(24)} ${s.partitions.indexed} of ${s.partitions.of} partitions  ${how}\n`;
}

export async function searchIndexCommand(
  indexes: SearchIndexes,
  action: SearchIndexAction,
  o: { contains?: boolean; payload?: boolean; json?: boolean },
  who: Operator,
  out: Writable,
): Promise<void> {
  if (action === 'status') {
    const status = await indexes.status();
    if (o.json) out.write(`${JSON.stringify({ items: status }, null, 2)}\n`);
    else for (const s of status) out.write(statusLine(s));
    return;
  }
  const kinds = searchIndexKinds({ contains: o.contains, payload: o.payload });
  const r =
    action === 'enable'
      ? await indexes.enable(kinds, who, (p) =>
          out.write(
            `${p.kind}: ${p.partition} ${p.step} (${p.done} of ${p.of}, about ${p.rows.toLocaleString('en')} rows)\n`,
          ),
        )
      : await indexes.disable(kinds, who);
  if (o.json) {
    out.write(`${JSON.stringify(r, null, 2)}\n`);
    return;
  }
  for (const s of r.status.filter((x) => kinds.includes(x.kind))) out.write(statusLine(s));
}
