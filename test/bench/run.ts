/**
 * `npm run bench -w test`: every benchmark in one run, printing its figures.
 */
import { benchPlatform, type LoadResult } from './platform.ts';

console.log('# Platform: authenticated request vs bare express');
const platform = await benchPlatform();
console.table(platform);
const [bare, health, keys] = platform as [LoadResult, LoadResult, LoadResult];
console.log(
  `authenticated GET /api/admin/api-key: ${((keys.requests_per_s / bare.requests_per_s) * 100).toFixed(0)}% of bare express req/s (target ≥ 50%)`,
);
console.log(
  `authentication adds ${(keys.p50_ms - health.p50_ms).toFixed(2)} ms p50 over /api/health (target < 1 ms)`,
);
