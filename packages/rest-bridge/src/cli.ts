#!/usr/bin/env node
import { parseArgs } from 'node:util';
import {
  apiKeysService,
  ConfigError,
  createDatabase,
  createLogger,
  createRuntime,
  DataDirLockedError,
  documentsService,
  loadConfig,
  migrateToLatest,
  Role,
  startWorker,
  WORKER_TASKS,
} from '@kas/server';
import { startServer } from './server.ts';

const USAGE = `Usage: kas <command> [options]

Commands:
  serve [--no-worker]                         Run the API (and the background worker unless --no-worker)
  worker                                      Run only the background worker (scale-out, with DATABASE_URL)
  migrate                                     Apply database migrations and exit
  reindex                                     Rebuild the search index from the database
  api-key create --role <basic|curator|admin> [--name <name>]
                                              Create an API key and print it

Configuration comes from the environment; see the README.`;

function fail(message: string, code = 1): never {
  process.stderr.write(`${message}\n`);
  process.exit(code);
}

async function serve(args: string[]) {
  const { values } = parseArgs({ args, options: { 'no-worker': { type: 'boolean', default: false } } });
  const config = loadConfig();
  const logger = createLogger(config);
  const running = await startServer(config, { logger, worker: !values['no-worker'] });
  const { bootstrap } = running.runtime;
  if (bootstrap.created && bootstrap.generated) {
    process.stdout.write(
      `\nNo admin API key existed, so one was created. It is shown only this once:\n\n    ${bootstrap.key}\n\n` +
        `Use it as: curl -H "Authorization: Bearer ${bootstrap.key}" ${running.url}/api/admin/api-key\n\n`,
    );
  }
  logger.info(
    { url: running.url, database: running.runtime.deps.dbKind, docs: `${running.url}/api/docs` },
    'kas is listening',
  );
  const shutdown = async (signal: string) => {
    logger.info({ signal }, 'shutting down');
    await running.close();
    process.exit(0);
  };
  process.once('SIGINT', () => void shutdown('SIGINT'));
  process.once('SIGTERM', () => void shutdown('SIGTERM'));
}

async function worker() {
  const config = loadConfig();
  const logger = createLogger(config);
  const runtime = await createRuntime(config, { logger });
  const running = startWorker(runtime.deps, WORKER_TASKS);
  const shutdown = async () => {
    await running.stop();
    await runtime.close();
    process.exit(0);
  };
  process.once('SIGINT', () => void shutdown());
  process.once('SIGTERM', () => void shutdown());
}

async function migrate() {
  const config = loadConfig();
  const database = await createDatabase(config);
  try {
    const applied = await migrateToLatest(database.db);
    process.stdout.write(applied.length ? `Applied: ${applied.join(', ')}\n` : 'Database is up to date.\n');
  } finally {
    await database.close();
  }
}

async function reindex() {
  const config = loadConfig();
  const runtime = await createRuntime(config, {
    logger: createLogger({ KAS_LOG_LEVEL: 'warn' }),
    skipBootstrap: true,
  });
  try {
    const started = Date.now();
    const { documents } = await documentsService.reindexAll({
      ctx: runtime.deps,
      onProgress: (n) => process.stderr.write(`\rreindexed ${n} documents`),
    });
    process.stdout.write(
      `\nReindexed ${documents} documents into ${runtime.deps.search.kind} in ${Date.now() - started} ms.\n`,
    );
  } finally {
    await runtime.close();
  }
}

async function createKey(args: string[]) {
  const { values } = parseArgs({
    args,
    options: { role: { type: 'string', default: 'basic' }, name: { type: 'string' } },
  });
  if (!Role.safeParse(values.role).success)
    fail(`--role must be one of ${Role.options.join(', ')} (got "${values.role}")`, 2);
  const config = loadConfig();
  const runtime = await createRuntime(config, {
    logger: createLogger({ KAS_LOG_LEVEL: 'warn' }),
    skipBootstrap: true,
  });
  try {
    const key = await apiKeysService.createApiKey({
      ctx: runtime.deps,
      input: { name: values.name ?? null, role: values.role as Role },
    });
    process.stdout.write(`${key.api_key}\n`);
  } finally {
    await runtime.close();
  }
}

async function main(argv: string[]) {
  const [command, ...rest] = argv;
  switch (command) {
    case 'serve':
      return serve(rest);
    case 'worker':
      return worker();
    case 'migrate':
      return migrate();
    case 'reindex':
      return reindex();
    case 'api-key':
      if (rest[0] === 'create') return createKey(rest.slice(1));
      return fail(USAGE, 2);
    case undefined:
    case 'help':
    case '--help':
      process.stdout.write(`${USAGE}\n`);
      return;
    default:
      return fail(`Unknown command "${command}".\n\n${USAGE}`, 2);
  }
}

main(process.argv.slice(2)).catch((error: unknown) => {
  if (error instanceof ConfigError || error instanceof DataDirLockedError) fail(error.message);
  if (error instanceof TypeError && (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS'))
    fail(`${error.message}\n\n${USAGE}`, 2);
  process.stderr.write(`kas failed to start: ${(error as Error)?.stack ?? String(error)}\n`);
  process.exit(1);
});
