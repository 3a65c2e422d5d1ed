/**
 * `npm run -s example -- <name> [args…]`: runs `examples/<name>.ts` against the kas at KAS_URL with the key in
 * KAS_API_KEY, building the SDK it imports first when that is missing or out of date.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { buildSdk, root } from './sdk-build.ts';

const names = readdirSync(join(root, 'examples'))
  .filter((file) => file.endsWith('.ts'))
  .map((file) => file.slice(0, -3));
const name = process.argv[2]?.replace(/\.ts$/, '');
if (!name || !names.includes(name)) {
  process.stderr.write(
    `${name ? `No example named "${name}". ` : ''}Usage: KAS_URL=… KAS_API_KEY=… npm run -s example -- <${names.join('|')}> [args…]\n`,
  );
  process.exit(2);
}
buildSdk();
const file = join(root, 'examples', `${name}.ts`);
if (!existsSync(file)) process.exit(2);
const result = spawnSync(process.execPath, [file, ...process.argv.slice(3)], {
  stdio: 'inherit',
  env: process.env,
});
process.exit(result.status ?? 1);
