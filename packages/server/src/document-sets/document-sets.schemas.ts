import { z } from 'zod';
import { WellFormedString } from '../validation.ts';

export const DocumentSet = z
  .object({
    id: z.number().int(),
    name: z.string(),
    description: z.string(),
    cc_pair_ids: z.array(z.number().int()).meta({ description: 'CC pairs whose documents form the set' }),
    is_public: z
      .boolean()
      .meta({ description: 'Visible to every user; otherwise to `users`, `groups` and the owner' }),
    users: z.array(z.uuid()),
    groups: z.array(z.number().int()),
  })
  .meta({ id: 'DocumentSet' });
export type DocumentSet = z.infer<typeof DocumentSet>;

const Name = WellFormedString.trim().min(1).max(255);

export const CreateDocumentSetInput = z.object({
  name: Name,
  description: z.string().max(10_000).default(''),
  cc_pair_ids: z.array(z.number().int()).default([]),
  is_public: z.boolean().default(true),
  users: z.array(z.uuid()).default([]),
  groups: z.array(z.number().int()).default([]),
});
export type CreateDocumentSetInput = z.infer<typeof CreateDocumentSetInput>;

export const UpdateDocumentSetInput = z.object({
  id: z.number().int(),
  name: Name.optional(),
  description: z.string().max(10_000).optional(),
  cc_pair_ids: z.array(z.number().int()).optional(),
  is_public: z.boolean().optional(),
  users: z.array(z.uuid()).optional(),
  groups: z.array(z.number().int()).optional(),
});
export type UpdateDocumentSetInput = z.infer<typeof UpdateDocumentSetInput>;

export const DocumentSetIdInput = z.object({ document_set_id: z.number().int() });
