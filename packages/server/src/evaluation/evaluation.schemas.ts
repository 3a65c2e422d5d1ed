import { z } from 'zod';

export const GoldenCase = z
  .object({
    question: z.string().min(1).max(2000),
    document_ids: z
      .array(z.string().min(1))
      .min(1)
      .max(100)
      .meta({ description: 'The documents that answer the question (any one of them counts)' }),
    answer_contains: z
      .union([z.string().min(1).max(2000), z.array(z.string().min(1).max(2000)).min(1).max(20)])
      .optional()
      .meta({
        description:
          'Text the chat answer must contain (case-insensitive); with a list, any one of them counts',
      }),
  })
  .meta({ id: 'GoldenCase' });
export type GoldenCase = z.infer<typeof GoldenCase>;

export const EvaluationInput = z.object({
  cases: z.array(GoldenCase).min(1).max(500),
  chat: z
    .boolean()
    .default(true)
    .meta({ description: 'Also ask each question in chat and score its citations' }),
  persona_id: z.number().int().min(0).default(0).meta({ description: 'The agent that answers in chat' }),
});
export type EvaluationInput = z.infer<typeof EvaluationInput>;

export const SearchMetrics = z
  .object({
    recall_at_1: z.number(),
    recall_at_5: z.number(),
    recall_at_10: z.number(),
    mrr_at_10: z.number(),
    ndcg_at_10: z.number(),
  })
  .meta({
    id: 'SearchMetrics',
    description:
      'recall@k: the share of questions with an expected document among the first k results; MRR@10: the mean ' +
      'reciprocal rank of the first expected document (0 beyond 10); nDCG@10 with binary relevance.',
  });
export type SearchMetrics = z.infer<typeof SearchMetrics>;

export const ChatMetrics = z
  .object({
    cites_expected: z.number().meta({ description: 'Share of answers that cite an expected document' }),
    first_citation_expected: z
      .number()
      .meta({ description: 'Share of answers whose citation [1] is expected' }),
    failed: z.number().int().meta({ description: 'Questions whose chat turn ended in an error' }),
    answer_contains: z.number().nullable().meta({
      description:
        'Share of the questions with `answer_contains` whose answer contains it; null when no question has it',
    }),
  })
  .meta({ id: 'ChatMetrics' });
export type ChatMetrics = z.infer<typeof ChatMetrics>;

export const QuestionResult = z.object({
  question: z.string(),
  /** 1-based rank of the first expected document in admin search, null when absent from the results. */
  first_expected_rank: z.number().int().nullable(),
  top_documents: z
    .array(z.string())
    .meta({ description: 'The first five document ids admin search returned' }),
  cited_documents: z
    .array(z.string())
    .nullable()
    .meta({ description: 'Documents cited in chat, in citation order' }),
  answer: z
    .string()
    .nullable()
    .meta({ description: 'The chat answer (null without chat or when it failed)' }),
  answer_contains_expected: z
    .boolean()
    .nullable()
    .meta({ description: 'Whether the answer contains the expected text; null when the case gives none' }),
});
export type QuestionResult = z.infer<typeof QuestionResult>;

export const EvaluationReport = z
  .object({
    questions: z.number().int(),
    search: SearchMetrics,
    chat: ChatMetrics.nullable(),
    missing_document_ids: z.array(z.string()).meta({
      description:
        'Expected document ids of the golden set that no indexed document has (misspelt or not indexed)',
    }),
    results: z.array(QuestionResult),
  })
  .meta({ id: 'EvaluationReport' });
export type EvaluationReport = z.infer<typeof EvaluationReport>;
