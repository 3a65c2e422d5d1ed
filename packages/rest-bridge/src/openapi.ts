import {
  appRouter,
  ERROR_CODES,
  ERROR_STATUS,
  type ErrorCode,
  KAS_VERSION,
  type KasMeta,
  procedureMinRole,
  procedureReadsKey,
  RETRYABLE_ERROR_CODES,
} from '@kas/server';
import type { AnyTRPCProcedure } from '@trpc/server';
import { generateOpenApiDocument, type OpenAPIObject } from 'trpc-to-openapi';
import { createSchema } from 'zod-openapi';

/** The failures every operation documents; their statuses come from the one error table. */
const DOCUMENTED_ERRORS: { code: ErrorCode; description: string; authOnly?: boolean; writeOnly?: boolean }[] =
  [
    { code: 'INVALID_INPUT', description: 'Invalid input' },
    { code: 'UNAUTHENTICATED', description: 'Missing or invalid API key', authOnly: true },
    { code: 'INSUFFICIENT_PERMISSIONS', description: 'Insufficient permissions', authOnly: true },
    { code: 'NOT_FOUND', description: 'Not found' },
    { code: 'VALIDATION_ERROR', description: 'Malformed request body or parameter' },
    { code: 'DUPLICATE_RESOURCE', description: 'Conflicts with an existing resource', writeOnly: true },
    { code: 'PAYLOAD_TOO_LARGE', description: 'Request body over KAS_MAX_BODY_MB' },
    { code: 'RATE_LIMITED', description: 'Rate limited' },
    { code: 'HEADERS_TOO_LARGE', description: 'URL and headers over 16 KB' },
    { code: 'INTERNAL_ERROR', description: 'Internal server error' },
  ];

type SchemaObject = NonNullable<NonNullable<OpenAPIObject['components']>['schemas']>[string];

const ErrorBody: SchemaObject = {
  type: 'object',
  required: ['error_code', 'detail'],
  properties: {
    error_code: { type: 'string', enum: ERROR_CODES, description: 'Machine-readable code, e.g. NOT_FOUND' },
    detail: { type: 'string', description: 'Human-readable explanation' },
  },
  additionalProperties: false,
  // Which codes are worth retrying, so clients (the SDK) need no rule of their own.
  'x-retryable-error-codes': RETRYABLE_ERROR_CODES,
} as SchemaObject;

/**
 * The router as the generator reads it: a stream-only procedure (a generator, with `meta.streamLine` and no
 * output: `.output()` cannot type a generator) is shown with its line schema as its output, which the
 * document then gives as the NDJSON answer. Only the generator reads this view; nothing calls it.
 */
function documentedRouter(): typeof appRouter {
  const procedures = appRouter._def.procedures as unknown as Record<string, AnyTRPCProcedure>;
  const view: Record<string, unknown> = {};
  for (const [path, procedure] of Object.entries(procedures)) {
    const def = procedure._def as AnyTRPCProcedure['_def'] & { output?: unknown };
    const meta = def.meta as KasMeta | undefined;
    view[path] =
      meta?.openapi && meta.streamLine && def.output === undefined
        ? { ...procedure, _def: { ...def, output: meta.streamLine } }
        : procedure;
  }
  return { ...appRouter, _def: { ...appRouter._def, procedures: view } } as unknown as typeof appRouter;
}

/**
 * The OpenAPI 3.1 document, generated from the procedures' meta and then corrected where the generator
 * is wrong for us: full `/api` paths, 204 responses, our `{error_code, detail}` error body, and the
 * bearer security scheme only where a key is required.
 */
