import type { Actor } from '../../auth/roles.ts';
import { AppError } from '../../errors.ts';
import * as chatRepository from '../chat.repository.ts';
import type { ChatStreamLine, ResumeStreamInput } from '../chat.schemas.ts';
import type { Channel } from './channel.ts';
import { withHeartbeat } from './heartbeat.ts';
import type { ChatDeps } from './sessions.ts';

/**
 * The runs this process is writing, by database (runtimes sharing a process never mix) and answer: a
 * resume in the process running the turn follows the turn's own lines as they are written, without
 * polling the table. A run is here from its start until its last line is kept.
 */
const liveRuns = new WeakMap<object, Map<number, LiveRun>>();

interface LiveRun {
  sessionId: string;
  channel: Channel<ChatStreamLine>;
}

function liveRunsOf(ctx: ChatDeps): Map<number, LiveRun> {
  let runs = liveRuns.get(ctx.db);
  if (!runs) {
    runs = new Map();
    liveRuns.set(ctx.db, runs);
  }
  return runs;
}

/** Whether a line ends its run: nothing follows a `stop` or an error line. */
function endsRun(line: ChatStreamLine): boolean {
  return 'error' in line || ('obj' in line && line.obj.type === 'stop');
}

/**
 * Keeps a run's lines in the database as they are produced, for clients that resume from any process.
 * A write is in flight at most once; lines produced meanwhile go in the next one (one statement each, so a
 * fast stream costs few writes). A run whose lines outgrow KAS_STREAM_BUFFER_MAX_KB stops being kept and
 * its lines are dropped: a client resuming it gets 404 and reads the saved message.
 */
export class StreamRecorder {
  private seq = 0;
  private bytes = 0;
  private pending: Array<{ message_id: number; seq: number; line: string; last: boolean }> = [];
  private writing: Promise<void> = Promise.resolve();
  private inFlight = false;
  private dropped = false;
  private readonly ctx: ChatDeps;
  private readonly messageId: number;

  constructor(ctx: ChatDeps, messageId: number) {
    this.ctx = ctx;
    this.messageId = messageId;
  }

  add(line: ChatStreamLine): void {
    if (this.dropped) return;
    const text = JSON.stringify(line);
    this.bytes += text.length;
    if (this.bytes > this.ctx.config.KAS_STREAM_BUFFER_MAX_KB * 1024) {
      this.drop();
      return;
    }
    this.pending.push({ message_id: this.messageId, seq: this.seq++, line: text, last: endsRun(line) });
    if (!this.inFlight) this.write();
  }

  private write() {
    this.inFlight = true;
    this.writing = this.writing
      .then(async () => {
        while (this.pending.length && !this.dropped) {
          const rows = this.pending;
          this.pending = [];
          await chatRepository.appendStreamLines(this.ctx.db, rows);
        }
      })
      .catch((error) => {
        this.ctx.logger.warn({ err: error }, 'keeping a chat stream for resumption failed');
        this.drop();
      })
      .finally(() => {
        this.inFlight = false;
      });
  }

  private drop() {
    this.dropped = true;
    this.pending = [];
    this.writing = this.writing
      .then(() => chatRepository.deleteStreamLines(this.ctx.db, this.messageId))
      .then(
        () => {},
        (error) => this.ctx.logger.warn({ err: error }, 'dropping a chat stream buffer failed'),
      );
  }

  /** Settles once every line added so far is written (or dropped). */
  async flushed(): Promise<void> {
    while (this.inFlight) await this.writing;
  }

  /**
   * Resumes in this process read the run's lines from `channel` (the lines this recorder keeps), also
   * before its first lines are written.
   */
  follows(sessionId: string, channel: Channel<ChatStreamLine>): void {
    liveRunsOf(this.ctx).set(this.messageId, { sessionId, channel });
  }

  /** Once the run has ended: its last line is kept, and resumes read the table from now on. */
  async finished(): Promise<void> {
    try {
      await this.flushed();
    } finally {
      liveRunsOf(this.ctx).delete(this.messageId);
    }
  }
}

/**
 * A recorder for a new run (none when KAS_STREAM_BUFFER_MAX_KB is 0), after dropping buffers older than
 * KAS_STREAM_BUFFER_MAX_AGE_S: each run start cleans up, so no timer is needed.
 */
export function startRecording(ctx: ChatDeps, messageId: number): StreamRecorder | null {
  if (ctx.config.KAS_STREAM_BUFFER_MAX_KB === 0) return null;
  const cutoff = new Date(Date.now() - ctx.config.KAS_STREAM_BUFFER_MAX_AGE_S * 1000);
  chatRepository
    .deleteStreamLinesBefore(ctx.db, cutoff)
    .catch((error) => ctx.logger.warn({ err: error }, 'cleaning up chat stream buffers failed'));
  return new StreamRecorder(ctx, messageId);
}

const SAVED_GRACE_MS = 2000;
/** A follower's first wait for another process's next lines (ms); it doubles up to KAS_STREAM_BUFFER_POLL_MS. */
const FIRST_WAIT_MS = 10;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The kept lines of a session's latest run from line `cursor` on, then the live run's lines as they are
 * written, until its last line. 404 when the session is not the
 * caller's or has no run kept (never streamed, or evicted: read the saved message instead).
 */
