/* eslint-disable @typescript-eslint/no-explicit-any -- wire bodies are read loosely */
/**
 * Issue 21 item 6 over real HTTP and PostgreSQL: a string holding U+0000 is refused as
 * VALIDATION_ERROR naming where (MCP, A2A message/send, A2A tasks/get without credentials),
 * and a fault of ours (here: a table gone) reaches the caller as INTERNAL_ERROR with a
 * fixed message and a correlation id, the database's text only in the log under that id.
 */
import { Writable } from 'node:stream';
import t from 'tap';
import { INTERNAL_ERROR_MESSAGE } from '../../../agents/runtime/errors.js';
import { createLogger } from '../../../shared/infra/logger.js';
import { a2aSend, mcpCall, postJson, startAgents } from './support.js';

const JSON_ONLY = { accept: 'application/json, text/event-stream' };
const PG_TEXT = /invalid byte sequence|relation .* does not exist|syntax|postgres|SQL/i;

function capture() {
  const lines: Array<Record<string, any>> = [];
  const destination = new Writable({
    write(chunk, _e, cb) {
      for (const l of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(l));
      cb();
    },
  });
  return { lines, logger: createLogger({ level: 'error', destination }) };
}

t.test('U+0000 in any string is VALIDATION_ERROR, anonymously too', async (t) => {
  const { urls, h } = await startAgents(t);
  const key = { 'x-api-key': h.keys['sales:demo-buyer']! };
  const mcp = await postJson(
    `${urls.sales}/mcp`,
    mcpCall('get_products', { brief: 'sports\u0000fans' }),
    { ...JSON_ONLY, ...key },
  );
  t.equal(mcp.status, 400);
  t.match(mcp.body.error, {
    code: -32602,
    data: { code: 'VALIDATION_ERROR', field: 'params.arguments.brief' },
  });
  const a2a = await postJson(
    `${urls.sales}/a2a`,
    a2aSend('get_products', { brief: 'x\u0000' }),
    key,
  );
  t.equal(a2a.status, 400);
  t.match(a2a.body.error.data, { code: 'VALIDATION_ERROR' });
  for (const [method, params] of [
    ['tasks/get', { id: 'task_\u0000x' }],
    ['GetTask', { id: 'task_\u0000x' }],
    ['tasks/cancel', { id: '\u0000' }],
  ] as const) {
    const r = await postJson(`${urls.sales}/a2a`, { jsonrpc: '2.0', id: 1, method, params });
    t.equal(r.status, 400, `${method} anonymously`);
    t.match(r.body.error, { data: { code: 'VALIDATION_ERROR', field: 'params.id' } });
    t.notMatch(JSON.stringify(r.body), PG_TEXT);
  }
  const keyNul = await postJson(
    `${urls.sales}/mcp`,
    {
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'get_products', arguments: { ['a\u0000']: 1 } },
    },
    { ...JSON_ONLY, ...key },
  );
  t.match(keyNul.body.error.data, { code: 'VALIDATION_ERROR' }, 'a member name too');
});

t.test(
  'a fault of ours is INTERNAL_ERROR with a correlation id, details only logged',
  async (t) => {
    const log = capture();
    const { urls, h } = await startAgents(t, { logger: log.logger });
    const key = { 'x-api-key': h.keys['sales:demo-buyer']! };
    const sent = await postJson(
      `${urls.sales}/a2a`,
      a2aSend('get_products', { brief: 'video' }),
      key,
    );
    const taskId = sent.body.result.id as string;
    // Break the database under the agent: its tasks table and its catalog are gone.
    await h.pool.query(`DROP TABLE ${h.schema}.tasks CASCADE`);
    await h.pool.query(`DROP TABLE ${h.schema}.products CASCADE`);

    const mcp = await postJson(`${urls.sales}/mcp`, mcpCall('get_products', { brief: 'video' }), {
      ...JSON_ONLY,
      ...key,
    });
    const text = JSON.stringify(mcp.body);
    t.notMatch(text, PG_TEXT, 'no database text over MCP');
    const err =
      mcp.body.result?.structuredContent?.errors?.[0] ??
      mcp.body.result?.structuredContent?.adcp_error;
    t.match(err, { code: 'INTERNAL_ERROR', message: INTERNAL_ERROR_MESSAGE });
    const id = err.details.correlation_id as string;
    t.match(id, /^[0-9a-f-]{36}$/);
    const logged = log.lines.find((l) => l.correlation_id === id);
    t.ok(logged, 'the log has the same correlation id');
    t.match(JSON.stringify(logged), PG_TEXT, 'and the details');

    const a2a = await postJson(
      `${urls.sales}/a2a`,
      a2aSend('get_products', { brief: 'video' }),
      key,
    );
    t.notMatch(JSON.stringify(a2a.body), PG_TEXT, 'no database text over A2A');
    t.match(JSON.stringify(a2a.body), /INTERNAL_ERROR/);

    const got = await postJson(`${urls.sales}/a2a`, {
      jsonrpc: '2.0',
      id: 2,
      method: 'tasks/get',
      params: { id: taskId },
    });
    const gotText = JSON.stringify(got.body);
    t.notMatch(gotText, PG_TEXT, 'no database text from tasks/get, anonymously');
    t.match(gotText, /INTERNAL_ERROR/);
    const gotId = /correlation_id ([0-9a-f-]{36})/.exec(gotText)?.[1];
    t.ok(
      gotId && log.lines.some((l) => l.correlation_id === gotId),
      'tasks/get fault logged under its id',
    );
  },
);
