import { countTokens } from 'gpt-tokenizer';
import type { Actor } from '../auth/roles.ts';
import type { FileDescriptor } from '../chat/chat.schemas.ts';
import type { Db } from '../db/database.ts';
import { AppError } from '../errors.ts';
import { extractText, kindOf } from './files.parse.ts';
import * as filesRepository from './files.repository.ts';
import { MAX_UPLOAD_BYTES, type UploadFilesResponse } from './files.schemas.ts';

export interface UploadedFile {
  name: string;
  contentType: string;
  data: Buffer;
}

/** Stores the text of each file for the caller; the descriptors go into `file_descriptors` of a message. */
export async function uploadFiles({
  ctx,
  actor,
  files,
}: {
  ctx: { db: Db };
  actor: Actor;
  files: UploadedFile[];
}): Promise<UploadFilesResponse> {
  if (!files.length) throw new AppError('INVALID_INPUT', 'No files in the upload (multipart field "files")');
  const parsed: Array<{ file: UploadedFile; text: string }> = [];
  for (const file of files) {
    if (file.data.length > MAX_UPLOAD_BYTES)
      throw new AppError(
        'PAYLOAD_TOO_LARGE',
        `"${file.name}" is larger than ${MAX_UPLOAD_BYTES / 1024 / 1024} MB`,
      );
    if (file.data.length === 0) throw new AppError('INVALID_INPUT', `"${file.name}" is empty`);
    const text = (await extractText(file.name, file.contentType, file.data)).replaceAll('\u0000', '');
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
        content_type: file.contentType,
        file_type: kindOf(file.name, file.contentType) === 'text' ? 'plain_text' : 'document',
        size_bytes: file.data.length,
        text_content: text,
        token_count: countTokens(text),
      });
      out.push({ id: row.id, type: row.file_type, name: row.name });
    }
    return { files: out };
  });
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The caller's files behind descriptors; 404 for unknown ids and other users' files alike. */
export async function loadOwnedFiles({
  ctx,
  actor,
  descriptors,
}: {
  ctx: { db: Db };
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
