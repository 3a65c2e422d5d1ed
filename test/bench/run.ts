/**
 * `npm run bench -w test`: every benchmark in one run, printing its figures.
 */
import { benchPlatform, summarisePlatform } from './platform.ts';

console.log('# Platform: authenticated requests vs bare express');
const platform = await benchPlatform();
console.table(platform.load);
console.table(platform.auth);
for (const line of summarisePlatform(platform)) console.log(line);
