import { defineConfig } from 'tsdown';

export default defineConfig({
  entry: ['src/index.ts'],
  format: ['esm'],
  platform: 'neutral',
  target: 'es2022',
  // The tRPC router type stays a type-only import of @kas/server: bundling it would inline the whole
  // server's types (database, logger, zod). The REST client's types are generated and self-contained.
  deps: { neverBundle: ['@kas/server'] },
  dts: true,
  clean: true,
  // The plugin-timings notice (the declaration bundler is slow) is noise in every build's output.
  checks: { bundlerTimings: false },
});
