import { z } from 'zod';
import { closest } from '../edit-distance.ts';
import { TimestampInput } from '../timestamps.ts';
import { WellFormedString } from '../validation.ts';

export const Tag = z
  .object({ tag_key: WellFormedString.min(1), tag_value: WellFormedString })
  .meta({ id: 'Tag', description: 'A metadata key and one of its values' });
export type Tag = z.infer<typeof Tag>;

const FILTER_KEYS = ['source_type', 'document_set', 'time_cutoff', 'tags'];

function unknownFilters(keys: string[]): string {
  const named = keys.map((key) => {
    const near = closest(key, FILTER_KEYS, 3);
    return near ? `"${key}" (did you mean ${near}?)` : `"${key}"`;
  });
  return `unknown filter ${named.join(', ')}; the filters are ${FILTER_KEYS.join(', ')}`;
}

/** A misspelt filter would otherwise be ignored (unfiltered results): an unknown key is refused, named. */
export const BaseFilters = z
  .strictObject(
    {
      source_type: z.array(WellFormedString).nullish().meta({ description: 'Only these source types' }),
      document_set: z
        .array(WellFormedString)
        .nullish()
        .meta({ description: 'Only documents in these document sets (names)' }),
      time_cutoff: TimestampInput.nullish().meta({
        description: 'Only documents updated at or after this time',
      }),
      tags: z.array(Tag).nullish().meta({ description: 'Only documents with any of these tags' }),
    },
    {
      error: (issue) => (issue.code === 'unrecognized_keys' ? unknownFilters(issue.keys) : undefined),
    },
  )
  .meta({ id: 'BaseFilters' });
export type BaseFilters = z.infer<typeof BaseFilters>;

export const AdminSearchInput = z.object({
  query: z.string().max(2000),
  filters: BaseFilters,
});
export type AdminSearchInput = z.infer<typeof AdminSearchInput>;

export const SearchDoc = z
  .object({
    document_id: z.string(),
    chunk_ind: z.number().int().meta({ description: 'The best-matching chunk of the document' }),
    semantic_identifier: z.string(),
    link: z.string().nullable(),
    blurb: z.string().meta({ description: 'Short excerpt of the best chunk' }),
    source_type: z.string(),
    score: z.number().meta({ description: 'Relevance; higher is better' }),
    match_highlights: z.array(z.string()).meta({ description: 'Excerpts with matches wrapped in <hi></hi>' }),
    updated_at: z.string().nullable(),
    metadata: z.record(z.string(), z.union([z.string(), z.array(z.string())])),
    boost: z.number().int(),
    hidden: z.boolean(),
  })
  .meta({ id: 'SearchDoc' });
export type SearchDoc = z.infer<typeof SearchDoc>;

export const AdminSearchResponse = z
  .object({ documents: z.array(SearchDoc) })
  .meta({ id: 'AdminSearchResponse' });
export type AdminSearchResponse = z.infer<typeof AdminSearchResponse>;
