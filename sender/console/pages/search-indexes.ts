/**
 * Search indexes (issue 26): whether the contains and payload searches read an index or
 * walk the list, what each index costs every event's insert, and the forms that build or
 * drop them (the same call as `svc deliveries search-index` and the JSON API's).
 */
import { html, type Html } from '../../../shared/console/html.js';
import type { SearchIndexBuild } from '../search-index-build.js';
import {
  SEARCH_INDEXES,
  searchesHow,
  type SearchIndexKind,
  type SearchIndexState,
} from '../search-index.js';

const ABOUT: Record<SearchIndexKind, string> = {
  contains: 'Contains searches (*value*) of task, principal, media buy and destination',
  payload: 'Payload searches (path=value)',
};

function row(s: SearchIndexState): Html {
  const how = searchesHow(s);
  return html`<tr data-index="${s.kind}">
    <td>${ABOUT[s.kind]}</td>
    <td><code>${s.index}</code></td>
    <td><span class="state ${s.state === 'on' ? 'delivered' : 'pending'}">${s.state}</span></td>
    <td>${s.partitions.indexed} of ${s.partitions.of}</td>
    <td>${how}</td>
    <td>${SEARCH_INDEXES[s.kind].cost}</td>
  </tr>`;
}

/**
 * A build under way: the partition being built (n of N) and PostgreSQL's progress of it, as
 * a <progress> bar and in words; the page reloads itself every 2 s meanwhile.
 */
function buildSection(b: SearchIndexBuild): Html {
  const step = b.step;
  const where = step
    ? `${step.kind}: ${step.partition} ${step.step}, partition ${step.done} of ${step.of} (about ${step.rows.toLocaleString('en')} rows)`
    : 'starting';
  const p = b.partition;
  const pct = p && p.blocksTotal > 0 ? Math.floor((100 * p.blocksDone) / p.blocksTotal) : null;
  return html`<section id="search-index-build" aria-live="polite">
    <h2>Building (${b.kinds.join(', ')}), started by ${b.by} at ${b.startedAt}</h2>
    <p>
      ${where}${p ? `; PostgreSQL: ${p.phase}${pct === null ? '' : `, ${pct} % of the table's blocks`}` : ''}
    </p>
    ${
      step
        ? html`<progress
            max="${String(step.of)}"
            value="${String(step.step === 'building' ? step.done - 1 : step.done)}"
          >
            ${String(step.done)} of ${String(step.of)}
          </progress>`
        : ''
    }
    <p class="hint">
      Deliveries go on meanwhile. This page reloads itself until the build is done.
    </p>
  </section>`;
}

export function searchIndexesBody(
  status: SearchIndexState[],
  csrf: string,
  build: SearchIndexBuild | null = null,
): Html {
  const boxes = status.map(
    (s) => html`<label><input type="checkbox" name="${s.kind}" /> ${s.kind}</label> `,
  );
  return html`<h1>Search indexes</h1>
    <p class="hint" id="search-index-status">
      ${status.map((s) => `${s.kind}: ${s.state === 'on' ? 'indexed' : 'scans'}`).join('; ')}. Off
      by default: each index is written by every event's insert (the sender's hottest statement).
      Enable the ones your operators search with; building takes a while on a large outbox (one
      partition after another; deliveries go on meanwhile).
    </p>
    ${build?.running ? buildSection(build) : ''}
    <table class="list">
      <thead>
        <tr>
          <th>Search</th>
          <th>Index</th>
          <th>State</th>
          <th>Partitions</th>
          <th>Searches</th>
          <th>Cost per event</th>
        </tr>
      </thead>
      <tbody>
        ${status.map(row)}
      </tbody>
    </table>
    <form method="post" action="/search-indexes/enable" class="action">
      <input type="hidden" name="_csrf" value="${csrf}" />
      ${boxes}
      <button type="submit">Enable</button> <span class="hint">(none ticked: both)</span>
    </form>
    <form method="post" action="/search-indexes/disable" class="action">
      <input type="hidden" name="_csrf" value="${csrf}" />
      ${boxes}
      <button type="submit">Disable</button> <span class="hint">(none ticked: both)</span>
    </form>`;
}
