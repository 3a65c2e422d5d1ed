import type { Actor } from '../../auth/roles.ts';
import type { ServiceContext } from '../../context.ts';
import { AppError } from '../../errors.ts';
import * as filesRepository from '../files.repository.ts';
import type { ConnectorFileUploadInput, ConnectorFileUploadResponse } from '../sources.schemas.ts';

/** The metadata file of a zip, in the reference's layout: one entry per file, keyed by `filename`. */
export const METADATA_FILE = '.onyx_metadata.json';
const READABLE = /\.(txt|md|markdown|html?|pdf|docx)$/i;
/** The members of a zip that are kept: readable files and the metadata file, outside hidden folders and `__MACOSX/`. */
const ZIP_MEMBERS =
  /^(?!__MACOSX\/)(?!(?:.*\/)?\.(?!onyx_metadata\.json$))(?:.*\.(?:txt|md|markdown|html?|pdf|docx)|(?:.*\/)?\.onyx_metadata\.json)$/i;
/** Most files a zip may expand to. */
const MAX_ZIP_ENTRIES = 10_000;

const typeOf = (name: string): string => {
  if (/\.pdf$/i.test(name)) return 'application/pdf';
  if (/\.docx$/i.test(name)) return 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';
  if (/\.html?$/i.test(name)) return 'text/html';
  if (/\.(md|markdown)$/i.test(name)) return 'text/markdown';
  return 'text/plain';
};

function parseMetadata(name: string, data: Uint8Array): Record<string, unknown>[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(data).toString('utf8'));
  } catch {
    throw new AppError('INVALID_INPUT', `${name} is not valid JSON`);
  }
  const entries = Array.isArray(parsed) ? parsed : [parsed];
  if (
    !entries.every(
      (e) => e && typeof e === 'object' && typeof (e as { filename?: unknown }).filename === 'string',
    )
  )
    throw new AppError('INVALID_INPUT', `${name} must be a list of objects, each with a "filename"`);
  return entries as Record<string, unknown>[];
}

/**
 * Stores the files of a `file` connector: text, Markdown, HTML, PDF and DOCX files as they are, zips
 * expanded (their `.onyx_metadata.json` kept as one metadata file). The answer is the connector's config.
 */
export async function uploadConnectorFiles({
  ctx,
  input,
}: {
  ctx: ServiceContext<'db' | 'config' | 'cpu'> & { actor: Actor };
  input: ConnectorFileUploadInput;
}): Promise<ConnectorFileUploadResponse> {
  const { actor } = ctx;
  if (!input.files.length)
    throw new AppError('INVALID_INPUT', 'No files in the upload (multipart field "files")');
  const stored: { name: string; content_type: string; data: Uint8Array }[] = [];
  const metadata: Record<string, unknown>[] = [];
  let unzipped = 0;
  for (const file of input.files) {
    if (file.data.length === 0) throw new AppError('INVALID_INPUT', `"${file.name}" is empty`);
    const base = file.name.split('/').pop() ?? file.name;
    if (base === METADATA_FILE) {
      metadata.push(...parseMetadata(file.name, file.data));
    } else if (/\.zip$/i.test(file.name)) {
      // Inflated in the CPU pool: the entry count and declared sizes are checked first, then each
      // entry is inflated with a running cap (a 300 KB zip used to expand to 600 MB before any check).
      const entries = await ctx.cpu.run(
        'unzip',
        {
          subject: `"${file.name}"`,
          data: file.data,
          include: ZIP_MEMBERS,
          maxEntries: MAX_ZIP_ENTRIES,
          maxBytes: Math.max(0, ctx.config.KAS_MAX_UNZIPPED_MB * 1024 * 1024 - unzipped),
        },
        { subject: `"${file.name}"` },
      );
      for (const entry of entries) {
        unzipped += entry.data.length;
        const entryBase = entry.name.split('/').pop() ?? entry.name;
        if (entryBase === METADATA_FILE)
          metadata.push(...parseMetadata(`${file.name}/${entry.name}`, entry.data));
        else if (entry.data.length)
          stored.push({ name: entry.name, content_type: typeOf(entry.name), data: entry.data });
      }
    } else if (READABLE.test(file.name)) {
      stored.push({ name: file.name, content_type: typeOf(file.name), data: file.data });
    } else {
      throw new AppError(
        'UNSUPPORTED_MEDIA_TYPE',
        `Cannot index "${file.name}": upload .txt, .md, .html, .pdf, .docx or .zip files`,
      );
    }
  }
  if (!stored.length) throw new AppError('INVALID_INPUT', 'The upload holds no readable file');
  return ctx.db.transaction().execute(async (trx) => {
    const file_paths: string[] = [];
    for (const file of stored)
      file_paths.push(
        await filesRepository.insertConnectorFile(trx, { ...file, uploaded_by: actor.user_id }),
      );
    const zip_metadata_file_id = metadata.length
      ? await filesRepository.insertConnectorFile(trx, {
          name: METADATA_FILE,
          content_type: 'application/json',
          data: Buffer.from(JSON.stringify(metadata)),
          uploaded_by: actor.user_id,
        })
      : null;
    return { file_paths, file_names: stored.map((f) => f.name), zip_metadata_file_id };
  });
}
