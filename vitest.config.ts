import { defineConfig } from 'vitest/config';

const serverTests = ['packages/*/src/**/*.test.ts'];

export default defineConfig({
  test: {
    globalSetup: ['./test/harness/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    projects: [
      { extends: true, test: { name: 'pglite', include: serverTests, env: { KAS_TEST_DB: 'pglite' } } },
      { extends: true, test: { name: 'postgres', include: serverTests, env: { KAS_TEST_DB: 'postgres' } } },
      {
        extends: true,
        test: { name: 'e2e', include: ['test/e2e/**/*.test.ts'], env: { KAS_TEST_DB: 'pglite' } },
      },
    ],
  },
});
