import { z } from 'zod';
import { IngestDocumentInput, IngestionResult } from '../documents/documents.schemas.ts';
import { BaseFilters } from '../search/search.schemas.ts';

/** The tools kas serves over MCP, and the OAuth scope each needs. */
export const MCP_TOOLS = ['search', 'fetch', 'ask', 'ingest'] as const;
export type McpToolName = (typeof MCP_TOOLS)[number];

/** OAuth scopes a token for /mcp can carry: `search` (search and fetch), `ask`, `ingest`. */
export const McpScope = z.enum(['search', 'ask', 'ingest']).meta({ id: 'McpScope' });
export type McpScope = z.infer<typeof McpScope>;
export const MCP_SCOPES = McpScope.options;

export const McpSearchInput = z.object({
  query: z
    .string()
    .min(1)
    .max(2000)
    .describe(
      'What to look for, in words (web-search syntax: "exact phrase", -exclude, or). Prefer a few distinctive keywords.',
    ),
  filters: BaseFilters.partial()
    .nullish()
    .describe('Optional: narrow the search to source types, document sets (names), a time cutoff or tags'),
  limit: z
    .number()
    .int()
    .min(1)
    .max(50)
    .default(10)
    .describe('How many documents to return (1-50, default 10)'),
});
export type McpSearchInput = z.infer<typeof McpSearchInput>;

export const McpSearchResult = z.object({
  id: z.string().describe('The document id; pass it to `fetch` for the full text'),
  title: z.string(),
  url: z.string().nullable().describe('Where the document lives at its source, when it has an address'),
  text: z.string().describe('The best-matching excerpt'),
});
export const McpSearchOutput = z.object({ results: z.array(McpSearchResult) });
export type McpSearchOutput = z.infer<typeof McpSearchOutput>;

export const McpFetchInput = z.object({
  id: z.string().min(1).max(512).describe('A document id from a `search` result (or an `ask` source)'),
});
export type McpFetchInput = z.infer<typeof McpFetchInput>;

export const McpFetchOutput = z.object({
  id: z.string(),
  title: z.string(),
  text: z.string().describe('The full text of the document'),
  url: z.string().nullable(),
  metadata: z
    .record(z.string(), z.unknown())
    .describe('Source type, last update, the document’s own metadata'),
});
export type McpFetchOutput = z.infer<typeof McpFetchOutput>;

export const McpAskInput = z.object({
  question: z.string().min(1).max(20_000).describe('The question, as a person would ask it'),
  agent_id: z
    .number()
    .int()
    .min(0)
    .nullish()
    .describe('Optional: the kas agent (persona) to answer with; the default agent when omitted'),
});
export type McpAskInput = z.infer<typeof McpAskInput>;

export const McpAskSource = z.object({
  n: z.number().int().describe('The citation number used as [n] in the answer'),
  id: z.string().describe('The document id (for `fetch`)'),
  title: z.string(),
  url: z.string().nullable(),
});
export const McpAskOutput = z.object({
  answer: z.string().describe('The answer, with [n] markers citing `sources`'),
  sources: z.array(McpAskSource),
  chat_session_id: z
    .string()
    .describe("The kas chat session the exchange was saved in (the caller's history)"),
});
export type McpAskOutput = z.infer<typeof McpAskOutput>;

export const McpIngestInput = IngestDocumentInput;
export type McpIngestInput = z.infer<typeof McpIngestInput>;
// The same fields as the ingestion API's answer, without its component id: an output schema must be an
// object schema, not a reference.
export const McpIngestOutput = z.object(IngestionResult.shape);
export type McpIngestOutput = z.infer<typeof McpIngestOutput>;
