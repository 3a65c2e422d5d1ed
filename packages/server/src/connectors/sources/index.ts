import { confluenceSource } from './confluence.ts';
import { fileSource } from './file.ts';
import { githubSource } from './github.ts';
import { googleDriveSource } from './google-drive.ts';
import { slackSource } from './slack.ts';
import { type AnySource, SourceRegistry } from './source.ts';
import { webSource } from './web.ts';

/** Every built-in source; add yours here (one file per source under `sources/`). */
export function builtinSources(): AnySource[] {
  return [webSource, confluenceSource, googleDriveSource, fileSource, githubSource, slackSource];
}

/** The registry the app uses: the built-in sources, plus any a test or embedder adds. */
export function createSourceRegistry(extra: readonly AnySource[] = []): SourceRegistry {
  return new SourceRegistry([...builtinSources(), ...extra]);
}
