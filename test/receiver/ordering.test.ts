import t from 'tap';
import { migrate } from '../../shared/infra/pg.js';
import { TaskConvergence, orderableTimestamp, terminalRecord } from '../../receiver/store/index.js';
import { RECEIVER_MIGRATIONS } from '../../receiver/store/index.js';
import { testDatabase } from '../helpers/db.js';

const { pool, schema } = testDatabase(t, 'rord');
const conv = new TaskConvergence({ pool, schema });

t.before(async () => {
  await migrate(pool, schema, RECEIVER_MIGRATIONS);
});

const obs = (o: Partial<Parameters<TaskConvergence['observe']>[0]>) =>
  conv.observe({
    sender: 's',
    taskId: 't1',
    key: 'k',
    at: null,
    status: 'working',
    taskType: 'create_media_buy',
    value: null,
    source: 'webhook',
    notificationId: null,
    ...o,
  });

t.test(
  'timestamps: newer is current, older or equal is stale, own retry stays current',
  async (t) => {
    t.equal((await obs({ key: 'k2', at: '2026-01-01T00:00:02Z' })).decision, 'current');
    t.equal((await obs({ key: 'k1', at: '2026-01-01T00:00:01Z' })).decision, 'stale');
    t.equal(
      (await obs({ key: 'k3', at: '2026-01-01T00:00:02Z' })).decision,
      'stale',
      'equal is stale',
    );
    t.equal(
      (await obs({ key: 'k2', at: '2026-01-01T00:00:02Z' })).decision,
      'current',
      'own retry',
    );
    t.equal(
      (await obs({ key: 'k4', at: '2026-01-01T00:00:02.000001Z' })).decision,
      'current',
      'microseconds order',
    );
    t.equal(
      (await obs({ taskId: 't-other', key: 'k9', at: '2020-01-01T00:00:00Z' })).decision,
      'current',
    );
  },
);

t.test('terminal convergence across webhook and poll', async (t) => {
  const won = await obs({ taskId: 't2', key: 'w1', status: 'completed', value: { a: 1, b: 2 } });
  t.equal(won.decision, 'terminal_won');
  t.equal(
    (await obs({ taskId: 't2', key: 'w2', status: 'completed', value: { b: 2, a: 1 } })).decision,
    'terminal_duplicate',
    'same record under another key (member order irrelevant)',
  );
  t.equal(
    (await obs({ taskId: 't2', key: 'w1', status: 'completed', value: { a: 1, b: 2 } })).decision,
    'terminal_won',
    'the winning delivery retried',
  );
  t.equal(
    (await obs({ taskId: 't2', key: 'w3', status: 'failed', value: null })).decision,
    'terminal_conflict',
  );
  t.equal(
    (await obs({ taskId: 't2', key: 'w4', status: 'working', at: '2099-01-01T00:00:00Z' }))
      .decision,
    'stale',
    'non-terminal after terminal never reopens',
  );
  t.equal(
    await conv.observeTerminal({
      sender: 's',
      taskId: 't2',
      taskType: 'create_media_buy',
      status: 'completed',
      value: { a: 1, b: 2 },
      source: 'poll',
    }),
    'duplicate',
  );
  t.equal(
    await conv.observeTerminal({
      sender: 's',
      taskId: 't2',
      taskType: 'create_media_buy',
      status: 'completed',
      value: { a: 2 },
      source: 'poll',
    }),
    'conflict',
  );
  const term = await conv.terminalOf('s', 't2');
  t.equal(term?.source, 'webhook');
  t.equal(
    term?.record,
    terminalRecord({ taskType: 'create_media_buy', status: 'completed', value: { a: 1, b: 2 } })
      .record,
  );
});

t.test('poll observes the terminal first, the webhook then converges', async (t) => {
  t.equal(
    await conv.observeTerminal({
      sender: 's',
      taskId: 't3',
      taskType: 'create_media_buy',
      status: 'completed',
      value: { id: 'mb' },
      source: 'poll',
    }),
    'won',
  );
  t.equal(
    (await obs({ taskId: 't3', key: 'x1', status: 'completed', value: { id: 'mb' } })).decision,
    'terminal_duplicate',
  );
  t.equal(
    (
      await obs({
        taskId: 't3',
        key: 'x2',
        status: 'completed',
        taskType: 'update_media_buy',
        value: { id: 'mb' },
      })
    ).decision,
    'terminal_conflict',
    'task_type is part of the comparison record',
  );
  await t.rejects(
    conv.observeTerminal({
      sender: 's',
      taskId: 't3',
      taskType: null,
      status: 'working',
      value: null,
      source: 'poll',
    }),
    TypeError,
  );
});

t.test('notification_id re-emission is flagged, a retry is not', async (t) => {
  t.equal((await obs({ taskId: null, key: 'n1', notificationId: 'imp.1' })).reEmission, false);
  t.equal((await obs({ taskId: null, key: 'n1', notificationId: 'imp.1' })).reEmission, false);
  t.equal((await obs({ taskId: null, key: 'n2', notificationId: 'imp.1' })).reEmission, true);
  const { rows } = await pool.query(
    `SELECT emissions FROM ${schema}.notification_ids WHERE notification_id = 'imp.1'`,
  );
  t.equal(rows[0].emissions, 2);
});

t.test('timestamps PostgreSQL cannot order exactly are treated as unordered', async (t) => {
  t.equal(orderableTimestamp('2026-01-01T00:00:00Z'), '2026-01-01T00:00:00Z');
  t.equal(orderableTimestamp('yesterday'), null);
  t.equal(orderableTimestamp('2026-13-45T00:00:00Z'), null);
  t.equal(orderableTimestamp(null), null);
});

t.test('purge removes expired task state', async (t) => {
  await pool.query(
    `UPDATE ${schema}.task_state SET expires_at = now() - interval '1 s' WHERE task_id = 't-other'`,
  );
  t.ok((await conv.purgeExpired()) >= 1);
  t.equal(
    (await obs({ taskId: 't-other', key: 'k10', at: '2019-01-01T00:00:00Z' })).decision,
    'current',
  );
});

t.test('the same terminal result through the MCP and the A2A channel converges', async (t) => {
  const value = { media_buy_id: 'mb_1', status: 'active' };
  t.equal(
    (await obs({ taskId: 'tx', key: 'mcp-1', status: 'completed', value })).decision,
    'terminal_won',
  );
  t.equal(
    (
      await obs({
        taskId: 'tx',
        key: 'payload:a2a',
        status: 'completed',
        taskType: null,
        value,
        source: 'a2a',
      })
    ).decision,
    'terminal_duplicate',
    'A2A names no task type: same status and value is the same result',
  );
  t.equal(
    (
      await obs({
        taskId: 'tx',
        key: 'mcp-2',
        status: 'completed',
        taskType: 'update_media_buy',
        value,
      })
    ).decision,
    'terminal_conflict',
    'a different task type where both name one is a conflict',
  );
  t.equal(
    (
      await obs({
        taskId: 'tx',
        key: 'a2a-2',
        status: 'completed',
        taskType: null,
        value: { x: 1 },
        source: 'a2a',
      })
    ).decision,
    'terminal_conflict',
    'a different value is a conflict on any channel',
  );
});
