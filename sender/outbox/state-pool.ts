/**
 * The pool the worker's claims and settles run on: sessions that commit without waiting
 * for the WAL flush and keep generic plans (an at-least-once repeat is all a lost state
 * write costs; service spec "Delivery", at-least-once).
 */
import pg from 'pg';
import { keepClientErrorsQuiet, type Pool } from '../../shared/infra/pg.js';

/** Claims and settles run at most this many statements at once (two batchers of 2). */
export const STATE_STATEMENTS_IN_FLIGHT = 4;

/**
 * A pool whose sessions commit without waiting for the WAL flush (see `statePool`). It
 * keeps the connections claims and settles use open when idle: a burst after a quiet
 * spell should not wait on connection set-up.
 */
export function createStatePool(connectionString: string, max = 8): Pool {
  const pool = new pg.Pool({
    connectionString,
    max,
    min: Math.min(max, STATE_STATEMENTS_IN_FLIGHT),
    application_name: 'svc-sender-state',
    // Generic plans (see `Outbox.statements`): each statement is planned once per session,
    // over every partition, and pruned to its ids' days when it starts. No sequential
    // scans: every statement here names its rows by id, so an index scan is right whatever
    // a fresh partition's statistics say (a generic plan made on a nearly empty day would
    // otherwise keep scanning it as it grows). No nested loops: a generic plan guesses 10
    // ids, and a nested loop over a batch's ids re-ran the partition pruning for every row
    // (a fifth of the backend's CPU) where a hash join prunes once. No JIT: the disabled
    // nested loop (the one-row join of the durable commit's setting) prices these
    // statements far above the JIT threshold, and compiling took a second each.
    options: [
      '-c synchronous_commit=off',
      '-c plan_cache_mode=force_generic_plan',
      '-c enable_seqscan=off',
      '-c enable_nestloop=off',
      '-c jit=off',
    ].join(' '),
  });
  keepClientErrorsQuiet(pool);
  preparedPools.add(pool);
  return pool;
}

/** Pools made by `createStatePool`: the ones the claims and settles run prepared on. */
export const preparedPools = new WeakSet<Pool>();