export function buildOpenApiDocument(): OpenAPIObject {
  const doc = generateOpenApiDocument(documentedRouter(), {
    title: 'kas API',
    version: KAS_VERSION,
    description:
      'kas, the self-hostable knowledge assistant service. Every request carries `Authorization: Bearer <API_KEY>`. ' +
      'Errors have the body `{ "error_code", "detail" }`.',
    baseUrl: '/',
    securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer', description: 'An API key: svck-…' } },
  });
  const procedureByRoute = new Map<string, AnyTRPCProcedure>();
  for (const procedure of Object.values(
    appRouter._def.procedures as unknown as Record<string, AnyTRPCProcedure>,
  )) {
    const meta = procedure._def.meta as KasMeta | undefined;
    if (meta?.openapi)
      procedureByRoute.set(`${meta.openapi.method.toLowerCase()} ${meta.openapi.path}`, procedure);
  }
  const paths: Record<string, any> = {};
  const extraSchemas: Record<string, SchemaObject> = {};
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    for (const [method, operation] of Object.entries(item as Record<string, any>)) {
      if (!operation || typeof operation !== 'object' || !('responses' in operation)) continue;
      const procedure = procedureByRoute.get(`${method} ${path}`);
      const meta = procedure?._def.meta as KasMeta | undefined;
      const protect = meta?.openapi?.protect !== false;
      // Optional authentication (shared reads): a key is not needed, but a bad one is refused.
      const optionalKey = !protect && procedure !== undefined && procedureReadsKey(procedure);
      const responses: Record<string, any> = {};
      if (meta?.noContent) {
        responses['204'] = { description: 'No Content' };
      } else {
        responses['200'] = operation.responses['200'];
      }
      if (meta?.streamLine) {
        // The NDJSON answer of a hand-written streaming route: each line is one value of this schema. A
        // stream-only route has no JSON answer.
        const line = createSchema(meta.streamLine, { io: 'output' });
        Object.assign(extraSchemas, line.components);
        const streamOnly = (procedure?._def as { output?: unknown } | undefined)?.output === undefined;
        responses['200'] = {
          ...responses['200'],
          content: {
            ...(streamOnly ? {} : responses['200']?.content),
            'text/event-stream': {
              schema: line.schema,
              description: 'NDJSON: one JSON value of this schema per line',
            },
          },
        };
      }
      for (const error of DOCUMENTED_ERRORS) {
        if ((error.authOnly && !protect && !optionalKey) || (error.writeOnly && method === 'get')) continue;
        responses[String(ERROR_STATUS[error.code])] = {
          description: error.description,
          content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorBody' } } },
        };
      }
      operation.responses = responses;
      if (meta?.download) {
        responses['200'] = {
          description: 'The file',
          content: { [meta.download.contentType]: { schema: { type: 'string', format: 'binary' } } },
        };
      }
      if (meta?.multipart) {
        operation.requestBody = {
          required: true,
          content: {
            'multipart/form-data': {
              schema: {
                type: 'object',
                required: [meta.multipart.field],
                properties: {
                  [meta.multipart.field]: {
                    type: 'array',
                    maxItems: meta.multipart.maxFiles,
                    items: { type: 'string', format: 'binary' },
                  },
                },
              },
            },
          },
        };
      }
      if (meta?.rawBody) {
        operation.requestBody = {
          required: true,
          content: {
            'application/json': {
              schema: {
                type: 'object',
                description: "The source's webhook payload, exactly as the source sent it",
              },
            },
          },
        };
      }
      // The least role the operation needs (`none`: callable without a key), derived from its procedure.
      if (procedure) operation['x-kas-min-role'] = procedureMinRole(procedure);
      if (protect) operation.security = [{ bearerAuth: [] }];
      else if (optionalKey) operation.security = [{}, { bearerAuth: [] }];
      else delete operation.security;
    }
    paths[`/api${path}`] = item;
  }
  doc.paths = paths;
  doc.servers = [{ url: '/' }];
  // The generator's own error shapes ({message, code, issues}) are replaced by ErrorBody above.
  const schemas = Object.fromEntries(
    Object.entries(doc.components?.schemas ?? {}).filter(([name]) => !name.startsWith('error.')),
  );
  doc.components = { ...doc.components, schemas: { ...extraSchemas, ...schemas, ErrorBody } };
  delete doc.components?.responses;
  return doc;
}
