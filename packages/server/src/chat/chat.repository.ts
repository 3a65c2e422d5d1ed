import { type Selectable, sql } from 'kysely';
import type { DbExecutor } from '../db/database.ts';
import type { ChatMessagesTable } from './chat.table.ts';

export type SessionRow = Awaited<ReturnType<typeof findSession>> & {};
export type MessageRow = Awaited<ReturnType<typeof listMessages>>[number];

export function insertSession(
  db: DbExecutor,
  row: { user_id: string; persona_id: number; description: string; project_id: number | null },
) {
  return db.insertInto('chat_sessions').values(row).returningAll().executeTakeFirstOrThrow();
}

export function findSession(db: DbExecutor, id: string) {
  return db.selectFrom('chat_sessions').selectAll().where('id', '=', id).executeTakeFirst();
}

export function updateSession(
  db: DbExecutor,
  id: string,
  patch: {
    description?: string;
    shared_status?: 'private' | 'public';
    deleted?: boolean;
    current_alternate_model?: string | null;
    current_temperature_override?: number | null;
    touch?: boolean;
  },
) {
  const { touch, ...columns } = patch;
  return db
    .updateTable('chat_sessions')
    .set((eb) => ({ ...columns, ...(touch ? { time_updated: eb.fn<Date>('now') } : {}) }))
    .where('id', '=', id)
    .executeTakeFirst();
}

export function deleteSession(db: DbExecutor, id: string) {
  return db.deleteFrom('chat_sessions').where('id', '=', id).executeTakeFirst();
}

/** How long an unanswered chat counts as in progress. Raw SQL: the builder has no interval literal. */
const FAILED_AFTER = sql`interval '5 minutes'`;

export interface ListSessionsFilter {
  user_id: string;
  before: Date | undefined;
  project_id: number | undefined;
  only_non_project_chats: boolean;
  include_failed_chats: boolean;
  limit: number;
}

/** Sessions looked at per round trip while failed chats are hidden: a page, plus room for failed ones. */
const LIST_WINDOW_MIN = 50;

/**
 * The newest sessions first. Hiding failed chats needs each session's answers, so sessions are taken
 * in windows of the (user_id, time_created DESC, id) order and only the window's sessions are checked,
 * each by probing its own messages, until a page is full. A single statement with the check in its
 * WHERE clause cost in proportion to the whole history: as EXISTS, the planner hashed every assistant
 * message the user ever received, and without statistics (PGlite has no autovacuum, so nothing is ever
 * analysed) it checked every session before sorting them (the soak: 1.1 → 5.1 ms of CPU per listing
 * in ten minutes).
 */
export async function listSessions(db: DbExecutor, filter: ListSessionsFilter) {
  const window = filter.include_failed_chats ? filter.limit : Math.max(2 * filter.limit, LIST_WINDOW_MIN);
  const found: Omit<
    Awaited<ReturnType<ReturnType<typeof listSessionsWindow>['execute']>>[number],
    'visible'
  >[] = [];
  for (let offset = 0; ; offset += window) {
    const rows = await listSessionsWindow(db, filter, { offset, limit: window }).execute();
    for (const { visible, ...row } of rows) if (visible && found.length < filter.limit) found.push(row);
    if (found.length >= filter.limit || rows.length < window) return found;
  }
}

