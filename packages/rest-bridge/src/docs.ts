import { createRequire } from 'node:module';
import express from 'express';

const require = createRequire(import.meta.url);
const swaggerUiDir: string = require('swagger-ui-dist').getAbsoluteFSPath();

const PAGE = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8" />
  <title>kas API reference</title>
  <link rel="stylesheet" href="/api/docs/assets/swagger-ui.css" />
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="/api/docs/assets/swagger-ui-bundle.js"></script>
  <script src="/api/docs/init.js"></script>
</body>
</html>`;

// A pasted key lives only as long as the page: browser storage would keep an admin key for any script
// of this origin to read. Earlier versions persisted it (Swagger UI's "authorized" item): it is removed.
const INIT = `try { window.localStorage.removeItem('authorized'); } catch (e) {}
window.ui = SwaggerUIBundle({
  url: '/api/openapi.json',
  dom_id: '#swagger-ui',
  deepLinking: true,
  // A pasted key lives as long as the page: kept in the browser's storage it would outlive the session
  // and be readable by any script of this origin.
  persistAuthorization: false,
});`;

/** The interactive API reference at /api/docs, served from swagger-ui-dist with no internet access. */
export function createDocsRouter(): express.Router {
  const docs = express.Router();
  docs.get('/', (_req, res) => {
    res.type('html').send(PAGE);
  });
  docs.get('/init.js', (_req, res) => {
    res.type('application/javascript').send(INIT);
  });
  docs.use('/assets', express.static(swaggerUiDir, { index: false, maxAge: '1h' }));
  return docs;
}