export async function* followRun({
  ctx,
  sessionId,
  userId,
  cursor,
  signal,
}: {
  ctx: ChatDeps;
  sessionId: string;
  userId: string;
  cursor: number;
  signal?: AbortSignal | undefined;
}): AsyncGenerator<ChatStreamLine> {
  const session = await chatRepository.findSession(ctx.db, sessionId);
  if (!session || session.user_id !== userId || session.deleted)
    throw new AppError('SESSION_NOT_FOUND', `Chat session ${sessionId} not found`);
  // A run of the session in this process is its latest, whether or not its first lines are written yet.
  let here: number | undefined;
  for (const [messageId, run] of liveRuns.get(ctx.db) ?? [])
    if (run.sessionId === sessionId && messageId > (here ?? 0)) here = messageId;
  const run = here !== undefined ? { id: here } : await chatRepository.findStreamedRun(ctx.db, sessionId);
  if (!run)
    throw new AppError(
      'NOT_FOUND',
      `Chat session ${sessionId} has no resumable answer (none was streamed, or it ended too long ago); read the session's messages`,
    );
  yield* followMessage({ ctx, messageId: run.id, cursor, signal });
}

/** `resume-stream`: the session's latest run from line `cursor`, with heartbeats while it is quiet. */
export async function* resumeStream({
  ctx,
  input,
}: {
  ctx: ChatDeps & { actor: Actor };
  input: ResumeStreamInput;
}): AsyncGenerator<ChatStreamLine> {
  yield* withHeartbeat(
    followRun({ ctx, sessionId: input.session_id, userId: ctx.actor.user_id, cursor: input.cursor }),
    ctx.config.KAS_CHAT_HEARTBEAT_MS,
  );
}

/**
 * One answer's kept lines from the start, following its live run, with heartbeats while it is quiet: for
 * surfaces that name an answer rather than a session (the OpenAI surface's completion id). 404 unless the
 * answer is the caller's and its lines are kept.
 */
export async function resumeAnswer({
  ctx,
  messageId,
}: {
  ctx: ChatDeps & { actor: Actor };
  messageId: number;
}): Promise<{ sessionId: string; personaId: number; startedAt: Date; lines: AsyncIterable<ChatStreamLine> }> {
  const notFound = new AppError(
    'NOT_FOUND',
    'No resumable answer with this id (it ended too long ago, or is not yours)',
  );
  const message = await chatRepository.findMessage(ctx.db, messageId);
  if (message?.message_type !== 'assistant') throw notFound;
  const session = await chatRepository.findSession(ctx.db, message.chat_session_id);
  if (!session || session.user_id !== ctx.actor.user_id || session.deleted) throw notFound;
  const live = liveRuns.get(ctx.db)?.has(messageId);
  if (!live && !(await chatRepository.readStreamLines(ctx.db, messageId, 0, 1)).length) throw notFound;
  return {
    sessionId: session.id,
    personaId: session.persona_id,
    startedAt: new Date(message.time_sent),
    lines: withHeartbeat(followMessage({ ctx, messageId, cursor: 0 }), ctx.config.KAS_CHAT_HEARTBEAT_MS),
  };
}

/**
 * The lines of one answer's run from `cursor` on, following it live until its last line: from the run
 * itself when it runs in this process, else from the table, read again 10 ms after a read that found
 * nothing new, each wait twice the last while nothing comes, up to KAS_STREAM_BUFFER_POLL_MS: a run that is
 * writing is followed closely, a quiet one costs a read per KAS_STREAM_BUFFER_POLL_MS.
 */
export async function* followMessage({
  ctx,
  messageId,
  cursor,
  signal,
}: {
  ctx: ChatDeps;
  messageId: number;
  cursor: number;
  signal?: AbortSignal | undefined;
}): AsyncGenerator<ChatStreamLine> {
  const here = liveRuns.get(ctx.db)?.get(messageId);
  if (here) {
    for await (const line of here.channel.from(cursor)) {
      if (signal?.aborted) return;
      yield line;
    }
    return;
  }
  let next = cursor;
  let wait = FIRST_WAIT_MS;
  let savedAt: number | null = null;
  let endedSeen = false;
  const deadline = Date.now() + ctx.config.KAS_STREAM_BUFFER_MAX_AGE_S * 1000;
  while (!signal?.aborted && Date.now() < deadline) {
    const rows = await chatRepository.readStreamLines(ctx.db, messageId, next, 1000);
    for (const row of rows) {
      yield JSON.parse(row.line) as ChatStreamLine;
      next = row.seq + 1;
      if (row.last) return;
    }
    if (rows.length) {
      wait = FIRST_WAIT_MS;
      continue;
    }
    // The answer is saved just before its last line is written; saved and still no last line a while
    // later means the run's process died (or its lines were evicted): the saved message is the answer.
    const state = await chatRepository.findRunState(ctx.db, messageId);
    // Ended: one more read, as its last line may have been written after the read above.
    if (state.ended) {
      if (endedSeen) return;
      endedSeen = true;
      continue;
    }
    if (savedAt === null && state.complete) savedAt = Date.now();
    if (savedAt !== null && Date.now() - savedAt > SAVED_GRACE_MS) return;
    await sleep(Math.min(wait, ctx.config.KAS_STREAM_BUFFER_POLL_MS));
    wait *= 2;
  }
}
