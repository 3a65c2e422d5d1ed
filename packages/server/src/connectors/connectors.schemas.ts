import { z } from 'zod';
import { TimestampInput } from '../timestamps.ts';

export const AccessType = z.enum(['public', 'private', 'sync']).meta({ id: 'AccessType' });
export const InputType = z.enum(['poll', 'event', 'load_state']).meta({ id: 'ConnectorInputType' });
export const CcPairStatus = z
  .enum(['scheduled', 'initial_indexing', 'active', 'paused', 'deleting', 'invalid'])
  .meta({ id: 'CcPairStatus' });
export const IndexAttemptStatus = z
  .enum(['not_started', 'in_progress', 'success', 'completed_with_errors', 'failed', 'canceled'])
  .meta({ id: 'IndexAttemptStatus' });
export type IndexAttemptStatus = z.infer<typeof IndexAttemptStatus>;

const Freq = z.number().int().nullish();

export const ConnectorCreateInput = z
  .object({
    name: z.string().trim().min(1).max(256),
    source: z.string().min(1).max(64),
    input_type: InputType,
    connector_specific_config: z.record(z.string(), z.unknown()),
    access_type: AccessType,
    refresh_freq: Freq.meta({ description: 'Seconds between re-syncs (≥ 60); null: index once' }),
    prune_freq: Freq.meta({ description: 'Seconds between prunes of deleted documents (≥ 300)' }),
    indexing_start: TimestampInput.nullish(),
    groups: z
      .array(z.number().int())
      .optional()
      .meta({ description: 'Groups with access (curators: required)' }),
  })
  .meta({ id: 'ConnectorCreate' });
export type ConnectorCreateInput = z.infer<typeof ConnectorCreateInput>;

export const ConnectorUpdateInput = ConnectorCreateInput.partial().extend({ connector_id: z.number().int() });
export type ConnectorUpdateInput = z.infer<typeof ConnectorUpdateInput>;

export const ConnectorSnapshot = z
  .object({
    id: z.number().int(),
    name: z.string(),
    source: z.string(),
    input_type: z.string(),
    connector_specific_config: z.record(z.string(), z.unknown()),
    refresh_freq: z.number().int().nullable(),
    prune_freq: z.number().int().nullable(),
    indexing_start: z.string().nullable(),
    access_type: AccessType,
    credential_ids: z.array(z.number().int()),
    time_created: z.string(),
    time_updated: z.string(),
  })
  .meta({ id: 'ConnectorSnapshot' });
export type ConnectorSnapshot = z.infer<typeof ConnectorSnapshot>;

export const ConnectorIdInput = z.object({ connector_id: z.number().int() });
export const ConnectorListInput = z.object({ credential: z.number().int().optional() });

export const StatusResponse = z
  .object({ success: z.boolean(), message: z.string(), data: z.number().int().nullish() })
  .meta({ id: 'StatusResponse' });
export type StatusResponse = z.infer<typeof StatusResponse>;

export const RunOnceInput = z.object({
  connector_id: z.number().int(),
  credential_ids: z.array(z.number().int()).nullish(),
  from_beginning: z.boolean().default(false),
});
export type RunOnceInput = z.infer<typeof RunOnceInput>;

export const CredentialCreateInput = z
  .object({
    name: z.string().trim().max(256).nullish(),
    source: z.string().min(1).max(64),
    credential_json: z.record(z.string(), z.unknown()),
    admin_public: z.boolean().default(true),
    curator_public: z.boolean().default(false),
    groups: z.array(z.number().int()).default([]),
  })
  .meta({ id: 'CredentialCreate' });
export type CredentialCreateInput = z.infer<typeof CredentialCreateInput>;

export const CredentialUpdateInput = z.object({
  credential_id: z.number().int(),
  name: z.string().trim().max(256).nullish(),
  credential_json: z.record(z.string(), z.unknown()).optional(),
  admin_public: z.boolean().optional(),
  curator_public: z.boolean().optional(),
  groups: z.array(z.number().int()).optional(),
});
export type CredentialUpdateInput = z.infer<typeof CredentialUpdateInput>;

export const CredentialSnapshot = z
  .object({
    id: z.number().int(),
    name: z.string().nullable(),
    source: z.string(),
    credential_json: z
      .record(z.string(), z.unknown())
      .meta({ description: 'Secret values are masked (`********`)' }),
    admin_public: z.boolean(),
    curator_public: z.boolean(),
    groups: z.array(z.number().int()),
    user_id: z.string().nullable(),
    time_created: z.string(),
    time_updated: z.string(),
  })
  .meta({ id: 'CredentialSnapshot' });
export type CredentialSnapshot = z.infer<typeof CredentialSnapshot>;

export const CredentialIdInput = z.object({ credential_id: z.number().int() });
export const CredentialListInput = z.object({ source: z.string().optional() });

export const CcPairCreateInput = z.object({
  connector_id: z.number().int(),
  credential_id: z.number().int(),
  name: z.string().trim().min(1).max(256),
  access_type: AccessType.default('public'),
  groups: z.array(z.number().int()).default([]),
});
export type CcPairCreateInput = z.infer<typeof CcPairCreateInput>;

export const ConnectorCredentialInput = z.object({
  connector_id: z.number().int(),
  credential_id: z.number().int(),
});

