import { z } from 'zod';
import { adminProcedure, router, serviceContext } from '../trpc.ts';
import { createBackup } from './backup.ts';

export const backupRouter = router({
  create: adminProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/admin/backup',
        tags: ['Backup'],
        summary: 'Download a consistent backup of the embedded database',
        description:
          'While the service runs; restore it with `kas restore <file>` into an empty data directory. It holds ' +
          'the encryption key of the data directory, so keep it as safe as the directory. With DATABASE_URL: 400 ' +
          '(use pg_dump). `kas backup <file>` calls this. Admin.',
      },
      download: { contentType: 'application/octet-stream', fileName: 'kas.backup' },
    })
    .input(z.object({}))
    .output(z.instanceof(Uint8Array).meta({ override: { type: 'string', format: 'binary' } }))
    .query(({ ctx }) => createBackup({ ctx: serviceContext(ctx) })),
});
