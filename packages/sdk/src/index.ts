export {
  type ApiKeyDescriptor,
  createKasClient,
  type KasClient,
  type KasClientOptions,
  type KasRestClient,
  type Role,
  unwrap,
} from './client.ts';
export { ApiError } from './errors.ts';
export type { components, paths } from './generated/openapi.ts';
export type { KasTrpcClient } from './trpc.ts';
