import { createTRPCClient, httpBatchStreamLink, TRPCClientError } from '@trpc/client';
import superjson from 'superjson';
import { ApiError } from './errors.ts';
import type { ErrorCode } from './generated/errors.ts';
import type { ClientRouter } from './generated/router.ts';

/** The typed tRPC client over `/api/trpc` (queries, mutations and streaming procedures). */
export type KasTrpcClient = ReturnType<typeof createTRPCClient<ClientRouter>>;

export function createTrpcClient(options: {
  baseUrl: string;
  apiKey?: string;
  fetch?: typeof fetch;
}): KasTrpcClient {
  return createTRPCClient<ClientRouter>({
    links: [
      httpBatchStreamLink({
        url: `${options.baseUrl}/api/trpc`,
        transformer: superjson,
        headers: () => (options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {}),
        fetch: options.fetch,
      }),
    ],
  });
}

/** Converts a tRPC client error into the SDK's ApiError (other errors pass through). */
export function toApiError(error: unknown): unknown {
  if (error instanceof TRPCClientError) {
    const data = error.data as { httpStatus?: number; error_code?: string; detail?: string } | undefined;
    return new ApiError(
      data?.httpStatus ?? 0,
      (data?.error_code as ErrorCode | undefined) ?? 'HTTP_ERROR',
      data?.detail ?? error.message,
      { cause: error },
    );
  }
  return error;
}
