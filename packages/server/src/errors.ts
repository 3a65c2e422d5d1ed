import { ZodError } from 'zod';
import { formatZodError } from './validation.ts';

/** One table: every error code the API emits and its HTTP status. */
export const ERROR_STATUS = {
  VALIDATION_ERROR: 422,
  BAD_REQUEST: 400,
  INVALID_INPUT: 400,
  SECRET_REENTRY_REQUIRED: 400,
  UNAUTHENTICATED: 401,
  INSUFFICIENT_PERMISSIONS: 403,
  NOT_FOUND: 404,
  API_KEY_NOT_FOUND: 404,
  PERSONA_NOT_FOUND: 404,
  DOCUMENT_NOT_FOUND: 404,
  DOCUMENT_SET_NOT_FOUND: 404,
  SESSION_NOT_FOUND: 404,
  MESSAGE_NOT_FOUND: 404,
  USER_GROUP_NOT_FOUND: 404,
  TOKEN_NOT_FOUND: 404,
  USER_NOT_FOUND: 404,
  CC_PAIR_NOT_FOUND: 404,
  CONNECTOR_NOT_FOUND: 404,
  CREDENTIAL_NOT_FOUND: 404,
  PROJECT_NOT_FOUND: 404,
  FILE_NOT_FOUND: 404,
  LABEL_NOT_FOUND: 404,
  TOOL_NOT_FOUND: 404,
  OAUTH_CONFIG_NOT_FOUND: 404,
  MCP_SERVER_NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  REQUEST_TIMEOUT: 408,
  DUPLICATE_RESOURCE: 409,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  HEADERS_TOO_LARGE: 431,
  RATE_LIMITED: 429,
  INTERNAL_ERROR: 500,
  LLM_PROVIDER_ERROR: 502,
  SERVICE_UNAVAILABLE: 503,
} as const satisfies Record<string, number>;

export type ErrorCode = keyof typeof ERROR_STATUS;

/** Every error code, for the OpenAPI enum and the SDK's union. */
export const ERROR_CODES = Object.keys(ERROR_STATUS) as ErrorCode[];

export const INTERNAL_ERROR_DETAIL = 'An internal error occurred. It has been logged.';

/** Whether trying the same request again later may succeed: the one retryability rule. */
export function isRetryableStatus(status: number): boolean {
  return status === ERROR_STATUS.RATE_LIMITED || status >= ERROR_STATUS.INTERNAL_ERROR;
}

/** Error codes whose answers are worth retrying, derived from the one table. */
export const RETRYABLE_ERROR_CODES = ERROR_CODES.filter((code) => isRetryableStatus(ERROR_STATUS[code]));

/**
 * The one error type domain code throws: a plain Error, translated by each transport through
 * `toErrorResponse`. `detail` is written for API consumers; internals go in `cause` and the log.
 */
/**
 * kas cannot start, for a reason its message says in full for the operator (a database that does not
 * answer, a port in use, a data directory that is a file): printed as is, without a stack.
 */
export class StartupError extends Error {}

export class AppError extends Error {
  readonly error_code: ErrorCode;
  readonly detail: string;
  readonly status: number;
  readonly headers: Record<string, string>;
  /** Overrides the status's retryability, e.g. a model provider's 400 is not worth retrying. */
  readonly retryable: boolean | undefined;

  constructor(
    errorCode: ErrorCode,
    detail: string,
    options: { cause?: unknown; headers?: Record<string, string>; retryable?: boolean } = {},
  ) {
    super(detail, { cause: options.cause });
    this.name = 'AppError';
    this.error_code = errorCode;
    this.detail = detail;
    this.status = ERROR_STATUS[errorCode];
    this.headers = options.headers ?? {};
    this.retryable = options.retryable;
  }
}

