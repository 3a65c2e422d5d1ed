import { TRPCError } from '@trpc/server';
import type { TRPC_ERROR_CODE_KEY } from '@trpc/server/rpc';

/** One table: every error code the API emits and its HTTP status. */
export const ERROR_STATUS = {
  VALIDATION_ERROR: 422,
  BAD_REQUEST: 400,
  INVALID_INPUT: 400,
  UNAUTHENTICATED: 401,
  INSUFFICIENT_PERMISSIONS: 403,
  NOT_FOUND: 404,
  API_KEY_NOT_FOUND: 404,
  PERSONA_NOT_FOUND: 404,
  DOCUMENT_NOT_FOUND: 404,
  DOCUMENT_SET_NOT_FOUND: 404,
  SESSION_NOT_FOUND: 404,
  MESSAGE_NOT_FOUND: 404,
  USER_NOT_FOUND: 404,
  USER_GROUP_NOT_FOUND: 404,
  TOKEN_NOT_FOUND: 404,
  CONNECTOR_NOT_FOUND: 404,
  CC_PAIR_NOT_FOUND: 404,
  CREDENTIAL_NOT_FOUND: 404,
  TOOL_NOT_FOUND: 404,
  PROJECT_NOT_FOUND: 404,
  FILE_NOT_FOUND: 404,
  LABEL_NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  CONFLICT: 409,
  DUPLICATE_RESOURCE: 409,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  RATE_LIMITED: 429,
  INTERNAL_ERROR: 500,
  NOT_IMPLEMENTED: 501,
  LLM_PROVIDER_ERROR: 502,
  BAD_GATEWAY: 502,
  SERVICE_UNAVAILABLE: 503,
  GATEWAY_TIMEOUT: 504,
} as const satisfies Record<string, number>;

export type ErrorCode = keyof typeof ERROR_STATUS;

export const INTERNAL_ERROR_DETAIL = 'An internal error occurred. It has been logged.';

const TRPC_CODE_BY_STATUS: Record<number, TRPC_ERROR_CODE_KEY> = {
  400: 'BAD_REQUEST',
  401: 'UNAUTHORIZED',
  403: 'FORBIDDEN',
  404: 'NOT_FOUND',
  405: 'METHOD_NOT_SUPPORTED',
  409: 'CONFLICT',
  413: 'PAYLOAD_TOO_LARGE',
  415: 'UNSUPPORTED_MEDIA_TYPE',
  422: 'UNPROCESSABLE_CONTENT',
  429: 'TOO_MANY_REQUESTS',
  500: 'INTERNAL_SERVER_ERROR',
  501: 'NOT_IMPLEMENTED',
  502: 'BAD_GATEWAY',
  503: 'SERVICE_UNAVAILABLE',
  504: 'GATEWAY_TIMEOUT',
};

/**
 * The one error type domain code throws. It is a TRPCError so the native /api/trpc endpoint
 * answers with the right status too; `detail` is written for API consumers, internals go in `cause`.
 */
export class AppError extends TRPCError {
  readonly error_code: ErrorCode;
  readonly detail: string;
  readonly status: number;
  readonly headers: Record<string, string>;

  constructor(
    errorCode: ErrorCode,
    detail: string,
    options: { cause?: unknown; headers?: Record<string, string> } = {},
  ) {
    const status = ERROR_STATUS[errorCode];
    super({
      code: TRPC_CODE_BY_STATUS[status] ?? 'INTERNAL_SERVER_ERROR',
      message: detail,
      cause: options.cause,
    });
    this.name = 'AppError';
    this.error_code = errorCode;
    this.detail = detail;
    this.status = status;
    this.headers = options.headers ?? {};
  }
}

export function isAppError(error: unknown): error is AppError {
  return error instanceof AppError;
}
