import { type Db, inBackground, sinceRequestStatement } from '../db/database.ts';
import type { Logger } from '../logger.ts';
import {
  championsFor,
  championsToScore,
  DEFAULT_PLAN_LIMITS,
  listsCurrent,
  type PlanLimits,
  planQuery,
  settledByLists,
} from './bm25.ts';
import { type ParsedQuery, parseQuery, toTsquery } from './query-parser.ts';
import * as searchRepository from './search.repository.ts';
import type { IndexedDocument, SearchHit, SearchIndex, SearchRequest } from './search-index.ts';
import { chunkKey, correctionWordsOf } from './search-index.ts';

/** Distinct words of a document, for typo correction (as prepared, else from its chunks). */
export function vocabularyOf(document: Pick<IndexedDocument, 'chunks' | 'vocabulary'>): string[] {
  if (document.vocabulary === undefined) return correctionWordsOf(document.chunks);
  return document.vocabulary ? document.vocabulary.split(' ') : [];
}

/** The best `limit` of several rankings' hits (a chunk in more than one has the same score in each). */
function bestOf(rankings: SearchHit[][], limit: number): SearchHit[] {
  const byChunk = new Map<string, SearchHit>();
  for (const hits of rankings) for (const hit of hits) byChunk.set(chunkKey(hit), hit);
  // As the ranking statement orders them (ties by document and chunk; ids compared by code point here).
  return [...byChunk.values()]
    .sort(
      (a, b) =>
        b.score - a.score ||
        (a.document_id < b.document_id ? -1 : a.document_id > b.document_id ? 1 : a.chunk_id - b.chunk_id),
    )
    .slice(0, limit);
}

/** Appends fallback hits after the ones already found, scored below them so the order stays by score. */
function appendFallback(hits: SearchHit[], more: SearchHit[], limit: number): SearchHit[] {
  const seen = new Set(hits.map((h) => chunkKey(h)));
  const floor = hits.length ? Math.min(...hits.map((h) => h.score)) : Number.POSITIVE_INFINITY;
  const added = more
    .filter((h) => !seen.has(chunkKey(h)))
    .map((h) => ({ ...h, score: Math.min(h.score * 0.5, floor * 0.99) }));
  return [...hits, ...added].slice(0, limit);
}

/** Seconds between a write and the maintenance it triggers (folding statistics, champion lists). */
const MAINTENANCE_DELAY_MS = 1000;
/** The chunk count below which the database weighs chunks with default average lengths (migration 0011). */
const MIN_CHUNKS_FOR_AVERAGES = 20;
/** Below this many chunks counted, writes do not postpone maintenance (see `written`). */
const YOUNG_INDEX_CHUNKS = 1000;
/** Relative change of an average length that makes maintenance re-weight every chunk. */
const REWEIGHT_DRIFT = 0.15;
/**
 * On Postgres too maintenance works in bounded statements, so that with admission control
 * (db/statement-gate.ts: background statements hold back while a request's run, and take turns) a
 * search never waits long behind one already running: re-weighting 1,000 chunks took 1–1.8 s and
 * folding every delta after a 5 MB document 0.4–0.6 s while 8 clients ingested 5 MB documents (2 cores).
 */
const REWEIGHT_BATCH = 200;
const FOLD_BATCH = 10_000;
/**
 * The embedded database runs each statement on the event loop's thread with its only connection, so
 * its maintenance works in short statements: re-weighting 1,000 chunks took 0.7–1.7 s there, folding
 * every pending delta after a 5 MB document 0.8 s, and a vacuum of the chunks 0.3–1.8 s (measured
 * while 8 clients ingested 5 MB documents, 2 cores). With these slices each statement takes ~5–20 ms.
 */
