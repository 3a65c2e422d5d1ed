import type { Client } from 'openapi-fetch';
import { ApiError } from './errors.ts';
import type { paths } from './generated/openapi.ts';

/** The REST client typed from the OpenAPI document: `rest.GET('/api/admin/api-key')`. */
export type KasRestClient = Client<paths>;

/** Unwraps an openapi-fetch result, throwing ApiError on a non-2xx answer. */
export async function unwrap<T>(
  promise: Promise<{ data?: T; error?: unknown; response: Response }>,
): Promise<T> {
  const { data, error, response } = await promise;
  if (!response.ok) throw ApiError.fromBody(response.status, error);
  return data as T;
}
