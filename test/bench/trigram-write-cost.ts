/**
 * `node test/bench/trigram-write-cost.ts [--messages 3000] [--rounds 3] [--postgres]`: what the trigram
 * index on chat messages (migration 0018, `chat_messages_message_trgm_idx`) costs each message insert.
 * Migrates a fresh database (PGlite on a temporary data directory, or a throw-away real Postgres),
 * then, in alternating rounds, inserts the same messages (a user question and a ~1.5 KB assistant
 * answer with citations' text, as a chat turn writes them) with the index and with it dropped, each
 * insert its own statement as the chat path does. Prints mean, p50 and p99 per insert per variant,
 * the difference, and the index's size.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { migrateToLatest, openPGlite } from '@kas/server';
import { Kysely, PGliteDialect, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import { startPostgres } from '../harness/postgres.ts';

const { values } = parseArgs({
  options: {
    messages: { type: 'string', default: '3000' },
    rounds: { type: 'string', default: '3' },
    postgres: { type: 'boolean', default: false },
  },
});
const messages = Number(values.messages);
const rounds = Number(values.rounds);
const INDEX = `CREATE INDEX chat_messages_message_trgm_idx ON chat_messages USING gin (message gin_trgm_ops)
    WHERE message_type <> 'system'`;

const dir = mkdtempSync(join(tmpdir(), 'kas-trgm-'));
const postgres = values.postgres ? await startPostgres() : undefined;
let db: Kysely<any>;
if (postgres) {
  const admin = new pg.Client({ connectionString: postgres.url });
  await admin.connect();
  await admin.query('CREATE DATABASE kas_trgm');
  await admin.end();
  const pool = new pg.Pool({ connectionString: postgres.urlFor('kas_trgm'), max: 1 });
  pool.on('error', () => {}); // the server stops at the end
  db = new Kysely({ dialect: new PostgresDialect({ pool }) });
} else {
  db = new Kysely({ dialect: new PGliteDialect({ pglite: await openPGlite(dir) }) });
}
await migrateToLatest(db);
const user = await db
  .insertInto('users')
  .values({ email: 'bench@example.com', role: 'admin' })
  .returning('id')
  .executeTakeFirstOrThrow();

const WORDS =
  'invoice rollout kubernetes holiday budget quarterly incident onboarding latency replica migration contract renewal vendor audit roadmap'.split(
    ' ',
  );
/** Deterministic varied text: `n` words drawn from the list with numbers mixed in. */
function text(seed: number, n: number): string {
  const out: string[] = [];
  let x = seed * 2654435761;
  for (let i = 0; i < n; i++) {
    x = (x * 1103515245 + 12345) % 2147483648;
    out.push(i % 7 === 3 ? String(x % 10000) : WORDS[x % WORDS.length]!);
  }
  return out.join(' ');
}

/** Inserts `messages` messages (alternately user questions and assistant answers) and returns each insert's ms. */
async function insertAll(round: number): Promise<number[]> {
  const session = await db
    .insertInto('chat_sessions')
    .values({ user_id: user.id, description: `round ${round}` })
    .returning('id')
    .executeTakeFirstOrThrow();
  const times: number[] = [];
  let parent: number | null = null;
  for (let i = 0; i < messages; i++) {
    const isUser = i % 2 === 0;
    const started = performance.now();
    const row: { id: number } = await db
      .insertInto('chat_messages')
      .values({
        chat_session_id: session.id,
        parent_message_id: parent,
        message_type: isUser ? 'user' : 'assistant',
        message: isUser
          ? `What do we know about ${text(round * messages + i, 12)}?`
          : text(round * messages + i, 220),
        files: '[]',
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    times.push(performance.now() - started);
    parent = row.id;
  }
  return times;
}

const load = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
const all: Record<'with' | 'without', number[]> = { with: [], without: [] };
await insertAll(-1); // warm-up
for (let round = 0; round < rounds; round++) {
  for (const variant of round % 2 === 0 ? (['with', 'without'] as const) : (['without', 'with'] as const)) {
    await sql.raw('DROP INDEX IF EXISTS chat_messages_message_trgm_idx').execute(db);
    if (variant === 'with') await sql.raw(INDEX).execute(db);
    const times = await insertAll(round * 2 + (variant === 'with' ? 0 : 1));
    all[variant].push(...times);
    const total = times.reduce((a, b) => a + b, 0);
    process.stdout.write(
      `round ${round + 1} ${variant.padEnd(7)} index: ${(total / times.length).toFixed(3)} ms/insert (load ${load()})\n`,
    );
  }
}
await sql.raw('DROP INDEX IF EXISTS chat_messages_message_trgm_idx').execute(db);
await sql.raw(INDEX).execute(db);
const size = await sql<{
  index: string;
  table: string;
  count: number;
}>`SELECT pg_size_pretty(pg_relation_size('chat_messages_message_trgm_idx')) AS index, pg_size_pretty(pg_relation_size('chat_messages')) AS table, (SELECT count(*)::int FROM chat_messages) AS count`.execute(
  db,
);

const stats = (list: number[]) => {
  const sorted = [...list].sort((a, b) => a - b);
  const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;
  return { mean: list.reduce((a, b) => a + b, 0) / list.length, p50: at(0.5), p99: at(0.99) };
};
const w = stats(all.with);
const wo = stats(all.without);
process.stdout.write(
  `${postgres ? 'Postgres' : 'PGlite'}: ${rounds} rounds × ${messages} inserts per variant (half ~12-word questions, half ~220-word answers)\n` +
    `  with trigram index:    mean ${w.mean.toFixed(3)} ms, p50 ${w.p50.toFixed(3)} ms, p99 ${w.p99.toFixed(3)} ms\n` +
    `  without trigram index: mean ${wo.mean.toFixed(3)} ms, p50 ${wo.p50.toFixed(3)} ms, p99 ${wo.p99.toFixed(3)} ms\n` +
    `  cost of the index: +${(w.mean - wo.mean).toFixed(3)} ms per insert (${(((w.mean - wo.mean) / wo.mean) * 100).toFixed(0)} %)\n` +
    `  sizes after ${size.rows[0]!.count} messages: trigram index ${size.rows[0]!.index}, table ${size.rows[0]!.table}\n`,
);
await db.destroy();
await postgres?.stop();
rmSync(dir, { recursive: true, force: true });
