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
