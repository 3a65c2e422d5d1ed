/**
 * Where the search statistics maintenance after a bulk load spends its time, on Postgres: seeds
 * BENCH_MAINTENANCE_CHUNKS (default 100,000) chunks as the documents benchmark does (bare multi-row
 * inserts, the database's triggers weighing and counting them, the term counts folded every 20k chunks
 * as kas's maintenance does during a load), then runs one complete round step by step, as the search
 * index's `maintain()` does — fold the term deltas, re-weight every chunk when the averages the chunks
 * were weighted with drifted, rebuild the champion lists of frequent terms (together, in one pass over
 * the chunks), vacuum — timing each, with the sizes.
 * `node test/bench/maintenance.ts [embedded]` runs it on the embedded database instead.
 * `node test/bench/maintenance.ts complete <DATABASE_URL>` runs the search index's own maintenance until
 * done on an existing Postgres database (the documents benchmark's large sizes spawn it after their load)
 * and prints its time as JSON.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { configFrom, createDatabase, createLogger, migrateToLatest } from '@kas/server';
import {
  championsFor,
  createPostgresSearchIndex,
  DEFAULT_PLAN_LIMITS,
  keepOneSetOfAverages,
  rng,
  searchRepository,
} from '@kas/server/testing';
import { sql } from 'kysely';
import { startPostgres } from '../harness/postgres.ts';
import { ENCRYPTION_KEY, generatedChunks, seedChunks } from './documents.ts';

const CHUNKS = Number(process.env.BENCH_MAINTENANCE_CHUNKS ?? 100_000);

async function main(kind: 'postgres' | 'embedded') {
  const postgres = kind === 'postgres' ? await startPostgres() : undefined;
  const dataDir = mkdtempSync(join(tmpdir(), 'kas-bench-maintenance-'));
  const handle = await createDatabase(
    configFrom(
      postgres
        ? { DATABASE_URL: postgres.url, KAS_ENCRYPTION_KEY: ENCRYPTION_KEY }
        : { KAS_DATA_DIR: dataDir },
    ),
  );
  const db = handle.db;
  try {
    await migrateToLatest(db);
    const seeded = performance.now();
    await seedChunks(db, 0, CHUNKS, generatedChunks(rng(7)), { fold: true });
    const seedSeconds = (performance.now() - seeded) / 1000;
    const timed = async <T>(work: () => Promise<T>) => {
      const t0 = performance.now();
      const value = await work();
      return { value, seconds: Number(((performance.now() - t0) / 1000).toFixed(2)) };
    };
    const deltas = Number(
      (await sql<{ n: number }>`SELECT count(*)::int AS n FROM search_term_deltas`.execute(db)).rows[0]!.n,
    );
    const fold = await timed(() => searchRepository.foldTermDeltas(db));
    // As the index decides: record the averages, re-weighting only when the chunks' are 15 % off.
    const reweight = await timed(() => keepOneSetOfAverages(db, 1000));
    const builds: { term: string; df: number }[] = [];
    const champions = await timed(async () => {
      // Stale lists together in one pass over the chunks, as the index does after a bulk load.
      const stale = await searchRepository.staleChampionTerms(db, {
        minDf: DEFAULT_PLAN_LIMITS.alwaysFullDf,
        limit: 100_000,
      });
      await searchRepository.buildChampionsTogether(
        db,
        stale.map((t) => ({ ...t, size: championsFor(t.df) })),
      );
      builds.push(...stale);
      for (;;) {
        const stale = await searchRepository.staleChampionTerms(db, {
          minDf: DEFAULT_PLAN_LIMITS.alwaysFullDf,
          limit: 50,
        });
        if (!stale.length) break;
        for (const term of stale) {
          await searchRepository.buildChampions(db, term.term, term.df, championsFor(term.df));
          builds.push(term);
        }
      }
    });
    const vacuum = await timed(() =>
      searchRepository.vacuumSearchTables(db, { statistics: true, chunks: true }),
    );
    const sizes = (
      await sql<{ chunks: number; terms: number; champions: number; database: number }>`
        SELECT pg_total_relation_size('chunks')::float8 AS chunks, pg_total_relation_size('search_terms')::float8 AS terms,
          pg_total_relation_size('search_champions')::float8 AS champions,
          pg_database_size(current_database())::float8 AS database`.execute(db)
    ).rows[0]!;
    console.log(
      JSON.stringify(
        {
          database: kind,
          chunks: CHUNKS,
          seed_seconds: Math.round(seedSeconds),
          steps_seconds: {
            fold: fold.seconds,
            reweight: reweight.seconds,
            champion_lists: champions.seconds,
            vacuum_analyze: vacuum.seconds,
          },
          fold: { delta_rows: deltas, terms_folded: fold.value },
          reweight: { reweighted_every_chunk: reweight.value.reweighted },
          champions: { lists_built: builds.length, postings: builds.reduce((sum, b) => sum + b.df, 0) },
          size_mb: {
            database: Math.round(sizes.database / 1e6),
            chunks: Math.round(sizes.chunks / 1e6),
            search_terms: Math.round(sizes.terms / 1e6),
            search_champions: Math.round(sizes.champions / 1e6),
          },
        },
        null,
        2,
      ),
    );
  } finally {
    await handle.close();
    await postgres?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** The search index's own maintenance, until nothing is left, on an existing Postgres database. */
async function complete(url: string) {
  const handle = await createDatabase(configFrom({ DATABASE_URL: url, KAS_ENCRYPTION_KEY: ENCRYPTION_KEY }));
  // Each round's steps and durations on stderr (the index logs them at debug level).
  const logger = createLogger({ KAS_LOG_LEVEL: 'debug', KAS_LOG_FORMAT: 'json' }, process.stderr);
  const index = createPostgresSearchIndex(handle.db, { logger });
  try {
    const t0 = performance.now();
    await index.maintain();
    let rounds = 1;
    while (
      (
        await searchRepository.staleChampionTerms(handle.db, {
          minDf: DEFAULT_PLAN_LIMITS.alwaysFullDf,
          limit: 1,
        })
      ).length
    ) {
      await index.maintain();
      rounds++;
    }
    console.log(JSON.stringify({ seconds: Number(((performance.now() - t0) / 1000).toFixed(1)), rounds }));
  } finally {
    await index.close();
    await handle.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  if (process.argv[2] === 'complete') await complete(process.argv[3]!);
  else await main(process.argv[2] === 'embedded' ? 'embedded' : 'postgres');
}
