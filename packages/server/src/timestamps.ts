import { z } from 'zod';

/** An ISO 8601 date or date-time as a string; `parseTimestamp` reads it. */
export const TimestampString = z.union([z.iso.datetime({ offset: true, local: true }), z.iso.date()]).meta({
  type: 'string',
  format: 'date-time',
  description: 'ISO 8601 date or date-time; no offset means UTC',
});

/** Reads an ISO 8601 date or date-time; a time without an offset is UTC. */
export function parseTimestamp(value: string): Date {
  return new Date(/[zZ]|[+-]\d\d:?\d\d$/.test(value) || value.length === 10 ? value : `${value}Z`);
}

/** A timestamp as the API accepts it, parsed to a Date. */
export const TimestampInput = TimestampString.transform(parseTimestamp);

/** A timestamp as the API answers it: an ISO 8601 string. */
export const Timestamp = z.string().meta({ format: 'date-time', description: 'ISO 8601 timestamp' });