export const IndexingProgress = z
  .object({
    docs_done: z
      .number()
      .int()
      .meta({ description: 'Documents of this run, including those of failed attempts it continues' }),
    docs_total: z.number().int().nullable().meta({ description: 'When the source knows it' }),
    docs_per_second: z
      .number()
      .nullable()
      .meta({ description: 'Over the time the attempt ran: waits for a rate limit and pauses excluded' }),
    eta_seconds: z.number().nullable().meta({ description: 'Null until the total and a rate are known' }),
    waiting_until: z
      .string()
      .nullable()
      .meta({ description: 'The attempt is rate limited and resumes from its checkpoint at this time' }),
    waiting_reason: z
      .string()
      .nullable()
      .meta({ description: 'Why it waits (the source’s rate-limit message)' }),
  })
  .meta({ id: 'IndexingProgress' });
export type IndexingProgress = z.infer<typeof IndexingProgress>;

export const IndexAttempt = z
  .object({
    id: z.number().int(),
    cc_pair_id: z.number().int(),
    status: IndexAttemptStatus,
    from_beginning: z.boolean(),
    new_docs_indexed: z.number().int(),
    total_docs_indexed: z.number().int(),
    docs_removed_from_index: z.number().int(),
    error_msg: z.string().nullable(),
    error_count: z.number().int(),
    progress: IndexingProgress,
    time_started: z.string().nullable(),
    time_updated: z.string(),
    poll_range_start: z.string().nullable(),
    poll_range_end: z.string().nullable(),
    resumed_from: z
      .number()
      .int()
      .nullable()
      .meta({ description: 'The failed attempt whose checkpoint this one continues' }),
  })
  .meta({ id: 'IndexAttempt' });
export type IndexAttempt = z.infer<typeof IndexAttempt>;

export const PairEvents = z
  .object({
    pending: z.number().int().meta({ description: 'Webhook events queued or being processed' }),
    failed: z.number().int().meta({ description: 'Events that failed every try (kept a week)' }),
    last_error: z.string().nullable().meta({ description: 'The latest error of an event try' }),
    last_processed: z.string().nullable().meta({ description: 'When an event was last processed' }),
  })
  .meta({ id: 'CcPairEvents', description: 'Webhook events of `event` connectors (input_type event)' });

export const CcPairDetails = z
  .object({
    id: z.number().int(),
    name: z.string(),
    status: CcPairStatus,
    access_type: AccessType,
    num_docs_indexed: z.number().int(),
    connector: ConnectorSnapshot,
    credential: CredentialSnapshot,
    groups: z.array(z.number().int()),
    number_of_index_attempts: z.number().int(),
    last_index_attempt_status: IndexAttemptStatus.nullable(),
    last_indexed: z.string().nullable(),
    last_pruned: z.string().nullable(),
    indexing: z.boolean(),
    in_repeated_error_state: z.boolean(),
    deletion_failure_message: z.string().nullable(),
    progress: IndexingProgress.nullable().meta({ description: 'Of the running or rate-limited attempt' }),
    last_failure: z
      .string()
      .nullable()
      .meta({
        description: 'Reason of the last failure: the failed run’s error, or the last document error',
      }),
    events: PairEvents,
  })
  .meta({ id: 'CcPairDetails' });
export type CcPairDetails = z.infer<typeof CcPairDetails>;

export const CcPairIdInput = z.object({ cc_pair_id: z.number().int() });
export const CcPairStatusInput = z.object({
  cc_pair_id: z.number().int(),
  status: z.enum(['active', 'paused']),
});

export const PageInput = z.object({
  cc_pair_id: z.number().int(),
  page_num: z.number().int().min(0).default(0),
  page_size: z.number().int().min(1).max(100).default(10),
});
export type PageInput = z.infer<typeof PageInput>;

export const IndexAttemptPage = z
  .object({ items: z.array(IndexAttempt), total_items: z.number().int() })
  .meta({ id: 'IndexAttemptPage' });

export const IndexAttemptError = z
  .object({
    id: z.number().int(),
    index_attempt_id: z.number().int(),
    document_id: z.string().nullable(),
    document_link: z.string().nullable(),
    failure_message: z.string(),
    time_created: z.string(),
  })
  .meta({ id: 'IndexAttemptError' });
export const IndexAttemptErrorPage = z
  .object({ items: z.array(IndexAttemptError), total_items: z.number().int() })
  .meta({ id: 'IndexAttemptErrorPage' });

export const IndexingStatusEntry = z
  .object({
    cc_pair_id: z.number().int(),
    name: z.string(),
    source: z.string(),
    status: CcPairStatus,
    connector_id: z.number().int(),
    credential_id: z.number().int(),
    num_docs_indexed: z.number().int(),
    last_index_attempt_status: IndexAttemptStatus.nullable(),
    last_indexed: z.string().nullable(),
    indexing: z.boolean(),
    in_repeated_error_state: z.boolean(),
    progress: IndexingProgress.nullable().meta({ description: 'Of the running or rate-limited attempt' }),
    last_failure: z
      .string()
      .nullable()
      .meta({
        description: 'Reason of the last failure: the failed run’s error, or the last document error',
      }),
    events: PairEvents,
  })
  .meta({ id: 'IndexingStatusEntry' });
export type IndexingStatusEntry = z.infer<typeof IndexingStatusEntry>;

export const DeletionAttemptInput = ConnectorCredentialInput;
