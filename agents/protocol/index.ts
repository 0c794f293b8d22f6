/**
 * The protocol as published: its JSON Schemas (vendored per release), request and response
 * validation against them, and validation failures in the protocol's `issues[]` form.
 * The one entry point of `agents/protocol/`.
 */
export {
  RELEASES,
  hasPublishedTask,
  publishedDefinitionValidator,
  publishedSchema,
  resolveRef,
  type Release,
} from './published-schemas.js';
export { issuesFromAjv, type ValidationIssue } from './issues.js';
export {
  RESPONSE_VALIDATION_MODES,
  ResponseSchemaDrift,
  asPublishedBrand,
  checkResponse,
  publishedTaskName,
  releasesOf,
  responseDrift,
  validateRequest,
  validateResponse,
  type DriftItem,
  type ResponseValidationMode,
} from './response-check.js';