/** One window of the user's sessions in listing order, each with whether the listing shows it. */
export function listSessionsWindow(
  db: DbExecutor,
  filter: ListSessionsFilter,
  window: { offset: number; limit: number },
) {
  let sessions = db
    .selectFrom('chat_sessions as s')
    .selectAll('s')
    .where('s.user_id', '=', filter.user_id)
    .where('s.deleted', '=', false);
  if (filter.before) sessions = sessions.where('s.time_created', '<', filter.before);
  if (filter.project_id !== undefined) sessions = sessions.where('s.project_id', '=', filter.project_id);
  else if (filter.only_non_project_chats) sessions = sessions.where('s.project_id', 'is', null);
  // Failed: no answer ever succeeded, and one failed or none came within five minutes. Scalar LIMIT 1
  // probes through the messages' session index (an EXISTS may be planned as a hash of all messages).
  return db
    .selectFrom(
      sessions
        .orderBy('s.time_created', 'desc')
        .orderBy('s.id')
        .limit(window.limit)
        .offset(window.offset)
        .as('s'),
    )
    .selectAll('s')
    .select((eb) => {
      if (filter.include_failed_chats) return eb.lit(true).as('visible');
      const answer = (error: 'is' | 'is not') =>
        eb
          .selectFrom('chat_messages as m')
          .select(eb.lit(true).as('found'))
          .whereRef('m.chat_session_id', '=', 's.id')
          .where('m.message_type', '=', 'assistant')
          .where('m.error', error, null)
          .limit(eb.lit(1));
      return eb
        .or([
          eb(answer('is'), 'is not', null),
          eb.and([
            eb(answer('is not'), 'is', null),
            eb('s.time_created', '>', sql<Date>`now() - ${FAILED_AFTER}`),
          ]),
        ])
        .as('visible');
    })
    .orderBy('s.time_created', 'desc')
    .orderBy('s.id');
}

