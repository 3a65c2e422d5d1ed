// The Postgres floor for the platform benchmark: bare express answering GET /keys with the same two
// statements kas runs for an authenticated GET /api/admin/api-key (the key's actor, then the key list),
// prepared, on a pool of the same size. DATABASE_URL names a database kas has migrated.
import { createHash } from 'node:crypto';
import express from 'express';
import pg from 'pg';

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
const ACTOR = `SELECT u.id AS user_id, u.role, k.id AS api_key_id FROM api_keys k JOIN users u ON u.id = k.user_id WHERE k.hashed_key = $1`;
const LIST = `SELECT k.id AS api_key_id, k.display AS api_key_display, k.name AS api_key_name, u.role AS api_key_role, u.id AS user_id FROM api_keys k JOIN users u ON u.id = k.user_id ORDER BY k.id`;

const app = express();
app.get('/keys', async (req, res) => {
  const key = String(req.headers.authorization ?? '').replace(/^Bearer /, '');
  const hash = createHash('sha256').update(key).digest('hex');
  const actor = await pool.query({ name: 'actor', text: ACTOR, values: [hash] });
  if (!actor.rows[0]) {
    res.status(401).json({ error_code: 'UNAUTHENTICATED', detail: 'Invalid API key' });
    return;
  }
  const keys = await pool.query({ name: 'list', text: LIST, values: [] });
  res.json(keys.rows);
});
const server = app.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ port: (server.address() as { port: number }).port })}\n`);
});
