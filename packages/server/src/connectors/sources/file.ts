import { z } from 'zod';
import {
  type JsonValue,
  type LoadArgs,
  type Source,
  type SourceBatch,
  type SourceDocument,
  type SourceDocumentFailure,
  type SourceOwner,
  validateWith,
} from './source.ts';

const FileConfig = z.object({
  file_locations: z.array(z.string().min(1)).min(1, 'must name at least one uploaded file'),
  file_names: z.array(z.string()).optional(),
  zip_metadata_file_id: z.string().min(1).nullish(),
});
export type FileConfig = z.infer<typeof FileConfig>;

const BATCH_SIZE = 20;
/** Keys of a metadata entry that are not free-form metadata. */
const RESERVED = new Set([
  'filename',
  'link',
  'file_display_name',
  'display_name',
  'title',
  'primary_owners',
  'secondary_owners',
  'doc_updated_at',
  'id',
]);

type Metadata = Record<string, unknown>;

const owners = (value: unknown): SourceOwner[] | undefined => {
  if (!Array.isArray(value)) return typeof value === 'string' ? owners([value]) : undefined;
  return value
    .filter((v): v is string => typeof v === 'string' && v.trim() !== '')
    .map((v) => (v.includes('@') ? { email: v.trim() } : { display_name: v.trim() }));
};

function toMetadata(entry: Metadata): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [key, value] of Object.entries(entry)) {
    if (RESERVED.has(key)) continue;
    if (typeof value === 'string') out[key] = value;
    else if (typeof value === 'number' || typeof value === 'boolean') out[key] = String(value);
    else if (Array.isArray(value)) out[key] = value.map(String);
  }
  return out;
}

async function readMetadata(args: LoadArgs<FileConfig, unknown>): Promise<Map<string, Metadata>> {
  const byName = new Map<string, Metadata>();
  const id = args.config.zip_metadata_file_id;
  if (!id) return byName;
  const file = await args.files.read(id);
  if (!file) return byName;
  try {
    const parsed = JSON.parse(file.content.toString('utf8')) as unknown;
    for (const entry of Array.isArray(parsed) ? parsed : [])
      if (entry && typeof entry === 'object' && typeof (entry as Metadata).filename === 'string') {
        const name = (entry as Metadata).filename as string;
        const base = name.split('/').pop() as string;
        byName.set(name, entry as Metadata);
        if (!byName.has(base)) byName.set(base, entry as Metadata);
      }
  } catch {
    args.logger.warn({ file_id: id }, 'unreadable file connector metadata ignored');
  }
  return byName;
}

async function toDocument(
  args: LoadArgs<FileConfig, unknown>,
  fileId: string,
  file: { name: string; content: Buffer; contentType: string | null },
  meta: Metadata | undefined,
): Promise<SourceDocument> {
  let text: string;
  let title: string | null = null;
  if (/\.html?$/i.test(file.name) || file.contentType === 'text/html') {
    const page = await args.extract.html(`"${file.name}"`, file.content);
    text = page.text;
    title = page.title;
  } else {
    text = await args.extract.text({
      name: file.name,
      contentType: file.contentType ?? 'application/octet-stream',
      data: file.content,
    });
  }
  text = text.replaceAll('\u0000', '');
  if (!text.trim()) throw new Error('The file contains no readable text');
  const str = (key: string) => (typeof meta?.[key] === 'string' ? (meta[key] as string) : null);
  const link = str('link');
  const updated = str('doc_updated_at');
  const display = str('file_display_name') ?? str('display_name') ?? str('title');
  return {
    id: `file:${fileId}`,
    semantic_identifier: display ?? title ?? (file.name.split('/').pop() as string),
    title: display ?? title,
    sections: [{ text, link }],
    metadata: meta ? toMetadata(meta) : undefined,
    doc_updated_at: updated && !Number.isNaN(Date.parse(updated)) ? new Date(updated) : null,
    primary_owners: owners(meta?.primary_owners),
    secondary_owners: owners(meta?.secondary_owners),
  };
}

async function* load(args: LoadArgs<FileConfig, unknown>): AsyncIterable<SourceBatch> {
  const locations = args.config.file_locations;
  const metadata = await readMetadata(args);
  let index = typeof args.checkpoint === 'number' ? args.checkpoint : 0;
  while (index < locations.length) {
    const documents: SourceDocument[] = [];
    const failures: SourceDocumentFailure[] = [];
    for (const fileId of locations.slice(index, index + BATCH_SIZE)) {
      if (args.signal.aborted) return;
      const file = await args.files.read(fileId);
      if (!file) {
        failures.push({ document_id: `file:${fileId}`, message: `Uploaded file ${fileId} not found` });
        continue;
      }
      const meta = metadata.get(file.name) ?? metadata.get(file.name.split('/').pop() as string);
      try {
        documents.push(await toDocument(args, fileId, file, meta));
      } catch (error) {
        if (args.signal.aborted) return;
        failures.push({
          document_id: `file:${fileId}`,
          message: `Could not read "${file.name}": ${(error as Error).message}`,
        });
      }
    }
    index += BATCH_SIZE;
    yield {
      documents,
      failures,
      checkpoint: index < locations.length ? (index as JsonValue) : null,
      total: locations.length,
    };
  }
}

/** Uploaded files (text, Markdown, HTML, PDF, DOCX, zips with `.onyx_metadata.json`); one document per file. */
export const fileSource: Source<FileConfig, Record<string, never>> = {
  name: 'file',
  displayName: 'File',
  needsCredential: false,
  inputTypes: ['load_state', 'poll'],
  fullListing: true,
  validateConfig: (raw) => validateWith(FileConfig, raw),
  validateCredential: (raw) => validateWith(z.object({}).passthrough(), raw) as never,
  load: (args) => load(args as LoadArgs<FileConfig, unknown>),
};
