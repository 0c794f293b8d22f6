#!/usr/bin/env node
// Copies the published JSON Schemas our agents need at run time out of the shared folder
// (../shared/spec/schemas/<release>/) into agents/protocol/schemas/<release>/: the request
// and response schema of every task our agents serve, and every file those $ref, nothing
// else. The package must not reach ../shared at run time. Also writes
// agents/protocol/schemas/tasks.json: per release, per `<agent>:<task>`, the $id of the
// request and response schema (absent where the release has no such task).
//
// Usage: node scripts/vendor-schemas.mjs [--source DIR] [--check]
//   --source DIR  the folder holding the release folders (default ../shared/spec/schemas)
//   --check       compare with what is vendored; exit 1 when it differs (CI drift check)
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { removeTree, vendorCli } from './vendor-files.mjs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const OUT = join(ROOT, 'agents', 'protocol', 'schemas');
const RELEASES = ['3.1.19', '3.2.0-beta.5'];

/**
 * Our tasks and the index entry (`<domain>/<task-name>`) of each. The sales agent's
 * format listing is the media-buy domain's, the creative agent's the creative domain's.
 */
const TASKS = {
  'sales:get_products': 'media-buy/get-products',
  'sales:list_creative_formats': 'media-buy/list-creative-formats',
  'sales:create_media_buy': 'media-buy/create-media-buy',
  'sales:update_media_buy': 'media-buy/update-media-buy',
  'sales:get_media_buys': 'media-buy/get-media-buys',
  'sales:get_media_buy_delivery': 'media-buy/get-media-buy-delivery',
  'sales:provide_performance_feedback': 'media-buy/provide-performance-feedback',
  'sales:sync_creatives': 'creative/sync-creatives',
  'sales:list_creatives': 'creative/list-creatives',
  'sales:list_accounts': 'account/list-accounts',
  'sales:sync_accounts': 'account/sync-accounts',
  'sales:report_usage': 'account/report-usage',
  'sales:sync_event_sources': 'media-buy/sync-event-sources',
  'creative:list_creative_formats': 'creative/list-creative-formats',
  'creative:build_creative': 'creative/build-creative',
  'creative:preview_creative': 'creative/preview-creative',
  'creative:sync_creatives': 'creative/sync-creatives',
  'creative:list_creatives': 'creative/list-creatives',
  'signals:get_signals': 'signals/get-signals',
  'signals:activate_signal': 'signals/activate-signal',
  '*:get_adcp_capabilities': 'protocol/get-adcp-capabilities',
  '*:get_task_status': 'protocol/get-task-status',
  '*:list_tasks': 'protocol/list-tasks',
  '*:sync_agent_notification_configs': 'protocol/sync-agent-notification-configs',
};

/** `$id` or `$ref` (absolute URL or `/schemas/...` path) -> path inside the release folder. */
function fileOf(ref, release) {
  const path = ref.replace(/^https?:\/\/[^/]+/, '').split('#')[0];
  const prefix = `/schemas/${release}/`;
  if (!path.startsWith(prefix)) throw new Error(`${ref}: not in release ${release}`);
  return path.slice(prefix.length);
}

function collectRefs(node, out) {
  if (Array.isArray(node)) for (const n of node) collectRefs(n, out);
  else if (node && typeof node === 'object') {
    for (const [k, v] of Object.entries(node)) {
      if (k === '$ref' && typeof v === 'string' && !v.startsWith('#')) out.push(v);
      else collectRefs(v, out);
    }
  }
}

/** Every file the release's task schemas need, and the manifest of tasks. */
const ASYNC_STATUSES = ['submitted', 'working', 'input-required'];

function vendorRelease(source, release) {
  const dir = join(source, release);
  const index = JSON.parse(readFileSync(join(dir, 'index.json'), 'utf8'));
  const tasks = {};
  const queue = [];
  for (const [key, entry] of Object.entries(TASKS)) {
    const [domain, name] = entry.split('/');
    const task = index.schemas?.[domain]?.tasks?.[name];
    if (!task) continue;
    const request = task.request?.$ref;
    const response = task.response?.$ref;
    if (!request || !response) continue;
    tasks[key] = { request, response };
    queue.push(request, response);
    // The status-specific payloads of a non-terminal answer (`<task>-async-response-
    // <status>.json`, published beside the task but not in the index): what a `working` or
    // `input-required` answer is checked against.
    for (const status of ASYNC_STATUSES) {
      const file = join(domain, `${name}-async-response-${status}.json`);
      if (!existsSync(join(dir, file))) continue;
      const id = JSON.parse(readFileSync(join(dir, file), 'utf8')).$id;
      (tasks[key].async ??= {})[status] = id;
      queue.push(id);
    }
  }
  const files = new Map();
  while (queue.length > 0) {
    const ref = queue.pop();
    const file = fileOf(ref, release);
    if (files.has(file)) continue;
    const text = readFileSync(join(dir, file), 'utf8');
    files.set(file, text);
    const refs = [];
    collectRefs(JSON.parse(text), refs);
    for (const r of refs) {
      // Relative refs resolve against the file's own $id path.
      const abs =
        r.startsWith('/') || /^https?:/.test(r)
          ? r
          : `/schemas/${release}/${join(dirname(file), r)}`;
      queue.push(abs);
    }
  }
  return { tasks, files };
}

let manifest = {};

/** The vendored files: each release's schemas, and tasks.json naming each task's pair. */
function wantedFiles(source) {
  const wanted = new Map();
  manifest = {};
  for (const release of RELEASES) {
    const { tasks, files } = vendorRelease(source, release);
    manifest[release] = tasks;
    for (const [file, text] of files) wanted.set(join(release, file), text);
  }
  wanted.set('tasks.json', `${JSON.stringify(manifest, null, 2)}\n`);
  return wanted;
}

vendorCli({
  name: 'vendor-schemas',
  usage:
    'usage: node scripts/vendor-schemas.mjs [--source DIR] [--check]\n' +
    '  Vendors the published request/response schemas of our tasks (and what they $ref)\n' +
    '  into agents/protocol/schemas/. --check exits 1 when the vendored copy is stale.\n',
  defaultSource: resolve(ROOT, '..', 'shared', 'spec', 'schemas'),
  out: OUT,
  root: ROOT,
  wanted: wantedFiles,
  clean: () => removeTree(OUT),
  summary: () => RELEASES.map((r) => `${r}: ${Object.keys(manifest[r]).length} tasks`).join(', '),
});