function likePattern(text: string): string {
  return `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/** Sessions a search looks through newest first before it searches the whole history. */
const RECENT_SESSIONS = 100;

/**
 * The user's live sessions whose name or any message matches, newest first, in two steps so that a
 * search costs neither a pass over the whole history nor one over every match:
 * 1. the newest sessions (at least RECENT_SESSIONS), each through its own messages: a frequent word
 *    fills the page here;
 * 2. otherwise the whole history through the messages' indexes (full text and trigrams, a bitmap OR):
 *    a rarer word costs in proportion to its matches.
 */
export async function searchSessions(
  db: DbExecutor,
  filter: { user_id: string; query: string | undefined; limit: number; offset: number },
) {
  const live = () =>
    db
      .selectFrom('chat_sessions as s')
      .selectAll('s')
      .where('s.user_id', '=', filter.user_id)
      .where('s.deleted', '=', false)
      .orderBy('s.time_created', 'desc')
      .orderBy('s.id');
  const text = filter.query?.trim();
  if (!text) return live().limit(filter.limit).offset(filter.offset).execute();
  const like = likePattern(text);
  // Raw SQL: full-text matching (to_tsvector @@ plainto_tsquery, the expressions the GIN indexes are built
  // on) next to ilike, in the shape the messages' indexes are combined for (a bitmap OR).
  const words = sql`plainto_tsquery('english', ${text})`;
  const nameMatches = sql<boolean>`(s.description ilike ${like} or to_tsvector('english', s.description) @@ ${words})`;
  const messageMatches = sql<boolean>`m.message_type <> 'system'
    and (m.message ilike ${like} or to_tsvector('english', m.message) @@ ${words})`;

  const window = Math.max(RECENT_SESSIONS, (filter.offset + filter.limit) * 2);
  const recent = await db
    .selectFrom(live().limit(window).as('s'))
    .leftJoinLateral(
      (eb) =>
        eb
          .selectFrom('chat_messages as m')
          .select((eb) => eb.lit(1).as('hit'))
          .whereRef('m.chat_session_id', '=', 's.id')
          .where(messageMatches)
          .limit(1)
          .as('h'),
      (join) => join.onTrue(),
    )
    .selectAll('s')
    .where((eb) => eb.or([nameMatches, eb('h.hit', 'is not', null)]))
    .orderBy('s.time_created', 'desc')
    .orderBy('s.id')
    .limit(filter.limit)
    .offset(filter.offset)
    .execute();
  if (recent.length === filter.limit) return recent;
  const older = await live()
    .select((eb) => eb.lit(1).as('more'))
    .offset(window)
    .limit(1)
    .executeTakeFirst();
  if (!older) return recent;
  return live()
    .where((eb) =>
      eb.or([
        nameMatches,
        eb(
          's.id',
          'in',
          eb.selectFrom('chat_messages as m').select('m.chat_session_id').where(messageMatches),
        ),
      ]),
    )
    .limit(filter.limit)
    .offset(filter.offset)
    .execute();
}

export function listMessages(db: DbExecutor, sessionId: string) {
  return db
    .selectFrom('chat_messages')
    .selectAll()
    .where('chat_session_id', '=', sessionId)
    .orderBy('id')
    .execute();
}

/** What a new turn needs of a message (not the stored documents and citations of earlier answers). */
const NODE_COLUMNS = [
  'id',
  'parent_message_id',
  'latest_child_message_id',
  'message_type',
  'message',
  'error',
  'files',
  'time_sent',
] as const;
export type MessageNode = Pick<Selectable<ChatMessagesTable>, (typeof NODE_COLUMNS)[number]>;
/** The node columns for the raw statements below (walkMessages, appendTurn). */
const NODE = sql.raw(NODE_COLUMNS.map((c) => `m.${c}`).join(', '));
/** Longest path walked (a guard against a cycle in damaged data). */
const MAX_DEPTH = 100_000;

/**
 * The id of a session's root, the system message every turn hangs from (none before the first turn):
 * a subquery, so that a turn's statements find it (or make it) without a round trip of their own.
 */
function rootOf(sessionId: string) {
  return sql`(SELECT r.id FROM chat_messages r
    WHERE r.chat_session_id = ${sessionId} AND r.parent_message_id IS NULL AND r.message_type = 'system'
    ORDER BY r.id LIMIT 1)`;
}

/**
 * A path through the session's tree, root first: `up` from a message to the root (its ancestors; empty
 * when it is not a message of the session), or `down` from a message (`'root'`: the session's root)
 * through each latest child (the mainline; empty when the session has no root yet).
 */
export async function walkMessages(
  db: DbExecutor,
  sessionId: string,
  from: number | 'root',
  direction: 'up' | 'down',
): Promise<MessageNode[]> {
  // Raw SQL: a recursive walk with a depth guard; the builder's withRecursive would need the CTE's
  // columns declared by hand and reads worse than the statement.
  const next = direction === 'up' ? sql`walk.parent_message_id` : sql`walk.latest_child_message_id`;
  const result = await sql<MessageNode>`
    WITH RECURSIVE walk AS (
      SELECT ${NODE}, 0 AS depth FROM chat_messages m
      WHERE m.id = ${from === 'root' ? rootOf(sessionId) : from} AND m.chat_session_id = ${sessionId}
      UNION ALL
      SELECT ${NODE}, walk.depth + 1 FROM chat_messages m JOIN walk ON m.id = ${next}
      WHERE walk.depth < ${MAX_DEPTH} AND m.chat_session_id = ${sessionId}
    )
    SELECT ${sql.raw(NODE_COLUMNS.join(', '))} FROM walk
    ORDER BY depth ${direction === 'up' ? sql`DESC` : sql`ASC`}`.execute(db);
  return result.rows;
}

/**
 * A new turn's rows in one statement: the question (unless it regenerates the answer to `parentId`, a
 * question already), the reserved answer, both linked as their parent's latest child, and the session touched
 * (`description` only when it has none). Ids come from the sequence first, so the rows link to each other
 * as they are inserted. A parent `'root'` is the session's root, made here when the session has none yet.
 */
export async function appendTurn(
  db: DbExecutor,
  args: {
    sessionId: string;
    parentId: number | 'root';
    question: { message: string; token_count: number; files: unknown[] } | null;
    answer: { message: string; model_name: string };
    session: { description: string | null; alternate_model: string | null; temperature: number | null };
  },
): Promise<{ question: MessageNode | null; answer: MessageNode }> {
  const { question } = args;
  const toRoot = args.parentId === 'root';
  // Raw SQL: one statement of data-modifying CTEs fed by nextval() (ids drawn before the rows that link
  // to them are inserted), which the builder cannot compose.
  // The ids in the rows' order (a root made here first, so that a session's messages by id are in tree
  // order); a root that exists already leaves its drawn id unused.
  const drawn = (toRoot ? 1 : 0) + (question ? 1 : 0) + 1;
  const ids = sql`SELECT ${toRoot ? sql`a[1]` : sql`NULL::bigint`} AS root_id,
      ${question ? sql`a[${sql.lit(toRoot ? 2 : 1)}]` : sql`NULL::bigint`} AS question_id, a[${sql.lit(drawn)}] AS answer_id
    FROM (SELECT array_agg(v ORDER BY v) AS a
      FROM (SELECT nextval(pg_get_serial_sequence('chat_messages', 'id')) AS v FROM generate_series(1, ${sql.lit(drawn)})) x) y`;
  // A root made here links to the turn as it is inserted: the statement's UPDATE would not see it.
  const root = toRoot
    ? sql`, found AS MATERIALIZED (SELECT ${rootOf(args.sessionId)} AS id), made AS (
        INSERT INTO chat_messages (id, chat_session_id, parent_message_id, latest_child_message_id, message_type, message, files)
        SELECT root_id, ${args.sessionId}, NULL, coalesce(question_id, answer_id), 'system', '', '[]'::jsonb
        FROM ids WHERE (SELECT id FROM found) IS NULL RETURNING id
      ), root AS (SELECT id FROM found WHERE id IS NOT NULL UNION ALL SELECT id FROM made)`
    : sql``;
  const parentId = toRoot ? sql`(SELECT id FROM root)` : sql`${args.parentId}`;
  const insertQuestion = question
    ? sql`, q AS (
        INSERT INTO chat_messages AS m (id, chat_session_id, parent_message_id, latest_child_message_id, message_type, message, token_count, files)
        SELECT question_id, ${args.sessionId}, ${parentId}, answer_id, 'user', ${question.message}, ${question.token_count}, ${JSON.stringify(question.files)}::jsonb
        FROM ids RETURNING ${NODE})`
    : sql``;
  const result = await sql<MessageNode>`
    WITH ids AS MATERIALIZED (${ids})
    ${root}${insertQuestion}, a AS (
      INSERT INTO chat_messages AS m (id, chat_session_id, parent_message_id, message_type, message, is_complete, model_name)
      SELECT answer_id, ${args.sessionId}, coalesce(question_id, ${parentId}), 'assistant', ${args.answer.message}, false, ${args.answer.model_name}
      FROM ids RETURNING ${NODE}
    ), parent AS (
      UPDATE chat_messages SET latest_child_message_id = (SELECT coalesce(question_id, answer_id) FROM ids)
      WHERE id = ${toRoot ? sql`(SELECT id FROM found)` : sql`${args.parentId}`}
    ), session AS (
      UPDATE chat_sessions SET time_updated = now(),
        description = CASE WHEN description = '' THEN coalesce(${args.session.description}, '') ELSE description END,
        current_alternate_model = coalesce(${args.session.alternate_model}, current_alternate_model),
        current_temperature_override = coalesce(${args.session.temperature}::real, current_temperature_override)
      WHERE id = ${args.sessionId}
    )
    ${question ? sql`SELECT * FROM q UNION ALL ` : sql``}SELECT * FROM a`.execute(db);
  const answer = result.rows.find((row) => row.message_type === 'assistant')!;
  const asked = result.rows.find((row) => row.message_type === 'user') ?? null;
  return { question: asked, answer };
}

export function setLatestChild(db: DbExecutor, parentId: number, childId: number) {
  return db
    .updateTable('chat_messages')
    .set({ latest_child_message_id: childId })
    .where('id', '=', parentId)
    .executeTakeFirst();
}

export function completeMessage(
  db: DbExecutor,
  id: number,
  patch: {
    message: string;
    token_count: number;
    citations: Record<string, string>;
    context_docs: unknown[];
    reasoning: string | null;
    error: string | null;
    tool_calls?: unknown[];
  },
) {
  return db
    .updateTable('chat_messages')
    .set({
      ...patch,
      citations: JSON.stringify(patch.citations),
      context_docs: JSON.stringify(patch.context_docs),
      tool_calls: JSON.stringify(patch.tool_calls ?? []),
      is_complete: true,
    })
    .where('id', '=', id)
    .executeTakeFirst();
}

export function findMessage(db: DbExecutor, id: number) {
  return db.selectFrom('chat_messages').selectAll().where('id', '=', id).executeTakeFirst();
}

/** Stop is a timestamp so that any process can see it and a stop before a turn never cancels a later one. */
export function requestStop(db: DbExecutor, sessionId: string) {
  return db
    .updateTable('chat_sessions')
    .set((eb) => ({ stop_requested_at: eb.fn<Date>('now') }))
    .where('id', '=', sessionId)
    .executeTakeFirst();
}

export function findStopRequests(db: DbExecutor, sessionIds: string[]) {
  return db
    .selectFrom('chat_sessions')
    .select(['id', 'stop_requested_at'])
    .where('id', 'in', sessionIds)
    .where('stop_requested_at', 'is not', null)
    .execute();
}

export function findUserEmail(db: DbExecutor, userId: string) {
  return db.selectFrom('users').select(['email']).where('id', '=', userId).executeTakeFirst();
}

/** Appends lines of an answer's stream (`seq` numbers them from 0, in order). */
export async function appendStreamLines(
  db: DbExecutor,
  rows: Array<{ message_id: number; seq: number; line: string; last: boolean }>,
) {
  if (rows.length) await db.insertInto('chat_stream_lines').values(rows).execute();
}

/** An answer's stream lines from `fromSeq` on, in order. */
export function readStreamLines(db: DbExecutor, messageId: number, fromSeq: number, limit: number) {
  return db
    .selectFrom('chat_stream_lines')
    .select(['seq', 'line', 'last'])
    .where('message_id', '=', messageId)
    .where('seq', '>=', fromSeq)
    .orderBy('seq')
    .limit(limit)
    .execute();
}

/** The session's latest answer that has stream lines kept. */
export function findStreamedRun(db: DbExecutor, sessionId: string) {
  return db
    .selectFrom('chat_messages as m')
    .where('m.chat_session_id', '=', sessionId)
    .where('m.message_type', '=', 'assistant')
    .where((eb) =>
      eb.exists(
        eb.selectFrom('chat_stream_lines as l').select('l.seq').whereRef('l.message_id', '=', 'm.id'),
      ),
    )
    .select('m.id')
    .orderBy('m.id', 'desc')
    .limit(1)
    .executeTakeFirst();
}

/**
 * Whether the answer is saved (`complete`: a run whose process died never is) and whether its run's last
 * line is kept (`ended`).
 */
export async function findRunState(db: DbExecutor, messageId: number) {
  const row = await db
    .selectFrom('chat_messages as m')
    .where('m.id', '=', messageId)
    .select((eb) => [
      'm.is_complete',
      eb
        .exists(
          eb
            .selectFrom('chat_stream_lines as l')
            .select('l.seq')
            .where('l.message_id', '=', messageId)
            .where('l.last', '=', true),
        )
        .as('ended'),
    ])
    .executeTakeFirst();
  return { complete: row?.is_complete ?? true, ended: Boolean(row?.ended ?? true) };
}

/** Drops an answer's stream lines (it outgrew the size bound: it is read from the saved message instead). */
export function deleteStreamLines(db: DbExecutor, messageId: number) {
  return db.deleteFrom('chat_stream_lines').where('message_id', '=', messageId).execute();
}

/** Drops stream lines older than `cutoff`. */
export function deleteStreamLinesBefore(db: DbExecutor, cutoff: Date) {
  return db.deleteFrom('chat_stream_lines').where('created_at', '<', cutoff).execute();
}
