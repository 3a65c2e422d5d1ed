import { type Kysely, sql } from 'kysely';

/**
 * Champion lists of terms in more than 50,000 chunks now hold at least 1 % of their chunks (search/bm25.ts,
 * `championsFor`): such lists built before are marked stale — built at a frequency of 1, which maintenance
 * sees as moved by more than a quarter — so that the next maintenance round rebuilds them, while searches
 * keep reading them meanwhile (a null frequency would mean no list, and a frequent word without one is
 * sampled until maintenance builds it).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`UPDATE search_terms SET champions_df = 1 WHERE champions_df > 50000`.execute(db);
}
