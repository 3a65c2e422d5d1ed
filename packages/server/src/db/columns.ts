import type { ColumnType } from 'kysely';

/** A timestamp the database fills in on insert (`DEFAULT now()`). */
export type CreatedAt = ColumnType<Date, Date | string | undefined, Date | string>;

/** A `timestamptz` column written by the application. */
export type Timestamp = ColumnType<Date, Date | string, Date | string>;

/**
 * A `jsonb` column: read as `T`, written as its JSON text. Every such column has a default, so an insert
 * may leave it out.
 */
export type Json<T> = ColumnType<T, string | undefined, string>;
