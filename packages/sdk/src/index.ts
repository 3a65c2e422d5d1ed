export {
  type ApiKeyDescriptor,
  createKasClient,
  type KasClient,
  type KasClientOptions,
  type Role,
} from './client.ts';
export { type KasRestClient, unwrap } from './client-core.ts';
export type {
  McpServer,
  McpServerInput,
  McpServerTools,
  MethodSpec,
  OAuthConfig,
  OpenApiActionInput,
  ToolDetail,
} from './domains/actions.ts';
export type { AgentListQuery, PersonaInput } from './domains/agents.ts';
export {
  type ChatPacket,
  type ChatStreamError,
  type ChatStreamLine,
  collectAnswer,
  isPacket,
  type PacketObj,
  type SendMessageInput,
  type UploadFile,
} from './domains/chat.ts';
export type {
  CcPair,
  Connector,
  ConnectorFileUpload,
  ConnectorInput,
  ConnectorUploadFile,
  Credential,
  IndexingProgress,
} from './domains/connectors.ts';
export { fileConnectorConfig } from './domains/connectors.ts';
export type { BatchIngestionResult, IngestedDocument, SearchFilters } from './domains/documents.ts';
export { ApiError, type ApiErrorCode } from './errors.ts';
export { ERROR_CODES, type ErrorCode, RETRYABLE_ERROR_CODES } from './generated/errors.ts';
export type { components, paths } from './generated/openapi.ts';
export type { KasTrpcClient } from './trpc.ts';
export type { QueryParams, RequestBody, ResponseBody } from './types.ts';