const EMBEDDED_REWEIGHT_BATCH = 50;
const EMBEDDED_FOLD_BATCH = 2000;
/** Embedded: the chunks' vacuum waits for requests to be this long idle (ms)… */
const CHUNKS_VACUUM_IDLE_MS = 5000;
/** …or for this long at most (ms), so that a server never idle still reclaims re-weighted rows. */
const CHUNKS_VACUUM_MAX_DELAY_MS = 10 * 60_000;
/** Maintenance rounds between two vacuums of the statistics (each fold rewrites many of their rows). */
const STATISTICS_VACUUM_EVERY = 10;
/** Stale champion lists rebuilt together in one pass over the chunks, at most. */
const MAX_TERMS_PER_PASS = 100_000;
/** Champion lists looked at per maintenance round (each rebuild costs a scan of its term's postings). */
const CHAMPION_REBUILDS_PER_ROUND = 50;
/** Words of the typo-correction vocabulary written per statement (~10 ms each). */
const VOCABULARY_PER_STATEMENT = 1000;
/** The longest sustained writes postpone maintenance. */
const MAX_MAINTENANCE_WAIT_MS = 15_000;
/**
 * Postings a search reads to make a provisional champion list on the embedded database, when a frequent
 * term has none yet (after a bulk load, until maintenance builds them all).
 */
const PROVISIONAL_POSTINGS = 3000;
/**
 * Embedded: terms more frequent than this get their champion lists from the pass over the chunks in
 * short statements, not from a scan of their postings (one statement: ~1 s per 20,000 postings at
 * 200k chunks on a loaded machine); a search meanwhile makes a provisional one.
 */
const EMBEDDED_LIST_SCAN_DF = 10_000;
/**
 * Queued writes (a statement's or a group's documents, migration 0037) whose chunks one statement puts
 * on the champion lists.
 */
const FOLLOW_BATCH = 20;
const EMBEDDED_FOLLOW_BATCH = 4;
/** Written documents past which the lists are rebuilt instead (and past a twentieth of the chunks). */
const FOLLOW_WRITES_BY_REBUILD = 5000;
/** Time a background round may spend rebuilding champion lists. */
const CHAMPION_BUDGET_MS = 250;
/** Champion lists are rebuilt in the background only after writes have been quiet this long. */
const QUIET_MS = 10_000;

/**
 * Keeps every stored weight on one pair of average lengths (bm25.ts, migration 0035), so that the same
 * text scores the same whenever it was written: once the index has averages, maintenance records
 * them, and every chunk written from then on is weighted with them; when the averages the chunks hold
 * are off today's by more than REWEIGHT_DRIFT (root mean square, kept by each fold), today's are
 * recorded and every chunk written before is re-weighted with them, in batches so that queries run in
 * between (`stopped` ends it between two); chunks written meanwhile hold them already. Returns the
 * chunks counted and whether it re-weighted.
 */
export async function keepOneSetOfAverages(
  db: Db,
  batch: number,
  stopped: () => boolean = () => false,
): Promise<{ chunks: number; reweighted: boolean }> {
  const stats = await searchRepository.lengthStatistics(db);
  const unchanged = { chunks: stats.chunks, reweighted: false };
  if (stats.chunks < MIN_CHUNKS_FOR_AVERAGES) return unchanged;
  if (!searchRepository.weightsDrifted(stats, REWEIGHT_DRIFT)) {
    // The chunks so far keep the averages of their write time (close to today's: not drifted).
    if (!stats.recorded) await searchRepository.recordWeightedLengths(db, stats.length, stats.titleLength);
    return unchanged;
  }
  const writtenBefore = await searchRepository.recordLengthsForReweighting(
    db,
    stats.length,
    stats.titleLength,
  );
  let after: { document_id: string; chunk_id: number } | null = null;
  do {
    if (stopped()) return { chunks: stats.chunks, reweighted: true };
    after = await searchRepository.reweightChunks(db, after, batch, writtenBefore);
  } while (after);
  await searchRepository.invalidateChampions(db);
  return { chunks: stats.chunks, reweighted: true };
}

export interface PostgresSearchIndex extends SearchIndex {
  /** Folds pending statistics and rebuilds stale champion lists now (tests, benchmarks, `kas reindex`). */
  maintain(): Promise<void>;
  close(): Promise<void>;
  /** Whether searches return the stored rows asked for (`SearchRequest.rows`) with the ranking. */
  readonly rowsWithRanking: boolean;
  /** What a query may score (the defaults, the embedded database's, or those given). */
  readonly limits: PlanLimits;
}

