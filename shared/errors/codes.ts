/**
 * The error codes callers can switch on, in one place: each `SvcError` class's static
 * `code` (./base.ts), with what it means and, where the instance carries a finer code, what
 * that finer code is. The README's "Errors" section documents the same list; a test keeps
 * the classes, this table and the README in step.
 */
export const SVC_ERROR_CODES = {
  ERR_SVC: 'SvcError: the base of every class below; not thrown itself',
  // Protocol errors (instance code: the spec's code, which is the public wire contract).
  ERR_TASK: 'TaskError: a task failed; code is the spec task error code (INVALID_REQUEST, ...)',
  ERR_TASK_ERRORS: 'TaskErrors: several task errors; code is the first one',
  ERR_REGISTRATION: 'RegistrationError: bad push-notification registration; code INVALID_REQUEST',
  ERR_WEBHOOK_VERIFICATION:
    'WebhookVerificationError: a webhook failed verification; code is webhook_signature_* (401)',
  ERR_KEY_DISCOVERY:
    "KeyDiscoveryError: the sender's keys could not be found; code is request_signature_*",
  ERR_DUPLICATE_KEY_INPUT:
    'DuplicateKeyInputError: JSON input repeats a key; code duplicate_key_input',
  ERR_DUPLICATE_KEY_IN: 'DuplicateKeyInError: as above, naming the field; code duplicate_key_input',
  ERR_NOTIFICATION_INPUT:
    'NotificationInputError: a field is not a JSON object; code invalid_json_input',
  ERR_ENVELOPE: 'EnvelopeError: invalid webhook envelope; code is the envelope error id (422)',
  // Input and documents (instance code: the reason, where listed).
  ERR_JSON_PARSE: 'JsonParseError: code syntax | duplicate_key | too_deep | invalid_utf8',
  ERR_CANONICAL_JSON: 'CanonicalJsonError: a value JCS cannot canonicalise',
  ERR_TARGET_URI: 'TargetUriError: malformed target URI; code is the TargetUriRejectReason',
  ERR_SAFE_FETCH:
    'SafeFetchError: an outbound fetch was refused or failed; code is the SafeFetchReason',
  ERR_DOCUMENT_FETCH:
    'DocumentFetchError: a key document fetch failed; code scheme | network | status | malformed ...',
  ERR_BRAND_DISCOVERY:
    'BrandDiscoveryError: brand.json discovery failed; code is the DiscoveryFailure',
  ERR_CAPABILITIES: 'CapabilitiesError: a capabilities document is unusable',
  ERR_REVOCATION_LIST:
    'RevocationListError: a revocation list is rejected; code malformed | typ | key | ...',
  ERR_TRUST_FILE: 'TrustFileError: the trust file is invalid',
  ERR_CONFIG: 'ConfigError: an environment variable has an invalid value',
  ERR_TRACING_CONFIG:
    'TracingConfigError: an OTEL_EXPORTER_OTLP_* variable is not a usable URL (exit at start)',
  ERR_USAGE: 'UsageError: a command-line mistake (exit code 2)',
  ERR_PORT_IN_USE: 'PortInUseError: a listen address is taken (exit code 1)',
  ERR_PUBLIC_ORIGIN: 'PublicOriginError: a public origin option is not scheme://host[:port]',
  // Signing and keys.
  ERR_SIGN: 'SignError: a webhook could not be signed',
  ERR_STRUCTURED_FIELD: 'StructuredFieldError: a malformed structured header field',
  ERR_KEY_IMPORT: 'KeyImportError: a JWK could not be imported',
  ERR_KEY_SET: 'KeySetError: a key set (JWKS or key directory) is invalid',
  ERR_BINARY_ENCODING: 'BinaryEncodingError: malformed base64 / base64url',
  // Sender.
  TARGET_REFUSED: 'TargetRefusedError: the delivery target is not allowed',
  ERR_OUTBOX: 'OutboxError: the outbox refused an operation',
  ERR_CHANNELS_NOT_CONFIGURED: 'ChannelsNotConfiguredError: NotificationCore has no channels',
  ERR_CONSOLE_ACTION: 'ConsoleActionError: a console action was refused; code is the answer code',
  // Receiver.
  ERR_FORWARD: 'ForwardError: forwarding to the application failed',
  PUBLISH_TARGET_INVALID: 'PublishTargetError: the --publish target is invalid',
  ERR_BODY_TOO_LARGE: 'BodyTooLargeError: the request body exceeds the limit',
  ERR_BODY_READ: 'BodyReadError: the request body could not be read',
  ERR_BODY_DEADLINE: 'BodyDeadlineError: the request body did not arrive by its deadline',
  ERR_BODY_BUDGET: 'BodyBudgetError: bodies in flight would exceed the budget',
  ERR_RECEIVER_CONSOLE_ACTION:
    'ConsoleActionFailure: a sidecar console action was refused; code is the answer code',
  ERR_RECEIVER_CONSOLE_INPUT:
    'ConsoleInputFailure: a sidecar console parameter is invalid; code INVALID_REQUEST',
  // Consoles and infrastructure.
  ERR_CONSOLE_INPUT: 'ConsoleInputError: a console parameter is invalid; code INVALID_REQUEST',
  ERR_OIDC_SIGN_IN: 'OidcSignInError: console sign-in failed; code is the answer code',
  ERR_SERVICE_UNAVAILABLE: 'ServiceUnavailableError: a backing service does not answer',
  ERR_REDIS_CLUSTER_ANSWER: 'ClusterAnswerError: REDIS_URL points at a Redis Cluster node',
  // Agents and the conformance kit.
  ERR_RESPONSE_SCHEMA_DRIFT: "ResponseSchemaDrift: an agent's response does not match the schema",
  ERR_TESTER_KEY: "TesterKeyError: the tester's signing key is unusable",
  ERR_SENDER_KEY: "SenderKeyError: the graded sender's keys are unusable",
  ERR_VECTOR_LOAD: 'VectorLoadError: the conformance vectors could not be loaded',
} as const;

export type SvcErrorCode = keyof typeof SVC_ERROR_CODES;
