import { defineConfig } from 'vitest/config';

const serverTests = ['packages/*/src/**/*.test.ts'];
/** Each project starts only the databases its files use: the fast loop (`--project pglite`) starts no Postgres. */
const pglite = './test/harness/pglite-setup.ts';
const postgres = './test/harness/postgres-setup.ts';

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    tags: [
      {
        name: 'slow',
        description: 'measures size or scale: run by `npm test` and CI, left out of `npm run test:fast`',
      },
    ],
    projects: [
      {
        extends: true,
        test: { name: 'pglite', include: serverTests, globalSetup: [pglite], env: { KAS_TEST_DB: 'pglite' } },
      },
      {
        extends: true,
        test: {
          name: 'postgres',
          include: serverTests,
          globalSetup: [postgres],
          env: { KAS_TEST_DB: 'postgres' },
        },
      },
      {
        extends: true,
        test: {
          name: 'e2e',
          include: ['test/e2e/**/*.test.ts'],
          globalSetup: [pglite, postgres],
          env: { KAS_TEST_DB: 'pglite' },
        },
      },
    ],
  },
});
