import { z } from 'zod';
import { TimestampString } from '../timestamps.ts';
import { ToolSnapshot } from '../tools/tools.schemas.ts';
import { MinimalUserSnapshot } from '../users/users.schemas.ts';
import { WellFormedString } from '../validation.ts';

/** The built-in default agent: what a chat session gets when `persona_id` is omitted. */
export const DEFAULT_PERSONA_ID = 0;

const INT32_MAX = 2_147_483_647;
/** Ids and priorities are 32-bit columns: larger numbers are invalid input, not a database error. */
const Int32 = z
  .number()
  .int()
  .min(-INT32_MAX - 1)
  .max(INT32_MAX);
const Id = z.number().int().min(0).max(INT32_MAX);

export const PersonaId = Id.meta({ description: 'Id of the agent' });

export const StarterMessage = z
  .object({
    name: z.string().meta({ description: 'Button label' }),
    description: z.string().optional().meta({ description: 'Tooltip text' }),
    message: z.string().meta({ description: 'Text sent on click' }),
  })
  .meta({ id: 'StarterMessage' });
export type StarterMessage = z.infer<typeof StarterMessage>;

export const PersonaLabel = z
  .object({ id: z.number().int(), name: z.string() })
  .meta({ id: 'PersonaLabel', description: 'A label for organising agents' });
export type PersonaLabel = z.infer<typeof PersonaLabel>;

export const PersonaDocumentSet = z
  .object({
    id: z.number().int(),
    name: z.string(),
    description: z.string(),
    is_public: z.boolean(),
  })
  .meta({ id: 'PersonaDocumentSet', description: 'A document set an agent searches' });
export type PersonaDocumentSet = z.infer<typeof PersonaDocumentSet>;

const minimalFields = {
  id: z.number().int(),
  name: z.string(),
  description: z.string(),
  is_public: z.boolean(),
  is_listed: z.boolean().meta({ description: 'Appears in the agent picker' }),
  is_featured: z.boolean(),
  builtin_persona: z.boolean().meta({ description: 'Built-in agents cannot be deleted' }),
  display_priority: z.number().int().nullable().meta({ description: 'List sort order, lower first' }),
  tools: z.array(ToolSnapshot),
  document_sets: z.array(PersonaDocumentSet),
  starter_messages: z.array(StarterMessage),
  labels: z.array(PersonaLabel),
  llm_model_provider_override: z.string().nullable(),
  llm_model_version_override: z.string().nullable(),
  owner: MinimalUserSnapshot.nullable().meta({
    description: 'Who created the agent; null for built-in ones',
  }),
  deleted: z.boolean().meta({ description: 'Soft-deleted; listed only with `include_deleted=true`' }),
};

export const MinimalPersonaSnapshot = z
  .object(minimalFields)
  .meta({ id: 'MinimalPersonaSnapshot', description: 'An agent as the agent list shows it' });
export type MinimalPersonaSnapshot = z.infer<typeof MinimalPersonaSnapshot>;

const snapshotFields = {
  ...minimalFields,
  system_prompt: z.string(),
  task_prompt: z.string(),
  datetime_aware: z.boolean(),
  replace_base_system_prompt: z.boolean(),
  users: z.array(MinimalUserSnapshot).meta({ description: 'Users the agent is shared with' }),
  groups: z.array(z.number().int()).meta({ description: 'Groups the agent is shared with' }),
  document_ids: z.array(z.string()),
  hierarchy_node_ids: z.array(Id),
  user_file_ids: z.array(z.string()),
};

export const PersonaSnapshot = z
  .object(snapshotFields)
  .meta({ id: 'PersonaSnapshot', description: 'An agent with its prompts and sharing' });
export type PersonaSnapshot = z.infer<typeof PersonaSnapshot>;

/** When an agent searches the documents. */
export const SearchMode = z.enum(['always_first', 'when_asked', 'never']).meta({
  id: 'SearchMode',
  description:
    '`always_first`: search with the question before the model answers (the model may search again); ' +
    '`when_asked`: only when the model calls the search tool; `never`: no search. ' +
    'Null: always first when the model provider has no tool calling, when asked otherwise.',
});
export type SearchMode = z.infer<typeof SearchMode>;

export const FullPersonaSnapshot = z
  .object({
    ...snapshotFields,
    search_start_date: z.string().nullable().meta({
      description: 'ISO 8601; only documents updated after it are searched',
    }),
    search_mode: SearchMode.nullable(),
  })
  .meta({ id: 'FullPersonaSnapshot' });
export type FullPersonaSnapshot = z.infer<typeof FullPersonaSnapshot>;

