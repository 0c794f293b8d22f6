/**
 * The receiver's delivery store, its one entry point: the interface and contract
 * (delivery-store.ts), the PostgreSQL implementation (pg/) with its schema, the in-process
 * one (memory/), and the standalone `IdempotencyStore` and `TaskConvergence` views of the
 * PostgreSQL tables for apps that claim keys or converge polls outside the pipeline.
 */
export * from './delivery-store.js';
export { orderableTimestamp, terminalRecord, TERMINAL_STATUSES } from './observation.js';
export { PgDeliveryStore, type PgDeliveryStoreOptions } from './pg/pg-delivery-store.js';
export {
  MemoryDeliveryStore,
  type MemoryDeliveryStoreOptions,
} from './memory/memory-delivery-store.js';
export { IdempotencyStore, type IdempotencyStoreOptions } from './pg/idempotency.js';
export {
  TaskConvergence,
  type Observation,
  type ObservationResult,
  type TaskConvergenceOptions,
} from './pg/convergence.js';
export { RECEIVER_MIGRATIONS } from './pg/schema.js';
