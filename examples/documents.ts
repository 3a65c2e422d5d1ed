/**
 * Ingests a folder of Markdown files, updates one in place, searches them with and without filters, and
 * deletes them, through the SDK.
 * Usage: KAS_URL=http://127.0.0.1:8080 KAS_API_KEY=<admin key> npm run -s example -- documents [folder]
 * Exits non-zero on any mismatch.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { createKasClient, type IngestedDocument } from '@kas/sdk';

const baseUrl = process.env.KAS_URL ?? 'http://127.0.0.1:8080';
const apiKey = process.env.KAS_API_KEY;
const folder = process.argv[2] ?? join(import.meta.dirname, 'docs');
if (!apiKey) {
  console.error('Set KAS_API_KEY to an admin or curator key.');
  process.exit(2);
}

function check(condition: unknown, message: string): asserts condition {
  if (!condition) {
    console.error(`MISMATCH: ${message}`);
    process.exit(1);
  }
}

/** One document per file; each `## heading` starts a section whose link points at its anchor. */
function toDocument(path: string): IngestedDocument {
  const text = readFileSync(path, 'utf8');
  const title = /^# (.+)$/m.exec(text)?.[1] ?? basename(path, '.md');
  const parts = text.split(/^(?=## )/m);
  return {
    id: `example-${basename(path, '.md')}`,
    semantic_identifier: title,
    source: 'file',
    metadata: { folder: basename(folder), kind: 'policy' },
    sections: parts.map((part) => {
      const heading = /^## (.+)$/m.exec(part)?.[1];
      const anchor = heading ? `#${heading.toLowerCase().replace(/\W+/g, '-')}` : '';
      return { text: part.trim(), link: `https://intranet.example/${basename(path)}${anchor}` };
    }),
  };
}

const kas = createKasClient({ baseUrl, apiKey });
const files = readdirSync(folder).filter((f) => f.endsWith('.md'));
check(files.length > 0, `no Markdown files in ${folder}`);

for (const file of files) {
  const result = await kas.documents.ingest(toDocument(join(folder, file)));
  console.log(`ingested ${result.document_id} (already existed: ${result.already_existed})`);
}

const updated = toDocument(join(folder, files[0]!));
updated.sections.push({ text: 'This document was updated in place by the example.', link: null });
const again = await kas.documents.ingest(updated);
check(again.already_existed === true, 'posting the same id again updates in place (already_existed: true)');

const listed = await kas.documents.list();
for (const file of files)
  check(
    listed.some((d) => d.document_id === `example-${basename(file, '.md')}`),
    `${file} is listed`,
  );

const { documents } = await kas.documents.search('vacation days carried over');
check(
  documents[0]?.document_id === 'example-vacation-policy',
  'the vacation policy ranks first for a vacation question',
);
console.log(
  `search "vacation days carried over": ${documents.map((d) => `${d.document_id} (${d.score.toFixed(3)})`).join(', ')}`,
);
console.log(`  best passage: ${documents[0]?.blurb}`);

const filtered = await kas.documents.search('euros', { source_type: ['web'] });
check(
  filtered.documents.every((d) => d.source_type === 'web'),
  'the source_type filter holds',
);
const tagged = await kas.documents.search('euros', { tags: [{ tag_key: 'kind', tag_value: 'policy' }] });
check(
  tagged.documents.some((d) => d.document_id === 'example-expense-reports'),
  'the tag filter finds tagged documents',
);

for (const file of files) await kas.documents.delete(`example-${basename(file, '.md')}`);
const after = await kas.documents.search('vacation days carried over');
check(
  !after.documents.some((d) => d.document_id.startsWith('example-')),
  'deleted documents are gone from search',
);
console.log('OK');
