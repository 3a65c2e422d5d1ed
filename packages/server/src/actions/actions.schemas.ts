import { z } from 'zod';
import { ToolSnapshot } from '../tools/tools.schemas.ts';

const Id = z.coerce.number().int().positive();

export const HeaderPair = z
  .object({
    key: z
      .string()
      .regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/, 'must be an HTTP header name')
      .refine((k) => k.toLowerCase() !== 'host', 'Host cannot be set'),
    value: z.string().max(8192),
  })
  .meta({ id: 'HeaderPair', description: 'A static header sent with every request of the action' });
export type HeaderPair = z.infer<typeof HeaderPair>;

export const OpenApiDefinition = z
  .union([z.record(z.string(), z.unknown()), z.string().max(2_000_000)])
  .meta({
    description:
      'The OpenAPI 3.x specification: a JSON object, or the uploaded file’s text (trailing commas tolerated)',
  });

export const MethodSpec = z
  .object({
    method: z.string().meta({ description: 'HTTP method' }),
    path: z.string(),
    summary: z.string(),
    name: z.string().meta({ description: 'The function name the model calls (from `operationId`)' }),
  })
  .meta({ id: 'MethodSpec', description: 'One operation of an OpenAPI action: one tool for the model' });
export type MethodSpec = z.infer<typeof MethodSpec>;

export const ValidateDefinitionInput = z.object({ definition: OpenApiDefinition });
export const ValidateDefinitionResponse = z
  .object({ methods: z.array(MethodSpec) })
  .meta({ id: 'ValidateDefinitionResponse' });

export const CustomToolCreateInput = z.object({
  name: z.string().trim().min(1).max(200).optional().meta({ description: 'Default: `info.title`' }),
  description: z.string().max(5000).optional().meta({ description: 'Default: `info.description`' }),
  definition: OpenApiDefinition,
  custom_headers: z.array(HeaderPair).max(50).optional(),
  passthrough_auth: z
    .boolean()
    .default(false)
    .meta({ description: "Forward the caller's OIDC sign-in token as `Authorization: Bearer`" }),
  oauth_config_id: z.number().int().positive().nullable().optional(),
  groups: z.array(z.number().int().positive()).max(100).optional().meta({
    description:
      'User groups the action is for: only their members use it, and their curators manage it (a curator must name groups they curate). Empty or absent (admins): everyone',
  }),
});
export type CustomToolCreateInput = z.infer<typeof CustomToolCreateInput>;

export const CustomToolUpdateInput = z.object({
  tool_id: Id,
  name: z.string().trim().min(1).max(200).optional(),
  description: z.string().max(5000).optional(),
  definition: OpenApiDefinition.optional(),
  custom_headers: z.array(HeaderPair).max(50).optional().meta({
    description: 'Replaces the headers; a value sent back masked (`********`) keeps its stored value',
  }),
  passthrough_auth: z.boolean().optional(),
  oauth_config_id: z.number().int().positive().nullable().optional(),
  groups: z.array(z.number().int().positive()).max(100).optional().meta({
    description:
      'User groups the action is for: only their members use it, and their curators manage it (a curator must name groups they curate). Empty or absent (admins): everyone',
  }),
});
export type CustomToolUpdateInput = z.infer<typeof CustomToolUpdateInput>;

export const ToolIdInput = z.object({ tool_id: Id });

export const ToolDetail = ToolSnapshot.extend({
  definition: z
    .record(z.string(), z.unknown())
    .nullable()
    .meta({ description: 'The OpenAPI specification (OpenAPI actions)' }),
  custom_headers: z.array(HeaderPair).meta({ description: 'Values masked (`********`)' }),
  passthrough_auth: z.boolean(),
  oauth_config_id: z.number().int().nullable(),
  methods: z.array(MethodSpec).meta({ description: 'OpenAPI actions: one entry per operation' }),
  groups: z
    .array(z.number().int())
    .meta({ description: 'OpenAPI actions: the user groups it is for (empty: everyone)' }),
}).meta({ id: 'ToolDetail', description: 'A tool with its action configuration' });
export type ToolDetail = z.infer<typeof ToolDetail>;