/** What every transport (REST, /api/trpc, the chat stream's error line) sends for a failure. */
export interface ErrorResponse {
  status: number;
  error_code: ErrorCode;
  detail: string;
  headers: Record<string, string>;
  is_retryable: boolean;
}

function responseOf(error: AppError): ErrorResponse {
  return {
    status: error.status,
    error_code: error.error_code,
    detail: error.detail,
    headers: error.headers,
    is_retryable: error.retryable ?? isRetryableStatus(error.status),
  };
}

/**
 * Failures raised by the transports themselves, recognised by shape so this module imports no
 * framework: tRPC's `TRPCError` (`code`, with the ZodError of a rejected input as `cause`) and the
 * body parser's errors (`type`, `status`).
 */
function fromTransport(error: object): AppError | undefined {
  const { code, cause, type, status } = error as {
    code?: unknown;
    cause?: unknown;
    type?: unknown;
    status?: unknown;
  };
  // Input validation is BAD_REQUEST with a ZodError cause; an output that fails its schema is
  // INTERNAL_SERVER_ERROR with one and must stay a 500.
  if (code === 'BAD_REQUEST' && cause instanceof ZodError)
    return new AppError('VALIDATION_ERROR', formatZodError(cause));
  if (code === 'PARSE_ERROR' || code === 'BAD_REQUEST')
    return new AppError('VALIDATION_ERROR', 'Malformed request');
  if (code === 'NOT_FOUND') return new AppError('NOT_FOUND', 'No such procedure');
  if (code === 'METHOD_NOT_SUPPORTED')
    return new AppError('METHOD_NOT_ALLOWED', 'Method not supported for this procedure');
  if (type === 'entity.parse.failed')
    return new AppError('VALIDATION_ERROR', 'Malformed JSON in request body');
  if (type === 'entity.too.large') return new AppError('PAYLOAD_TOO_LARGE', 'Request body too large');
  if (typeof type === 'string' && typeof status === 'number' && status < ERROR_STATUS.INTERNAL_ERROR)
    return new AppError('VALIDATION_ERROR', 'Unreadable request body');
  return undefined;
}

/**
 * Values the database refuses to store — a NUL character, a number beyond its column, a value too
 * large for an index — are the caller's input, not our failure (recognised by their SQLSTATE, the
 * same from Postgres and PGlite).
 */
function fromDatabase(error: object): AppError | undefined {
  const code = (error as { code?: unknown }).code;
  if (typeof code !== 'string' || !/^[0-9A-Z]{5}$/.test(code)) return undefined;
  if (code === '22003')
    return new AppError('VALIDATION_ERROR', 'A number in the request is out of range (at most 2147483647)');
  if (code === '22021' || code === '22P05')
    return new AppError('VALIDATION_ERROR', 'The request contains a character that cannot be stored (NUL)');
  if (code === '54000')
    return new AppError(
      'VALIDATION_ERROR',
      'A value in the request is too large to be indexed (ids, tags and metadata values must stay under 2 KB)',
    );
  if (code.startsWith('22'))
    return new AppError('VALIDATION_ERROR', 'A value in the request cannot be stored');
  return undefined;
}

/** The one mapping from anything thrown to status, body, headers and retryability. */
export function toErrorResponse(error: unknown): ErrorResponse {
  for (
    let current = error, depth = 0;
    current instanceof Error && depth < 5;
    current = current.cause, depth++
  ) {
    if (current instanceof AppError) return responseOf(current);
    const refused = fromDatabase(current);
    if (refused) return responseOf(refused);
  }
  // A path whose percent-encoding does not decode (`%ff%fe`).
  if (error instanceof URIError)
    return responseOf(new AppError('VALIDATION_ERROR', 'Malformed percent-encoding in the URL'));
  if (typeof error === 'object' && error !== null) {
    const translated = fromTransport(error);
    if (translated) return responseOf(translated);
  }
  return responseOf(new AppError('INTERNAL_ERROR', INTERNAL_ERROR_DETAIL));
}
