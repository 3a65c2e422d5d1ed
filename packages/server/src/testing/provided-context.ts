declare module 'vitest' {
  export interface ProvidedContext {
    /** Superuser URL of the Postgres server the test harness started. */
    pgAdminUrl: string;
    /** Name of a migrated template database on that server. */
    pgTemplate: string;
    /** Path of a migrated PGlite data-dir dump that test files clone into memory. */
    pgliteTemplate: string;
  }
}

export {};
