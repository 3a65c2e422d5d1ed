import { limitedProcedure, router, serviceContext } from '../trpc.ts';
import { MAX_UPLOAD_FILES, UploadFilesInput, UploadFilesResponse } from './files.schemas.ts';
import * as filesService from './files.service.ts';

export const filesRouter = router({
  upload: limitedProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/chat/file',
        tags: ['Chat'],
        summary: 'Upload files to attach to a chat message',
        description:
          'Multipart form with one or more `files` fields (text, Markdown, PDF, DOCX). All or nothing: one ' +
          'unreadable file rejects the upload. Answers the descriptors to pass as `file_descriptors`.',
      },
      multipart: { field: 'files', maxFiles: MAX_UPLOAD_FILES },
    })
    .input(UploadFilesInput)
    .output(UploadFilesResponse)
    .mutation(({ ctx, input }) => filesService.uploadFiles({ ctx: serviceContext(ctx), files: input.files })),
});