export const DeletedResponse = z.object({ success: z.literal(true) }).meta({ id: 'DeletedResponse' });

export const McpTransport = z.enum(['STREAMABLE_HTTP', 'SSE']).meta({ id: 'McpTransport' });
export const McpAuthType = z
  .enum(['NONE', 'API_TOKEN', 'OAUTH', 'PT_OAUTH'])
  .meta({ id: 'McpAuthType', description: 'none, API key, per-user OAuth, OAuth pass-through' });
export const McpAuthPerformer = z.enum(['ADMIN', 'PER_USER']).meta({
  id: 'McpAuthPerformer',
  description: 'ADMIN: one shared credential; PER_USER: each user their own',
});

export const McpAuthTemplate = z
  .object({
    headers: z
      .record(z.string().regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/), z.string().max(4096))
      .meta({ description: 'Header name → value with `{field}` placeholders, e.g. `Bearer {api_key}`' }),
  })
  .meta({ id: 'McpAuthTemplate' });

export const McpServerCreateInput = z.object({
  name: z.string().trim().min(1).max(200),
  description: z.string().max(5000).optional(),
  server_url: z.url().max(2000),
  transport: McpTransport.default('STREAMABLE_HTTP'),
  auth_type: McpAuthType.default('NONE'),
  auth_performer: McpAuthPerformer.default('ADMIN'),
  api_token: z
    .string()
    .min(1)
    .max(8192)
    .optional()
    .meta({ description: 'Shared API key (API_TOKEN + ADMIN)' }),
  auth_template: McpAuthTemplate.optional().meta({
    description:
      'How the key is sent. Default `Authorization: Bearer {api_key}`; a shared template must contain `{api_key}`.',
  }),
  oauth_client_id: z.string().max(2000).optional(),
  oauth_client_secret: z.string().max(2000).optional(),
  groups: z.array(z.number().int().positive()).max(100).optional().meta({
    description:
      'User groups the action is for: only their members use it, and their curators manage it (a curator must name groups they curate). Empty or absent (admins): everyone',
  }),
});
export type McpServerCreateInput = z.infer<typeof McpServerCreateInput>;

export const McpServerCreateResponse = z
  .object({
    server_id: z.number().int(),
    server_name: z.string(),
    server_url: z.string(),
    auth_type: McpAuthType,
    auth_performer: McpAuthPerformer,
    no_user_authentication_required: z.boolean(),
  })
  .meta({ id: 'McpServerCreateResponse' });

export const McpServerSnapshot = z
  .object({
    id: z.number().int(),
    name: z.string(),
    description: z.string(),
    server_url: z.string(),
    transport: McpTransport,
    auth_type: McpAuthType,
    auth_performer: McpAuthPerformer,
    status: z.string().meta({ description: 'CREATED, CONNECTED (tools fetched) or DISCONNECTED' }),
    required_fields: z
      .array(z.string())
      .meta({ description: 'What each user supplies (API_TOKEN + PER_USER)' }),
    auth_template: McpAuthTemplate.nullable(),
    has_api_token: z.boolean(),
    tool_count: z.number().int(),
    user_authenticated: z.boolean().meta({ description: 'Whether the caller can use the server now' }),
    groups: z.array(z.number().int()).meta({ description: 'The user groups it is for (empty: everyone)' }),
    last_refreshed_at: z.string().nullable(),
  })
  .meta({ id: 'McpServerSnapshot' });
export type McpServerSnapshot = z.infer<typeof McpServerSnapshot>;

export const McpServerList = z
  .object({ mcp_servers: z.array(McpServerSnapshot) })
  .meta({ id: 'McpServerList' });
export const McpServerIdInput = z.object({ server_id: Id });

export const McpToolEntry = z
  .object({
    id: z.number().int().meta({ description: 'The tool id to put in an agent’s `tool_ids`' }),
    name: z.string(),
    description: z.string(),
    input_schema: z.record(z.string(), z.unknown()),
    enabled: z.boolean(),
  })
  .meta({ id: 'McpToolEntry' });