const upsertFields = {
  name: z.string().trim().min(1).max(255),
  description: z.string().max(10_000),
  system_prompt: z.string().max(100_000),
  task_prompt: z.string().max(100_000),
  datetime_aware: z.boolean(),
  replace_base_system_prompt: z.boolean(),
  is_public: z.boolean(),
  document_set_ids: z.array(Id),
  tool_ids: z.array(Id),
  llm_model_provider_override: z.string().nullable(),
  llm_model_version_override: z.string().nullable(),
  starter_messages: z.array(StarterMessage).nullable(),
  users: z.array(z.uuid()),
  groups: z.array(Id),
  search_start_date: TimestampString.nullable(),
  search_mode: SearchMode.nullable(),
  label_ids: z.array(Id).nullable(),
  is_featured: z.boolean(),
  display_priority: Int32.nullable(),
  hierarchy_node_ids: z.array(Id),
  document_ids: z.array(WellFormedString),
  user_file_ids: z.array(WellFormedString),
};

export const CreatePersonaInput = z.object({
  ...upsertFields,
  replace_base_system_prompt: upsertFields.replace_base_system_prompt.default(false),
  llm_model_provider_override: upsertFields.llm_model_provider_override.optional(),
  llm_model_version_override: upsertFields.llm_model_version_override.optional(),
  starter_messages: upsertFields.starter_messages.optional(),
  users: upsertFields.users.optional(),
  groups: upsertFields.groups.optional(),
  search_start_date: upsertFields.search_start_date.optional(),
  search_mode: upsertFields.search_mode.optional(),
  label_ids: upsertFields.label_ids.optional(),
  is_featured: upsertFields.is_featured.default(false),
  display_priority: upsertFields.display_priority.optional(),
  hierarchy_node_ids: upsertFields.hierarchy_node_ids.optional(),
  document_ids: upsertFields.document_ids.optional(),
  user_file_ids: upsertFields.user_file_ids.optional(),
});
export type CreatePersonaInput = z.infer<typeof CreatePersonaInput>;

/** Every field optional: what is omitted (or `null` for `label_ids`) stays as it is. */
export const UpdatePersonaInput = z.object(upsertFields).partial().extend({ persona_id: PersonaId });
export type UpdatePersonaInput = z.infer<typeof UpdatePersonaInput>;

export const PersonaIdInput = z.object({ persona_id: PersonaId });

export const ListPersonasInput = z.object({
  page_num: z.number().int().min(0).max(INT32_MAX).default(0).meta({ description: 'Page, from 0' }),
  page_size: z.number().int().min(1).max(1000).default(10),
  include_deleted: z.boolean().default(false),
  get_editable: z.boolean().default(false).meta({ description: 'Only agents the caller can edit' }),
  include_default: z.boolean().default(true).meta({ description: 'Include built-in agents' }),
});
export type ListPersonasInput = z.infer<typeof ListPersonasInput>;

export const MinimalPersonaPage = z
  .object({ items: z.array(MinimalPersonaSnapshot), total_items: z.number().int() })
  .meta({ id: 'MinimalPersonaPage' });
export type MinimalPersonaPage = z.infer<typeof MinimalPersonaPage>;

export const PersonaPage = z
  .object({ items: z.array(PersonaSnapshot), total_items: z.number().int() })
  .meta({ id: 'PersonaPage' });
export type PersonaPage = z.infer<typeof PersonaPage>;

export const DisplayPrioritiesInput = z.object({
  display_priority_map: z
    .record(z.string().regex(/^\d{1,10}$/, 'keys are agent ids'), Int32)
    .meta({ description: 'Agent id → display priority (lower first)' }),
});
export type DisplayPrioritiesInput = z.infer<typeof DisplayPrioritiesInput>;

export const SetListedInput = z.object({ persona_id: PersonaId, is_listed: z.boolean() });
export const SetFeaturedInput = z.object({ persona_id: PersonaId, is_featured: z.boolean() });
export const SetPublicInput = z.object({ persona_id: PersonaId, is_public: z.boolean() });

const LabelName = WellFormedString.trim().min(1).max(255);
export const CreateLabelInput = z.object({ name: LabelName });
export const LabelId = Id;
export const UpdateLabelInput = z.object({ label_id: LabelId, label_name: LabelName });
export const LabelIdInput = z.object({ label_id: LabelId });

/** Everything the chat service needs to run an agent. */
export interface PersonaForChat {
  id: number;
  name: string;
  description: string;
  builtin_persona: boolean;
  system_prompt: string;
  task_prompt: string;
  datetime_aware: boolean;
  replace_base_system_prompt: boolean;
  tool_ids: number[];
  tools: ToolSnapshot[];
  document_set_ids: number[];
  document_sets: PersonaDocumentSet[];
  search_start_date: string | null;
  search_mode: SearchMode | null;
  llm_model_provider_override: string | null;
  llm_model_version_override: string | null;
  document_ids: string[];
  hierarchy_node_ids: number[];
  user_file_ids: string[];
  starter_messages: StarterMessage[];
}
