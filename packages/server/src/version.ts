import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** kas's version, from the server package's package.json (the one place it is written). */
export const KAS_VERSION: string = (
  JSON.parse(readFileSync(join(import.meta.dirname, '../package.json'), 'utf8')) as { version: string }
).version;
