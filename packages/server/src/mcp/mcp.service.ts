import { type Actor, type Role, roleAtLeast } from '../auth/roles.ts';
import { SendMessageInput } from '../chat/chat.schemas.ts';
import * as chatService from '../chat/chat.service.ts';
import type { ActorContext } from '../context.ts';
import * as documentsService from '../documents/documents.service.ts';
import { AppError } from '../errors.ts';
import * as searchRepository from '../search/search.repository.ts';
import { accessScopeOf, searchChunks } from '../search/search.service.ts';
import type {
  McpAskInput,
  McpAskOutput,
  McpFetchInput,
  McpFetchOutput,
  McpIngestInput,
  McpIngestOutput,
  McpScope,
  McpSearchInput,
  McpSearchOutput,
  McpToolName,
} from './mcp.schemas.ts';

/**
 * The least role each tool needs (the same as its REST counterpart: a `limited` person only chats), and
 * the OAuth scope a token must carry for it.
 */
const TOOL_ACCESS: Record<McpToolName, { role: Role; scope: McpScope }> = {
  search: { role: 'basic', scope: 'search' },
  fetch: { role: 'basic', scope: 'search' },
  ask: { role: 'limited', scope: 'ask' },
  ingest: { role: 'curator', scope: 'ingest' },
};

/** The scopes a person of this role may grant a client: never more than the role allows. */
export function scopesForRole(role: Role): McpScope[] {
  const scopes = new Set<McpScope>();
  for (const access of Object.values(TOOL_ACCESS))
    if (roleAtLeast(role, access.role)) scopes.add(access.scope);
  return [...scopes];
}

/** Whether the caller may use a tool: their role, and for an OAuth token its scopes. */
export function mayUseTool(actor: Actor, tool: McpToolName): boolean {
  const access = TOOL_ACCESS[tool];
  if (!roleAtLeast(actor.role, access.role)) return false;
  return actor.oauth ? actor.oauth.scopes.includes(access.scope) : true;
}

/** The tools the caller sees, in a stable order. */
export function toolsFor(actor: Actor): McpToolName[] {
  return (Object.keys(TOOL_ACCESS) as McpToolName[]).filter((tool) => mayUseTool(actor, tool));
}

function assertMayUse(actor: Actor, tool: McpToolName): void {
  if (mayUseTool(actor, tool)) return;
  const access = TOOL_ACCESS[tool];
  throw new AppError(
    'INSUFFICIENT_PERMISSIONS',
    roleAtLeast(actor.role, access.role)
      ? `This token was not granted the "${access.scope}" scope the ${tool} tool needs`
      : `The ${tool} tool requires the ${access.role} role; the caller has the ${actor.role} role`,
  );
}

/** Search within what the caller may see: one result per document (its best chunk), best first. */
export async function search({
  ctx,
  input,
}: {
  ctx: ActorContext<'db' | 'dbRead' | 'search'>;
  input: McpSearchInput;
}): Promise<McpSearchOutput> {
  assertMayUse(ctx.actor, 'search');
  const chunks = await searchChunks({
    ctx,
    actor: ctx.actor,
    query: input.query,
    filters: input.filters ?? {},
    limit: Math.max(input.limit * 2, 20),
    perDocument: input.limit,
  });
  return {
    results: chunks.map((chunk) => ({
      id: chunk.document_id,
      title: chunk.semantic_identifier || chunk.title,
      url: chunk.link,
      text: chunk.content,
    })),
  };
}

/** One whole document the caller may see; one they may not is "not found", never revealed. */
export async function fetchDocument({
  ctx,
  input,
}: {
  ctx: ActorContext<'db' | 'dbRead'>;
  input: McpFetchInput;
}): Promise<McpFetchOutput> {
  assertMayUse(ctx.actor, 'fetch');
  const access = await accessScopeOf(ctx, ctx.actor);
  const chunks = await searchRepository.loadDocumentChunks(ctx.dbRead, input.id, access);
  const first = chunks[0];
  if (!first) throw new AppError('DOCUMENT_NOT_FOUND', `Document ${JSON.stringify(input.id)} not found`);
  return {
    id: first.document_id,
    title: first.semantic_identifier || first.title,
    text: chunks.map((chunk) => chunk.content).join('\n\n'),
    url: first.document_link,
    metadata: {
      ...first.metadata,
      source_type: first.source_type,
      updated_at: new Date(first.updated_at).toISOString(),
    },
  };
}

/**
 * A cited answer through the same chat turn as every other surface (a new session in the caller's
 * history, their agent access, budgets and limits): the answer with its [n] markers and the sources
 * they point at.
 */
export async function ask({ ctx, input }: { ctx: ActorContext; input: McpAskInput }): Promise<McpAskOutput> {
  assertMayUse(ctx.actor, 'ask');
  const turn = await chatService.sendMessage({
    ctx,
    input: SendMessageInput.parse({
      message: input.question,
      chat_session_id: null,
      chat_session_info: { persona_id: input.agent_id ?? 0, description: 'MCP' },
      stream: false,
    }),
  });
  if (turn.error_msg && !turn.answer) throw new AppError('LLM_PROVIDER_ERROR', turn.error_msg);
  const documents = new Map(turn.top_documents.map((doc) => [doc.document_id, doc]));
  for (const call of turn.tool_calls)
    for (const doc of call.search_docs)
      if (!documents.has(doc.document_id)) documents.set(doc.document_id, doc);
  const sources = Object.entries(turn.citations)
    .map(([n, id]) => {
      const doc = documents.get(id);
      return { n: Number(n), id, title: doc?.semantic_identifier ?? id, url: doc?.link ?? null };
    })
    .sort((a, b) => a.n - b.n);
  return { answer: turn.answer, sources, chat_session_id: turn.chat_session_id };
}

/** The ingestion API's document, with the same rules (curators write only into pairs they manage). */
export async function ingest({
  ctx,
  input,
}: {
  ctx: documentsService.DocumentsDeps & { actor: Actor };
  input: McpIngestInput;
}): Promise<McpIngestOutput> {
  assertMayUse(ctx.actor, 'ingest');
  return documentsService.ingestDocument({ ctx, input, actor: ctx.actor });
}
