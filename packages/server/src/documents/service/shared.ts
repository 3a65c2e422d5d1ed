import type { AppDeps } from '../../context.ts';

/** What the documents services use of the application. */
export type DocumentsDeps = Pick<AppDeps, 'db' | 'search' | 'logger' | 'ingestion'>;
