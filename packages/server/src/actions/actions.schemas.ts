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
}).meta({ id: 'ToolDetail', description: 'A tool with its action configuration' });
export type ToolDetail = z.infer<typeof ToolDetail>;

export const DeletedResponse = z.object({ success: z.literal(true) }).meta({ id: 'DeletedResponse' });
