// The baseline for the platform benchmark: a bare express 5 "hello" server in its own process. With
// BARE_LIKE_KAS=1 it also mounts helmet and answers kas's body for GET /api/admin/api-key (one key): the
// floor of what express itself costs for the same bytes on the wire, before any of kas's own work.
import express from 'express';
import helmet from 'helmet';

const likeKas = process.env.BARE_LIKE_KAS === '1';
const app = express();
if (likeKas) app.use(helmet({ strictTransportSecurity: false }));
const body = likeKas
  ? [
      {
        api_key_id: 1,
        api_key_display: 'svck-kkkk****kkkk',
        api_key_name: 'bootstrap admin',
        api_key_role: 'admin',
        user_id: 'de369830-2fdc-43e1-9e32-e89961494623',
        expires_at: null,
        allow_personal_tokens: false,
      },
    ]
  : { hello: 'world' };
app.get('/hello', (_req, res) => {
  res.json(body);
});
const server = app.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ port: (server.address() as { port: number }).port })}\n`);
});
