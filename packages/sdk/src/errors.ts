import { type ErrorCode, RETRYABLE_ERROR_CODES } from './generated/errors.ts';

/** The server's codes, plus `HTTP_ERROR` for an answer that is not kas's error body (a proxy's, say). */
export type ApiErrorCode = ErrorCode | 'HTTP_ERROR';

/**
 * The one error the SDK throws for a non-2xx answer, over REST and over tRPC alike.
 * `error_code` and `detail` are the server's `{ error_code, detail }` body.
 */
export class ApiError extends Error {
  /** HTTP status code (0 when the server could not be reached). */
  readonly status: number;
  /** Machine-readable code, e.g. `NOT_FOUND`, `VALIDATION_ERROR`, `RATE_LIMITED`. */
  readonly error_code: ApiErrorCode;
  /** Human-readable explanation from the server. */
  readonly detail: string;

  constructor(status: number, error_code: ApiErrorCode, detail: string, options?: { cause?: unknown }) {
    super(`${status} ${error_code}: ${detail}`, options);
    this.name = 'ApiError';
    this.status = status;
    this.error_code = error_code;
    this.detail = detail;
  }

  /** Whether the same request may succeed later (rate limits, unavailable upstreams), per the server's table. */
  get is_retryable(): boolean {
    return (RETRYABLE_ERROR_CODES as readonly string[]).includes(this.error_code);
  }

  /** Builds an ApiError from a fetch Response whose body may or may not be our error shape. */
  static async fromResponse(response: Response): Promise<ApiError> {
    const text = await response.text().catch(() => '');
    return ApiError.fromBody(response.status, text);
  }

  /** Builds an ApiError from a status and a raw or parsed body. */
  static fromBody(status: number, body: unknown): ApiError {
    let parsed = body;
    if (typeof body === 'string') {
      try {
        parsed = JSON.parse(body);
      } catch {
        parsed = undefined;
      }
    }
    const shape = parsed as { error_code?: unknown; detail?: unknown } | undefined;
    if (shape && typeof shape.error_code === 'string' && typeof shape.detail === 'string') {
      return new ApiError(status, shape.error_code as ErrorCode, shape.detail);
    }
    return new ApiError(
      status,
      'HTTP_ERROR',
      typeof body === 'string' && body ? body.slice(0, 500) : `HTTP ${status}`,
    );
  }
}
