/**
 * Writes the committed API artifacts from the procedures: `packages/sdk/openapi.json` and the SDK's
 * REST types `packages/sdk/src/generated/openapi.ts`. With `--check`, writes nothing and exits 1 when
 * the committed files differ from what the procedures produce.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildApiArtifacts } from './api-artifacts.ts';

const root = join(import.meta.dirname, '..');
const check = process.argv.includes('--check');
const artifacts = await buildApiArtifacts();
let drift = false;
for (const [relative, content] of Object.entries(artifacts)) {
  const path = join(root, relative);
  let current = '';
  try {
    current = readFileSync(path, 'utf8');
  } catch {}
  if (current === content) continue;
  if (check) {
    drift = true;
    process.stderr.write(`${relative} is out of date: run \`npm run generate\` and commit the result.\n`);
  } else {
    writeFileSync(path, content);
    process.stdout.write(`wrote ${relative}\n`);
  }
}
process.exit(drift ? 1 : 0);
