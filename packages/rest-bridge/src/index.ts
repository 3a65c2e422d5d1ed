export { createHttpApp } from './app.ts';
export { buildOpenApiDocument } from './openapi.ts';
export { type RunningServer, startServer } from './server.ts';
