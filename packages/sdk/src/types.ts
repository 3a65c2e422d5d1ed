import type { paths } from './generated/openapi.ts';

type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';

/** The JSON request body of an operation. */
export type RequestBody<P extends keyof paths, M extends Method> = paths[P][M] extends {
  requestBody?: { content: { 'application/json': infer B } };
}
  ? B
  : never;

/** The query parameters of an operation. */
export type QueryParams<P extends keyof paths, M extends Method> = paths[P][M] extends {
  parameters: { query?: infer Q };
}
  ? NonNullable<Q>
  : never;

/** The 200 JSON response of an operation. */
export type ResponseBody<P extends keyof paths, M extends Method> = paths[P][M] extends {
  responses: { 200: { content: { 'application/json': infer R } } };
}
  ? R
  : never;
