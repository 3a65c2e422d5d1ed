import { z } from 'zod';
import { FileDescriptor } from '../chat/chat.schemas.ts';

/** One file of a multipart upload, as the REST adapter hands it to the procedure. */
export const UploadedFile = z.object({
  name: z.string().min(1),
  content_type: z.string(),
  data: z.instanceof(Uint8Array).meta({ override: { type: 'string', format: 'binary' } }),
});
export type UploadedFile = z.infer<typeof UploadedFile>;

export const UploadFilesInput = z.object({ files: z.array(UploadedFile) });
export type UploadFilesInput = z.infer<typeof UploadFilesInput>;

export const UploadFilesResponse = z
  .object({ files: z.array(FileDescriptor) })
  .meta({ id: 'UploadFilesResponse' });
export type UploadFilesResponse = z.infer<typeof UploadFilesResponse>;

/** Most files in one upload. */
export const MAX_UPLOAD_FILES = 10;
