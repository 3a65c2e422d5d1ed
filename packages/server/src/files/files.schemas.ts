import { z } from 'zod';
import { FileDescriptor } from '../chat/chat.schemas.ts';

export const UploadFilesResponse = z
  .object({ files: z.array(FileDescriptor) })
  .meta({ id: 'UploadFilesResponse' });
export type UploadFilesResponse = z.infer<typeof UploadFilesResponse>;

export const MAX_UPLOAD_BYTES = 20 * 1024 * 1024;
