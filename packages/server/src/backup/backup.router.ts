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
          'While the service runs; restore it with `kas restore <file> --key-file <encryption.key>` into an empty ' +
          'data directory. It does not hold the encryption key of the credentials: the restore needs the key ' +
          'file (or KAS_ENCRYPTION_KEY), kept apart from the backups. With DATABASE_URL: 400 (use pg_dump). ' +
          '`kas backup <file>` calls this. Admin.',
      },
      download: { contentType: 'application/octet-stream', fileName: 'kas.backup' },
    })
    .input(z.object({}))
    .output(z.instanceof(Uint8Array).meta({ override: { type: 'string', format: 'binary' } }))
    .query(({ ctx }) => createBackup({ ctx: serviceContext(ctx) })),
});
