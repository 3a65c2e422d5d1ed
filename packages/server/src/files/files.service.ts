import type { Actor } from '../auth/roles.ts';
import type { FileDescriptor } from '../chat/chat.schemas.ts';
import type { ServiceContext } from '../context.ts';
import { countTokens } from '../documents/chunking.ts';
import { AppError } from '../errors.ts';
import { extractLimitsOf, kindOf } from './files.parse.ts';
import * as filesRepository from './files.repository.ts';
import type { UploadedFile, UploadFilesResponse } from './files.schemas.ts';

/** Stores the text of each file for the caller; the descriptors go into `file_descriptors` of a message. */
export async function uploadFiles({
  ctx,
  files,
}: {
  ctx: ServiceContext<'db' | 'config' | 'cpu'> & { actor: Actor };
  files: UploadedFile[];
}): Promise<UploadFilesResponse> {
  const { actor } = ctx;
  if (!files.length) throw new AppError('INVALID_INPUT', 'No files in the upload (multipart field "files")');
  const parsed: Array<{ file: UploadedFile; text: string }> = [];
  const maxBytes = ctx.config.KAS_MAX_UPLOAD_MB * 1024 * 1024;
  for (const file of files) {
    if (file.data.length > maxBytes)
      throw new AppError(
        'PAYLOAD_TOO_LARGE',
        `"${file.name}" is larger than ${ctx.config.KAS_MAX_UPLOAD_MB} MB`,
      );
    if (file.data.length === 0) throw new AppError('INVALID_INPUT', `"${file.name}" is empty`);
    const text = (
      await ctx.cpu.run(
        'extractText',
        {
          name: file.name,
          contentType: file.content_type,
          data: file.data,
          limits: extractLimitsOf(ctx.config),
        },
        { subject: `"${file.name}"` },
      )
    ).replaceAll('\u0000', '');
    if (!text.trim())
      throw new AppError(
        'INVALID_INPUT',
        `"${file.name}" contains no readable text (a scanned document or an empty file cannot be attached)`,
      );
    parsed.push({ file, text });
  }
  // All or nothing: one unreadable file rejects the whole upload and stores none of it.
  return ctx.db.transaction().execute(async (trx) => {
    const out: FileDescriptor[] = [];
    for (const { file, text } of parsed) {
      const row = await filesRepository.insertFile(trx, {
        user_id: actor.user_id,
        name: file.name,
        content_type: file.content_type,
        file_type: kindOf(file.name, file.content_type) === 'text' ? 'plain_text' : 'document',
        size_bytes: file.data.length,
        text_content: text,
        token_count: await tokensOf(ctx, text),
      });
      out.push({ id: row.id, type: row.file_type, name: row.name });
    }
    return { files: out };
  });
}

/** A long text's tokens are counted in the CPU pool (~10 MB/s of tokenising held the event loop). */
function tokensOf(ctx: ServiceContext<'cpu'>, text: string): Promise<number> {
  if (text.length < 32_000) return Promise.resolve(countTokens(text));
  return ctx.cpu.run('countTokens', { text });
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The caller's files behind descriptors; 404 for unknown ids and other users' files alike. */
export async function loadOwnedFiles({
  ctx,
  actor,
  descriptors,
}: {
  ctx: ServiceContext<'db'>;
  actor: Actor;
  descriptors: FileDescriptor[];
}): Promise<Array<{ descriptor: FileDescriptor; text: string }>> {
  if (!descriptors.length) return [];
  for (const d of descriptors)
    if (!UUID.test(d.id)) throw new AppError('FILE_NOT_FOUND', `File ${d.id} not found`);
  const rows = await filesRepository.findFiles(
    ctx.db,
    descriptors.map((d) => d.id),
  );
  return descriptors.map((d) => {
    const row = rows.find((r) => r.id === d.id);
    if (!row || row.user_id !== actor.user_id) throw new AppError('FILE_NOT_FOUND', `File ${d.id} not found`);
    return { descriptor: { id: row.id, type: row.file_type, name: row.name }, text: row.text_content };
  });
}