/**
 * The default index: BM25 (bm25.ts) over the `chunks` table itself. The database keeps each chunk's
 * tsvector, term weights and the document frequencies current in the transaction that writes the
 * chunk, so indexing only records the vocabulary used for typo correction; a maintenance round after
 * writes folds statistics and refreshes champion lists.
 */
export function createPostgresSearchIndex(
  db: Db,
  options: {
    fewResults?: number;
    logger?: Logger;
    limits?: Partial<PlanLimits>;
    /**
     * Return the rows a search asks for in its ranking statement instead of leaving them to the
     * caller's lookup. Worth it on PGlite, where every statement has a fixed cost in the embedded
     * engine (admin search at 100k chunks: 0.5 ms faster); not on a Postgres server, where the lookup
     * is one more round trip and the folded statement's window functions cost more than it (0.2–0.4
     * ms slower, measured on the benchmark's index).
     */
    rowsWithRanking?: boolean;
    /** Where searches read (a replica router, db/replicas.ts); writes and maintenance use `db`. */
    read?: Db;
    /**
     * The embedded database: maintenance in shorter statements still, and no pass over every chunk to
     * rebuild many champion lists at once.
     */
    embedded?: boolean;
  } = {},
): PostgresSearchIndex {
  const read = options.read ?? db;
  const embedded = options.embedded ?? false;
  const reweightBatch = embedded ? EMBEDDED_REWEIGHT_BATCH : REWEIGHT_BATCH;
  const foldBatch = embedded ? EMBEDDED_FOLD_BATCH : FOLD_BATCH;
  const followBatch = embedded ? EMBEDDED_FOLLOW_BATCH : FOLLOW_BATCH;
  const rowsWithRanking = options.rowsWithRanking ?? false;
  const few = options.fewResults ?? 3;
  const limits = { ...DEFAULT_PLAN_LIMITS, ...options.limits };
  // Words this process knows are stored: most of a new document's words are, so most inserts are skipped.
  const known = new Set<string>();
  const remember = (words: string[]) => {
    if (known.size + words.length > 200_000) known.clear();
    for (const word of words) known.add(word);
  };
  // Sorted, so that concurrent transactions take the vocabulary's row locks in one order.
  const unknownWords = (documents: readonly Pick<IndexedDocument, 'chunks' | 'vocabulary'>[]) => {
    const fresh = new Set<string>();
    for (const document of documents)
      for (const word of vocabularyOf(document)) if (!known.has(word)) fresh.add(word);
    return [...fresh].sort();
  };

  const reweightIfDrifted = async () => {
    const result = await keepOneSetOfAverages(db, reweightBatch, () => closed);
    countedChunks = result.chunks;
    return result.reweighted;
  };

  /**
   * Puts the chunks of the documents written since the last round on the champion lists whose floor
   * they pass (migration 0037), for at most CHAMPION_BUDGET_MS unless `untilDone`; after a bulk load
   * (more written documents than a twentieth of the chunks) marks every list stale instead, since one
   * pass over the chunks rebuilds them for less.
   */
  const followWrites = async (untilDone: boolean) => {
    const pending = await searchRepository.writtenDocumentsPending(db);
    if (!pending) return { documents: 0, marked: false, more: false };
    if (pending > Math.max(FOLLOW_WRITES_BY_REBUILD, countedChunks / 20)) {
      await searchRepository.rebuildListsForWrites(db);
      return { documents: pending, marked: true, more: false };
    }
    const started = performance.now();
    for (;;) {
      const n = await searchRepository.foldWrittenDocuments(db, followBatch);
      if (n === undefined) return { documents: pending, marked: false, more: true };
      if (n < followBatch) return { documents: pending, marked: false, more: false };
      if (closed || (!untilDone && performance.now() - started > CHAMPION_BUDGET_MS))
        return { documents: pending, marked: false, more: true };
    }
  };

  let timer: NodeJS.Timeout | null = null;
  let running: Promise<void> | null = null;
  /** Chunks counted at the last maintenance round (none known before the first). */
  let countedChunks = 0;
  let closed = false;
  let rounds = 0;
  let lastWrite = 0;
  /**
   * Work postponed until writes are quiet: vacuums of the statistics and chunks, dropping unused terms,
   * merging the full-text index's pending entries (owed from the start: writes may predate this process).
   */
  const owed = { statistics: false, chunks: false, zeros: false, postings: !embedded };
  /** Embedded: when the chunks' vacuum was first put off for requests (0: it is not). */
  let chunksOwedSince = 0;
  /** Embedded: whether the chunks' vacuum may run now: no request for a while, or put off long enough. */
  const chunksVacuumDue = () => {
    chunksOwedSince ||= Date.now();
    return (
      sinceRequestStatement() >= CHUNKS_VACUUM_IDLE_MS ||
      Date.now() - chunksOwedSince >= CHUNKS_VACUUM_MAX_DELAY_MS
    );
  };
  /**
   * One round: fold the statistics, re-weight if the averages drifted, then — once writes have been
   * quiet for QUIET_MS, so that bulk ingestion is not slowed by lists that would go stale again —
   * rebuild stale champion lists for at most CHAMPION_BUDGET_MS. Returns whether work is left.
   */
  const maintain = async (mode: { untilDone?: boolean } = {}): Promise<boolean> => {
    rounds++;
    const step = { began: performance.now() };
    const lap = () => {
      const at = performance.now();
      const ms = Math.round((at - step.began) * 10) / 10;
      step.began = at;
      return ms;
    };
    const quiet = mode.untilDone || Date.now() - lastWrite >= QUIET_MS;
    let folded = 0;
    for (;;) {
      const n = await searchRepository.foldTermDeltas(db, { limit: foldBatch, keepZeros: true });
      folded += n;
      if (n < foldBatch || closed) break;
    }
    // Dropping the terms no chunk holds any more scans every term: once writes are quiet.
    owed.zeros ||= folded > 0;
    if (quiet && owed.zeros) {
      await searchRepository.dropZeroFrequencies(db);
      owed.zeros = false;
    }
    const foldMs = lap();
    const reweighted = await reweightIfDrifted();
    const reweightMs = lap();
    const followed = await followWrites(mode.untilDone ?? false);
    const followMs = lap();
    let rebuilt = 0;
    let more = false;
    if (quiet && !closed) {
      // After a bulk load: every stale list in one pass over the chunks when one scan per term would
      // read more postings than there are chunks (Postgres: the pass is one long read transaction;
      // the embedded database's single connection cannot spare one, so there in short statements).
      const stale = await searchRepository.staleChampionTerms(db, {
        minDf: limits.alwaysFullDf,
        limit: MAX_TERMS_PER_PASS,
      });
      const chunks = (await searchRepository.lengthStatistics(db)).chunks;
      const together =
        stale.length > CHAMPION_REBUILDS_PER_ROUND && stale.reduce((sum, t) => sum + t.df, 0) > chunks;
      if (together && !embedded) {
        await searchRepository.buildChampionsTogether(
          db,
          stale.map((t) => ({ ...t, size: championsFor(t.df, limits) })),
          { copies: limits.copies },
        );
        rebuilt += stale.length;
      } else if (embedded) {
        // Embedded: a term's own scan is one statement as long as its postings; the lists of terms
        // too frequent for that are made by the pass too, however few.
        const pass = together ? stale : stale.filter((t) => t.df > EMBEDDED_LIST_SCAN_DF);
        if (pass.length) {
          const built = await searchRepository.buildChampionsInSteps(
            db,
            pass.map((t) => ({ ...t, size: championsFor(t.df, limits) })),
            { stop: () => closed, copies: limits.copies },
          );
          if (!built) return false;
          rebuilt += pass.length;
        }
      }
    }
    if (quiet) {
      const started = performance.now();
      for (;;) {
        const stale = await searchRepository.staleChampionTerms(db, {
          minDf: limits.alwaysFullDf,
          limit: CHAMPION_REBUILDS_PER_ROUND,
        });
        let done = 0;
        for (const term of stale) {
          if (closed || (!mode.untilDone && performance.now() - started > CHAMPION_BUDGET_MS)) break;
          await searchRepository.buildChampions(db, term.term, term.df, championsFor(term.df, limits), {
            copies: limits.copies,
          });
          done++;
        }
        rebuilt += done;
        more = done < stale.length || stale.length === CHAMPION_REBUILDS_PER_ROUND;
        if (!mode.untilDone || !more || closed) break;
      }
    } else {
      more = true;
    }
    const championsMs = lap();
    let statistics = reweighted || rebuilt > 0 || rounds % STATISTICS_VACUUM_EVERY === 0;
    let chunks = reweighted;
    if (!quiet) {
      // Only the deltas now (few rows after a fold); the rest once writes are quiet (a vacuum of the
      // chunks took 0.4–1.1 s on Postgres during a bulk load, and reads every chunk written since).
      owed.statistics ||= statistics;
      owed.chunks ||= chunks;
      statistics = chunks = false;
      if (owed.statistics || owed.chunks) more = true;
    } else {
      statistics ||= owed.statistics;
      chunks ||= owed.chunks;
      owed.statistics = owed.chunks = false;
    }
    if (embedded && chunks && !chunksVacuumDue()) {
      // The embedded database's vacuum of the chunks is one statement of seconds at its only
      // connection (1.9 s at 80k chunks, a search waiting all along): once requests are idle too.
      owed.chunks = true;
      chunks = false;
      more = true;
    }
    if (chunks) chunksOwedSince = 0;
    if (followed.more) more = true;
    if (folded || reweighted || rebuilt || statistics || chunks) {
      // Embedded: a statement per table, so that requests get the connection in between.
      await searchRepository.vacuumSearchTables(db, { statistics, chunks }, { separately: embedded });
    }
    // Postgres: the pending entries every search through the full-text index reads, once writes are
    // quiet (a vacuum of the chunks merges them too).
    owed.postings ||= folded > 0 && !embedded;
    if (quiet && owed.postings) {
      if (!chunks) await searchRepository.mergePendingPostings(db);
      owed.postings = false;
    }
    // Each step's duration: on the embedded database every statement runs on the event loop's thread.
    options.logger?.debug(
      {
        folded,
        foldMs,
        reweighted,
        reweightMs,
        followed: followed.documents,
        listsMarkedStale: followed.marked,
        followMs,
        rebuilt,
        championsMs,
        vacuum: folded || reweighted || rebuilt ? (statistics ? 'statistics' : 'deltas') : 'none',
        vacuumMs: lap(),
      },
      'search index maintenance round',
    );
    return more;
  };
  const runMaintenance = () => {
    firstPendingWrite = 0;
    running ??= inBackground(() => maintain())
      .then((more) => {
        // Lists left to rebuild: continue later, leaving room for queries and writes.
        if (more) schedule(Date.now() - lastWrite >= QUIET_MS ? MAINTENANCE_DELAY_MS : QUIET_MS);
      })
      .catch((error: unknown) => {
        if (!closed)
          options.logger?.warn(
            { err: error },
            'search index maintenance failed; retrying after the next write',
          );
      })
      .finally(() => {
        running = null;
      });
    return running;
  };
  const schedule = (delay = MAINTENANCE_DELAY_MS) => {
    if (closed || timer) return;
    timer = setTimeout(() => {
      timer = null;
      void runMaintenance();
    }, delay);
    timer.unref();
  };
  // Writes postpone maintenance (a debounce), so that sustained ingestion folds statistics every
  // MAX_MAINTENANCE_WAIT_MS rather than every second; readers add the pending deltas meanwhile.
  let firstPendingWrite = 0;
  const written = () => {
    const now = Date.now();
    lastWrite = now;
    if (!firstPendingWrite) firstPendingWrite = now;
    // A young index is folded a second after its first writes, even while they go on: until then the
    // database weighs chunks with assumed average lengths, and a load's first 15 s weighed so made a
    // 1M-chunk load's averages drift enough to re-weight every chunk (tens of minutes).
    const young = countedChunks < YOUNG_INDEX_CHUNKS;
    // Until it has averages at all (MIN_CHUNKS_FOR_AVERAGES counted), at once: every chunk weighted with
    // the assumed ones is re-weighted when the first fold finds the real ones (in the batch benchmark a
    // second of a bulk load, ~1,700 chunks: ~0.3 s of database time, 7 % of the load's, and the full-text
    // index's entries for each rewritten row).
    const unweighted = countedChunks < MIN_CHUNKS_FOR_AVERAGES;
    if (timer && (unweighted || (!young && now - firstPendingWrite < MAX_MAINTENANCE_WAIT_MS))) {
      clearTimeout(timer);
      timer = null;
    }
    schedule(unweighted ? 0 : MAINTENANCE_DELAY_MS);
  };

  /** Candidates and exact scores for a query plan; the exhaustive statement when a restrictive scope left too few. */
  const rank = async (
    parsed: ParsedQuery,
    words: string[],
    request: SearchRequest,
    stemmed = false,
  ): Promise<SearchHit[]> => {
    const stats = await searchRepository.queryTerms(read, words, { stemmed });
    const plan = planQuery(stats.chunks, stats.terms, limits);
    // A list missing (a new frequent term, or a bulk load's lists not built yet) is built here when
    // that reads few postings and no other build holds it; a longer one is left to maintenance (one
    // build read a common word's every posting: 44 s at 1M chunks), its term sampled meanwhile.
    for (const term of plan.champions) {
      if (term.champions_df !== null) continue;
      // On the embedded database a full build holds its only connection for as long as it reads the
      // term's postings (seconds for a common word at 1M chunks): for a term too frequent for that, a
      // provisional list from a bounded sample of them, until maintenance builds the real one.
      if (embedded && term.df > EMBEDDED_LIST_SCAN_DF) {
        term.champion_floor =
          (await searchRepository.buildChampions(db, term.term, term.df, championsFor(term.df, limits), {
            postings: PROVISIONAL_POSTINGS,
            copies: limits.copies,
          })) ?? null;
        term.champions_df = term.df;
        continue;
      }
      if (term.df > limits.buildOnDemandDf) {
        plan.sampled.push(term.term);
        continue;
      }
      const size = championsFor(term.df, limits);
      const floor = await searchRepository.buildChampions(db, term.term, term.df, size, {
        ifFree: true,
        copies: limits.copies,
      });
      if (floor === undefined) plan.sampled.push(term.term);
      else {
        term.champion_floor = floor;
        term.champions_df = term.df;
      }
    }
    // Maintenance builds them, in the process that wrote (here or a worker): a search does not start a
    // pass of its own beside it.
    plan.champions = plan.champions.filter((t) => !plan.sampled.includes(t.term));
    const args = {
      plan,
      must: toTsquery(parsed, { conditionsOnly: true }),
      filters: request.filters,
      access: request.access,
      limit: request.limit,
      rows: rowsWithRanking ? request.rows : undefined,
    };
    const ranked = {
      ...args,
      scoredChampions: championsToScore(request.limit, limits, plan),
      sampledChunks: limits.sampledChunks,
      // The sampled terms in a tenth of the chunks or more: the table's first pages hold the sample.
      sampleByScan: plan.sampled.every(
        (term) => (stats.terms.find((t) => t.term === term)?.df ?? 0) >= stats.chunks / 10,
      ),
    };
    // On a database server, the chunks holding every word of a query of frequent words and the other
    // candidates are ranked by two statements, each keeping its best `limit` (the union's best are
    // among them): for the golden set's questions at 1M real-text chunks the intersection took about
    // half of the single statement's 35 ms (p50). The embedded database has one connection, and one
    // statement. When the lists are behind the writes, both run at once. When they are current with
    // every write, the candidates they give come first: if their
    // `limit`-th best already scores at least what a chunk on no list can (`settledByLists`), the
    // intersection arm could only add copies of passages the lists hold, and is not run (at 1M
    // real-text chunks, 50 of the golden set's 68 questions for 25 results).
    const intersection = () =>
      searchRepository.bm25Search(read, {
        ...ranked,
        plan: { ...plan, full: [], champions: [], sampled: [] },
      });
    const others = () => searchRepository.bm25Search(read, { ...ranked, plan: { ...plan, conjunctive: [] } });
    let hits: SearchHit[];
    if (!plan.conjunctive.length || embedded || ranked.rows)
      hits = await searchRepository.bm25Search(read, ranked);
    else if (listsCurrent(plan, stats)) {
      hits = await others();
      if (!settledByLists(plan, stats, hits[request.limit - 1]?.score))
        hits = bestOf([hits, await intersection()], request.limit);
    } else hits = bestOf(await Promise.all([others(), intersection()]), request.limit);
    // Champion lists stand for frequent terms across all documents; when access or filters left fewer
    // visible chunks than asked for, score every visible chunk that contains a term instead.
    if (hits.length < request.limit && (plan.champions.length || plan.sampled.length))
      return searchRepository.bm25SearchAll(read, args);
    return hits;
  };

  return {
    kind: 'postgres',
    rowsWithRanking,
    limits,
    maintain: async () => {
      // Everything at once (the background works in rounds, after writes quieten).
      if (timer) clearTimeout(timer);
      timer = null;
      await running;
      if (!closed) await maintain({ untilDone: true });
    },
    async indexDocuments(documents) {
      written();
      const words = unknownWords(documents);
      // In slices: a large document brings tens of thousands of words (24,754 for 5 MB of text, one
      // 300 ms statement), and on the embedded database a statement holds its only connection. The
      // vocabulary only serves typo correction, so it need not be written in one transaction.
      for (let i = 0; i < words.length; i += VOCABULARY_PER_STATEMENT) {
        const slice = words.slice(i, i + VOCABULARY_PER_STATEMENT);
        await searchRepository.insertVocabulary(db, slice);
        remember(slice);
      }
    },
    newInTransaction(documents) {
      const words = unknownWords(documents);
      return {
        write: async (trx) => {
          if (words.length) await searchRepository.insertVocabulary(trx, words);
        },
        committed: () => {
          remember(words);
          written();
        },
      };
    },
    async deleteDocuments() {
      // Chunks are deleted with their document rows (and their statistics by the database); the
      // vocabulary keeps the words (harmless).
      written();
    },
    async clear() {
      known.clear();
      await searchRepository.clearVocabulary(db);
      // A rebuild recomputes every stored weight with today's average lengths, then the champion lists.
      await searchRepository.forgetWeightedLengths(db);
    },
    async close() {
      closed = true;
      if (timer) clearTimeout(timer);
      timer = null;
      await running;
    },
    async search(request: SearchRequest) {
      const { query, limit, fallbacks } = request;
      const parsed = parseQuery(query);
      if (!toTsquery(parsed)) return searchRepository.recentChunks(read, request);
      let hits = await rank(parsed, parsed.positiveWords, request);
      const threshold = fallbacks === false ? 0 : Math.min(limit, few);
      if (hits.length < threshold) {
        // Prefix fallback: words as typed may be the start of indexed terms ("replica" → "replication").
        const candidates = parsed.positiveWords.filter((w) => w.length >= 3);
        const expanded = await searchRepository.termsWithPrefix(read, candidates, 3);
        if (expanded.length) hits = appendFallback(hits, await rank(parsed, expanded, request, true), limit);
      }
      if (hits.length < threshold) {
        const corrections = await searchRepository.correctWords(read, parsed.positiveWords);
        if (corrections.size) {
          const corrected = parsed.positiveWords.map((w) => corrections.get(w) ?? w);
          hits = appendFallback(hits, await rank(parsed, corrected, request), limit);
        }
      }
      return hits;
    },
  };
}