export const McpServerTools = z
  .object({
    server_id: z.number().int(),
    server_name: z.string(),
    server_url: z.string(),
    tools: z.array(McpToolEntry),
    message: z.string().nullable().meta({ description: 'Why the list is empty, when it is' }),
  })
  .meta({ id: 'McpServerTools' });

export const McpServerUpdateInput = z.object({
  server_id: z.number().int().positive(),
  name: z.string().trim().min(1).max(200).optional(),
  description: z.string().max(5000).optional(),
  selected_tools: z
    .array(z.string())
    .optional()
    .meta({ description: 'Tool names offered to agents; the others are disabled' }),
  groups: z.array(z.number().int().positive()).max(100).optional().meta({
    description:
      'User groups the action is for: only their members use it, and their curators manage it (a curator must name groups they curate). Empty or absent (admins): everyone',
  }),
});
export const McpServerUpdateResponse = z
  .object({ server_id: z.number().int(), server_name: z.string(), updated_tools: z.number().int() })
  .meta({ id: 'McpServerUpdateResponse' });

export const McpUserCredentialsInput = z.object({
  server_id: z.number().int().positive(),
  credentials: z.record(z.string(), z.string().max(8192)),
});
export const McpUserCredentialsResponse = z
  .object({
    success: z.boolean(),
    message: z.string(),
    server_id: z.number().int(),
    server_name: z.string(),
    authenticated: z.boolean(),
    validation_tested: z.boolean(),
  })
  .meta({ id: 'McpUserCredentialsResponse' });

export const OAuthConfigCreateInput = z.object({
  name: z.string().trim().min(1).max(200),
  authorization_url: z.url().max(2000),
  token_url: z.url().max(2000),
  client_id: z.string().min(1).max(2000),
  client_secret: z.string().min(1).max(4000),
  scopes: z
    .union([z.array(z.string().min(1)), z.string()])
    .optional()
    .meta({ description: 'A list, or one comma-separated string' }),
});
export const OAuthConfigUpdateInput = OAuthConfigCreateInput.partial().extend({ oauth_config_id: Id });
export const OAuthConfigIdInput = z.object({ oauth_config_id: Id });
export const OAuthConfigSnapshot = z
  .object({
    id: z.number().int(),
    name: z.string(),
    authorization_url: z.string(),
    token_url: z.string(),
    scopes: z.array(z.string()),
    has_client_credentials: z.boolean(),
    tool_count: z.number().int(),
    redirect_uri: z.string().meta({ description: 'Register this redirect URI with the provider' }),
  })
  .meta({ id: 'OAuthConfigSnapshot', description: 'Client id and secret are never returned' });
export type OAuthConfigSnapshot = z.infer<typeof OAuthConfigSnapshot>;

export const OAuthInitiateInput = z.object({ oauth_config_id: z.number().int().positive() });
export const OAuthInitiateResponse = z
  .object({ authorization_url: z.string(), state: z.string(), redirect_uri: z.string() })
  .meta({ id: 'OAuthInitiateResponse' });
export const OAuthCallbackInput = z.object({
  code: z.string().min(1).max(4096),
  state: z.string().min(1).max(200),
});
export const OAuthCallbackResponse = z
  .object({ success: z.boolean(), oauth_config_id: z.number().int(), message: z.string() })
  .meta({ id: 'OAuthCallbackResponse' });

export const McpOauthConnectInput = z.object({
  server_id: Id,
  force_reauthentication: z
    .boolean()
    .optional()
    .meta({ description: 'Start a new authorization even when the caller is connected' }),
});
export const McpOauthConnectResponse = z
  .object({
    server_id: z.number().int(),
    status: z.enum(['authorization_required', 'already_authenticated']),
    authorization_url: z
      .string()
      .nullable()
      .meta({ description: 'Open it in the browser; the authorization server redirects to `redirect_uri`' }),
    state: z.string().nullable(),
    redirect_uri: z
      .string()
      .meta({ description: 'The redirect URI registered with the authorization server' }),
  })
  .meta({ id: 'McpOauthConnectResponse' });
export const McpOauthCallbackResponse = z
  .object({
    success: z.boolean(),
    message: z.string(),
    server_id: z.number().int(),
    server_name: z.string(),
  })
  .meta({ id: 'McpOauthCallbackResponse' });
