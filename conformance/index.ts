/**
 * The conformance kit as a library, the package entry point `svc-webhooks/conformance`.
 * Both kits are functions that return the report object the CLI prints:
 * - `gradeReceiver`: act as a sender and grade someone's webhook receiver (grade-receiver/);
 * - `gradeSender`: host a grading receiver and grade the sender that delivers to it
 *   (grade-sender/), driven by hand (`ManualDriver`) or over MCP (`McpAgentDriver`).
 * `renderTable`, `renderJson` and `renderJunit` print a report the way `svc conformance` does.
 */
export { gradeReceiver, type ReceiverGradeOptions } from './grade-receiver/grade-receiver.js';
export {
  generateTesterKeys,
  readKeyFile,
  saveKeyFile,
  testerJwks,
  TesterKeyError,
  type GeneratedKeys,
} from './grade-receiver/tester-keys.js';
export {
  DEFAULT_VECTORS_DIR,
  loadSigningVectors,
  loadVectorKeys,
  VectorLoadError,
  type SigningVector,
} from './grade-receiver/vectors.js';
export { gradeSender, type SenderGradeOptions } from './grade-sender/grade-sender.js';
export {
  ManualDriver,
  McpAgentDriver,
  type ManualIo,
  type SenderDriver,
  type StepRequest,
  type TriggerOutcome,
} from './grade-sender/driver.js';
export { SenderKeyError, type SenderKeyOptions } from './grade-sender/sender-keys.js';
export {
  exitCodeOf,
  type CheckResult,
  type CheckStatus,
  type ConformanceReport,
  type Exchange,
  type MessageRecord,
  type ReportSummary,
} from './report/report.js';
export { renderJson, renderJunit, renderTable } from './report/render.js';
export { brandProfile, type Brand, type BrandProfile } from '../shared/brand.js';
export type { SigningKey } from '../shared/signing/keys.js';

/** The error base every error here extends, and the codes to switch on (README "Errors"). */
export { SvcError, type SvcErrorOptions } from '../shared/errors/base.js';
export { SVC_ERROR_CODES, type SvcErrorCode } from '../shared/errors/codes.js';
