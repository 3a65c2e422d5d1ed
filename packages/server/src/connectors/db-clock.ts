import { type Expression, expressionBuilder, sql } from 'kysely';
import type { Database } from '../db/schema.ts';

const eb = expressionBuilder<Database>();

/** The database's clock (`now()`): every time the connectors' tables store is taken from it. */
export const now = () => eb.fn<Date>('now');

/**
 * `now()` minus a number of seconds, on the database's clock. Raw SQL: the builder cannot call a
 * function with named arguments (`make_interval(secs => …)`).
 */
export function secondsAgo(seconds: number | Expression<number | null>) {
  return sql<Date>`now() - make_interval(secs => ${seconds})`;
}
