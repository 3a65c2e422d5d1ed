import { type Kysely, sql } from 'kysely';

/**
 * A chunk's BM25 terms and weights stay in its row uncompressed. Every candidate a search scores reads
 * both arrays, and the database compressed them (pglz) because the whole row was over its 2 KB threshold:
 * decompressing them was more than half of scoring a candidate (10,059 real-text chunks, three terms:
 * 65 → 31 ms for all of them, 6.5 → 3.1 µs each). Storage `MAIN` compresses them, or moves them out of
 * line, only when the row is still too large once every other column was compressed or moved out, and a
 * row target of 3,000 bytes (Postgres's default is ~2 KB) leaves room for ~170 distinct terms with
 * the row's other fields: the PostgreSQL manual's chunks hold 92 on average, 195 at most. The content stays
 * compressed, in line when it fits the target. The table's main part grows: the manual repeated to 1M
 * chunks, rewritten so, went from 1.65 to 2.6 GB (the whole table with its indexes 4.7 → 5.5 GB); both
 * ranking statements of a chat question there ~3 ms faster (p50 23 → 20 ms at once). Rows written before
 * keep their layout, read as before, until they are written again (re-weighting, `kas reindex`).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`ALTER TABLE chunks SET (toast_tuple_target = 3000)`.execute(db);
  await sql`ALTER TABLE chunks ALTER COLUMN bm25_terms SET STORAGE MAIN, ALTER COLUMN bm25_weights SET STORAGE MAIN`.execute(
    db,
  );
}
