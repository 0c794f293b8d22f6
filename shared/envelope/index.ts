/** Webhook payload shapes: schemas, builders, detection and parsing. */
export * from './task-status.js';
export * from './errors.js';
export * from './mcp.js';
export * from './a2a.js';
export * from './parse.js';
export * from './delivery-report.js';
export * from './impairment.js';
export * from './channel-config.js';
export * from './activity-record.js';
export * from './agent-events.js';
export * from './notification-types.js';
