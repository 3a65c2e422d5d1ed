import { z } from 'zod';
import { TimestampInput } from '../timestamps.ts';
import { WellFormedString } from '../validation.ts';

export const Section = z
  .object({
    text: z.string().meta({ description: 'Section text' }),
    link: z
      .string()
      .max(2048)
      .nullish()
      .meta({ description: 'URL (anchor) a citation of this section points at' }),
  })
  .meta({ id: 'DocumentSection' });
export type Section = z.infer<typeof Section>;

export const Owner = z
  .object({
    display_name: z.string().nullish(),
    first_name: z.string().nullish(),
    middle_initial: z.string().nullish(),
    last_name: z.string().nullish(),
    email: z.string().nullish(),
  })
  .meta({ id: 'DocumentOwner' });
export type Owner = z.infer<typeof Owner>;

const MetadataValue = z.union([WellFormedString, z.number(), z.boolean()]).transform(String);

export const IngestedDocument = z
  .object({
    id: WellFormedString.trim().min(1).max(512).nullish().meta({
      description: 'Stable unique id; derived from the content when omitted. Same id: update in place',
    }),
    semantic_identifier: z
      .string()
      .min(1)
      .max(1024)
      .meta({ description: 'Title shown in the UI and citations' }),
    sections: z.array(Section).min(1),
    source: WellFormedString.min(1).max(64).nullish().meta({ description: 'Source type; default `file`' }),
    metadata: z
      .record(WellFormedString, z.union([MetadataValue, z.array(MetadataValue)]))
      .nullish()
      .meta({ description: 'Values are strings or arrays of strings; each key/value pair is also a tag' }),
    doc_updated_at: TimestampInput.nullish().meta({ description: 'Default: the current time' }),
    title: z
      .string()
      .max(1024)
      .nullish()
      .meta({ description: 'Used for ranking; default semantic_identifier' }),
    primary_owners: z.array(Owner).nullish(),
    secondary_owners: z.array(Owner).nullish(),
  })
  .meta({ id: 'IngestedDocument' });
export type IngestedDocument = z.infer<typeof IngestedDocument>;

export const IngestDocumentInput = z.object({
  document: IngestedDocument,
  cc_pair_id: z
    .number()
    .int()
    .nullish()
    .meta({ description: 'Owning CC pair; default the system ingestion CC pair' }),
});
export type IngestDocumentInput = z.infer<typeof IngestDocumentInput>;

export const IngestionResult = z
  .object({
    document_id: z.string(),
    already_existed: z.boolean().meta({
      description: 'True when a document with this id existed before the call, false when it was created',
    }),
  })
  .meta({ id: 'IngestionResult' });
export type IngestionResult = z.infer<typeof IngestionResult>;

/**
 * Most documents one batch request may carry whatever the setting (`KAS_INGESTION_BATCH_MAX` is the
 * operator's limit, at most this); bounds the request before it is read into documents.
 */
export const INGESTION_BATCH_CEILING = 1000;

export const IngestBatchInput = z.object({
  documents: z.array(IngestedDocument).min(1).max(INGESTION_BATCH_CEILING).meta({
    description:
      'The documents, each ingested as by `POST /svc-api/ingestion`; at most `KAS_INGESTION_BATCH_MAX` (default 100)',
  }),
  cc_pair_id: IngestDocumentInput.shape.cc_pair_id,
});
export type IngestBatchInput = z.infer<typeof IngestBatchInput>;

export const BatchItemError = z
  .object({
    error_code: z.string(),
    detail: z.string(),
  })
  .meta({ id: 'BatchItemError' });
export type BatchItemError = z.infer<typeof BatchItemError>;

export const BatchIngestionResult = z
  .object({
    document_id: z.string().nullable().meta({
      description:
        'The document id (derived from the content when omitted); null when the document was refused before one was known',
    }),
    already_existed: z.boolean().nullable().meta({
      description: 'As for a single document; null when this document failed',
    }),
    error: BatchItemError.nullable().meta({
      description: 'Why this document alone was not ingested (the others are unaffected); null on success',
    }),
  })
  .meta({ id: 'BatchIngestionResult' });
export type BatchIngestionResult = z.infer<typeof BatchIngestionResult>;

export const IngestBatchOutput = z
  .object({
    results: z.array(BatchIngestionResult).meta({ description: 'One per document, in the order sent' }),
  })
  .meta({ id: 'IngestBatchOutput' });
export type IngestBatchOutput = z.infer<typeof IngestBatchOutput>;

export const DocMinimalInfo = z
  .object({
    document_id: z.string(),
    semantic_id: z.string().meta({ description: 'The semantic_identifier given at ingestion' }),
    link: z.string().nullable(),
  })
  .meta({ id: 'DocMinimalInfo' });
export type DocMinimalInfo = z.infer<typeof DocMinimalInfo>;

export const DocumentIdInput = z.object({ document_id: WellFormedString.min(1) });
export const CcPairIdInput = z.object({ cc_pair_id: z.number().int() });
