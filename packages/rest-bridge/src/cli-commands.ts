/** The `kas` commands (started by cli.ts, which first restarts the process with kas's memory settings). */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import {
  AppError,
  apiKeysService,
  applyMemorySettings,
  ConfigError,
  createBackup,
  createDatabase,
  createLogger,
  createRuntime,
  DataDirLockedError,
  documentsService,
  evaluationService,
  heapLimitMb,
  identityService,
  KAS_VERSION,
  loadConfig,
  migrateToLatest,
  Role,
  releaseStartupGarbage,
  restoreBackup,
  StartupError,
  startWorker,
  unknownSettings,
  usersService,
  WORKER_TASKS,
  wasmOptimizing,
} from '@kas/server';
import { startServer } from './server.ts';

/** Each command's synopsis and what it does: the usage, and the short usage a wrong call of it is answered with. */
const COMMANDS: [synopsis: string, description: string][] = [
  ['serve [--no-worker]', 'Run the API (and the background worker unless --no-worker)'],
  ['worker', 'Run only the background worker (scale-out, with DATABASE_URL)'],
  ['migrate', 'Apply database migrations and exit'],
  ['reindex', 'Rebuild the search index from the database'],
  [
    'api-key create [--role <limited|basic|curator|admin>] [--name <name>] [--expires-in-days <n>] [--allow-personal-tokens]',
    'Create an API key and print it (role: basic unless --role says otherwise)',
  ],
  ['api-key list [--json]', 'List the API keys (masked) with their id, name, role and expiry'],
  [
    'user create --email <email> [--role <limited|basic|curator|admin>]',
    'Create a person (they sign in with OIDC or a personal token; role: basic unless --role says otherwise)',
  ],
  [
    'user token create --email <email> [--name <name>] [--expires-in-days <n>]',
    'Create a personal access token for a person and print it',
  ],
  [
    'backup <file> [--url <url>]',
    'Write a consistent backup of the embedded database, also while it runs (then through the API with ' +
      'KAS_API_KEY, an admin key); it does not hold the encryption key: keep that apart',
  ],
  [
    'restore <file> [--key-file <encryption.key>]',
    'Restore a backup into an empty KAS_DATA_DIR with the encryption key it was taken with (the key file, ' +
      'or KAS_ENCRYPTION_KEY)',
  ],
  [
    'eval <golden.jsonl> [--url <url>] [--no-chat] [--persona <id>] [--json]',
    'Measure retrieval and cited answers of the running service on questions with the document ids that ' +
      'answer them (KAS_API_KEY)',
  ],
  ['--version', 'Print the version of kas'],
];

const USAGE = `Usage: kas <command> [options]

Commands:
${COMMANDS.map(([synopsis, description]) => `  kas ${synopsis}\n      ${description}`).join('\n')}

The commands that open the embedded database (api-key, user, migrate, reindex) need the server stopped;
with DATABASE_URL (Postgres) they run beside it. Configuration comes from the environment; see the README.`;

/** The usage of the command whose synopsis starts with `command`. */
function usageOf(command: string): string {
  const lines = COMMANDS.filter(([synopsis]) => synopsis.startsWith(`${command} `) || synopsis === command);
  if (!command || !lines.length) return USAGE;
  return `Usage:\n${lines.map(([synopsis]) => `  kas ${synopsis}`).join('\n')}\n\nkas --help lists every command.`;
}

/** A wrong call: what is wrong, then the command's short usage (exit code 2). */
function wrongUse(problem: string, command: string): never {
  fail(`${problem}\n\n${usageOf(command)}`, 2);
}

/** Long-running commands apply kas's in-process memory settings before opening anything (see memory.ts). */
function prepareProcess() {
  applyMemorySettings(loadConfig());
}

/** A misspelt setting is otherwise ignored without a word: each unknown KAS_* variable is named at start. */
function warnUnknownSettings(logger: ReturnType<typeof createLogger>) {
  for (const { name, closest } of unknownSettings())
    logger.warn(
      closest
        ? `${name} is not a kas setting and is ignored: did you mean ${closest}?`
        : `${name} is not a kas setting and is ignored`,
    );
}

function fail(message: string, code = 1): never {
  process.stderr.write(`${message}\n`);
  process.exit(code);
}

async function serve(args: string[]) {
  const { values } = parseArgs({ args, options: { 'no-worker': { type: 'boolean', default: false } } });
  const config = loadConfig();
  const logger = createLogger(config);
  logger.info({ version: KAS_VERSION, pid: process.pid }, 'kas is starting');
  warnUnknownSettings(logger);
  const running = await startServer(config, { logger, worker: !values['no-worker'] });
  const { bootstrap } = running.runtime;
  if (bootstrap.created && bootstrap.generated) {
    process.stdout.write(
      `\nNo admin API key existed, so one was created. It is shown only this once:\n\n    ${bootstrap.key}\n\n` +
        `Use it as: curl -H "Authorization: Bearer ${bootstrap.key}" ${running.url}/api/admin/api-key\n\n`,
    );
  }
  releaseStartupGarbage();
  logger.info(
    {
      url: running.url,
      database: running.runtime.deps.dbKind,
      docs: `${running.url}/api/docs`,
      heap_limit_mb: heapLimitMb(),
      wasm_optimizing: wasmOptimizing(),
    },
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
  warnUnknownSettings(logger);
  const runtime = await createRuntime(config, { logger });
  const running = startWorker(runtime.deps, WORKER_TASKS);
  releaseStartupGarbage();
  logger.info(
    { database: runtime.deps.dbKind, heap_limit_mb: heapLimitMb(), wasm_optimizing: wasmOptimizing() },
    'kas worker started',
  );
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

/** The `--role` given, or `basic` (said on stderr, so a forgotten `--role admin` is noticed). */
function parseRole(value: string | undefined, command: string): Role {
  if (value === undefined) {
    process.stderr.write('No --role given: the role is basic.\n');
    return 'basic';
  }
  const role = Role.safeParse(value);
  if (!role.success) wrongUse(`--role must be one of ${Role.options.join(', ')} (got "${value}").`, command);
  return role.data as Role;
}

/** A plausible email address (the API's own check); exits with usage when not. */
function parseEmail(value: string | undefined, command: string): string {
  if (value === undefined) wrongUse('--email is missing.', command);
  const email = value.trim();
  if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email) || email.length > 320)
    wrongUse(`--email must be an email address (got "${value}").`, command);
  return email;
}

function parseDays(value: string | undefined): number | null {
  if (value === undefined) return null;
  const days = Number(value);
  if (!Number.isInteger(days) || days < 1 || days > 36_500)
    fail(`--expires-in-days must be a whole number of days from 1 to 36500 (got "${value}")`, 2);
  return days;
}

/**
 * Runs `work` against the configured database without starting the API. The embedded database is
 * opened by one process at a time: while the server runs on it, `command` says so and how to do the
 * same through the API (`instead`).
 */
async function withRuntime<T>(
  work: (deps: Awaited<ReturnType<typeof createRuntime>>['deps']) => Promise<T>,
  running?: { command: string; instead: string },
) {
  let runtime: Awaited<ReturnType<typeof createRuntime>>;
  try {
    runtime = await createRuntime(loadConfig(), {
      logger: createLogger({ KAS_LOG_LEVEL: 'warn' }),
      skipBootstrap: true,
    });
  } catch (error) {
    if (!(error instanceof DataDirLockedError) || !running) throw error;
    fail(
      `kas ${running.command} opens the embedded database itself, and a running kas holds it:\n  ${error.message}\n` +
        `Stop the server first, or ${running.instead}.`,
    );
  }
  try {
    return await work(runtime.deps);
  } finally {
    await runtime.close();
  }
}

async function createKey(args: string[]) {
  const { values } = parseArgs({
    args,
    options: {
      role: { type: 'string' },
      name: { type: 'string' },
      'expires-in-days': { type: 'string' },
      // A service account's key may mint personal tokens only when an admin says so (off by default).
      'allow-personal-tokens': { type: 'boolean', default: false },
    },
  });
  const role = parseRole(values.role, 'api-key create');
  const days = parseDays(values['expires-in-days']);
  const key = await withRuntime(
    (deps) =>
      apiKeysService.createApiKey({
        ctx: deps,
        input: {
          name: values.name ?? null,
          role,
          expires_in_days: days,
          allow_personal_tokens: values['allow-personal-tokens'],
        },
      }),
    { command: 'api-key create', instead: 'create the key through the API: POST /api/admin/api-key' },
  );
  process.stdout.write(`${key.api_key}\n`);
}

async function listKeys(args: string[]) {
  const { values } = parseArgs({ args, options: { json: { type: 'boolean', default: false } } });
  const keys = await withRuntime((deps) => apiKeysService.listApiKeys({ ctx: deps }), {
    command: 'api-key list',
    instead: 'list them through the API: GET /api/admin/api-key',
  });
  if (values.json) {
    process.stdout.write(`${JSON.stringify(keys, null, 2)}\n`);
    return;
  }
  const rows = [
    ['ID', 'NAME', 'ROLE', 'KEY', 'EXPIRES'],
    ...keys.map((key) => [
      String(key.api_key_id),
      key.api_key_name ?? '',
      key.api_key_role,
      key.api_key_display,
      key.expires_at ?? 'never',
    ]),
  ];
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  for (const row of rows)
    process.stdout.write(
      `${row
        .map((cell, column) => cell.padEnd(widths[column]!))
        .join('  ')
        .trimEnd()}\n`,
    );
}

async function createUser(args: string[]) {
  const { values } = parseArgs({
    args,
    options: { email: { type: 'string' }, role: { type: 'string' } },
  });
  const email = parseEmail(values.email, 'user create');
  const role = parseRole(values.role, 'user create');
  const user = await withRuntime((deps) => usersService.createPerson({ ctx: deps, email, role }), {
    command: 'user create',
    instead: 'create the person through the API: PUT /api/manage/admin/users',
  });
  process.stdout.write(`${JSON.stringify(user)}\n`);
}

async function createUserToken(args: string[]) {
  const { values } = parseArgs({
    args,
    options: {
      email: { type: 'string' },
      name: { type: 'string', default: 'cli' },
      'expires-in-days': { type: 'string' },
    },
  });
  const email = parseEmail(values.email, 'user token create');
  const days = parseDays(values['expires-in-days']);
  const token = await withRuntime(
    async (deps) => {
      const user = await usersService.findPersonByEmail({ ctx: deps, email });
      return identityService.createPersonalToken({
        ctx: deps,
        userId: user.id,
        input: { name: values.name, expiration_days: days },
      });
    },
    {
      command: 'user token create',
      instead: 'let the person create their own token through the API (POST /api/user/pats)',
    },
  );
  process.stdout.write(`${token.token}\n`);
}

async function backup(args: string[]) {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { url: { type: 'string' } },
  });
  const file = positionals[0];
  if (!file) wrongUse('The backup file to write is missing.', 'backup');
  const config = loadConfig();
  if (config.DATABASE_URL)
    fail(
      'With DATABASE_URL the database is Postgres: back it up with pg_dump and restore with pg_restore.',
      2,
    );
  let bytes: Uint8Array;
  try {
    bytes = await withRuntime((deps) => createBackup({ ctx: deps }));
  } catch (error) {
    if (!(error instanceof DataDirLockedError)) throw error;
    // The service runs on this directory: it takes the snapshot itself.
    if (!config.KAS_API_KEY)
      fail('kas is running on this data directory: set KAS_API_KEY to an admin key to back it up.', 2);
    const url = values.url ?? `http://${config.HOST}:${config.PORT}`;
    const res = await fetch(`${url}/api/admin/backup`, {
      headers: { authorization: `Bearer ${config.KAS_API_KEY}` },
    });
    if (!res.ok) fail(`The backup request failed: ${res.status} ${await res.text()}`);
    bytes = new Uint8Array(await res.arrayBuffer());
  }
  writeFileSync(file, bytes, { mode: 0o600 });
  process.stdout.write(
    `Wrote ${file} (${Math.round(bytes.length / 1024)} KB). It does not hold the encryption key: ` +
      `restoring it needs ${config.KAS_ENCRYPTION_KEY ? 'the same KAS_ENCRYPTION_KEY' : `a copy of ${join(config.KAS_DATA_DIR, 'encryption.key')}`}, kept apart from the backup.\n`,
  );
}

async function restore(args: string[]) {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { 'key-file': { type: 'string' } },
  });
  const file = positionals[0];
  if (!file) wrongUse('The backup file to restore is missing.', 'restore');
  const config = loadConfig();
  if (config.DATABASE_URL) fail('With DATABASE_URL the database is Postgres: restore it with pg_restore.', 2);
  const keyFile = values['key-file'];
  if (keyFile && !existsSync(keyFile)) fail(`The key file ${keyFile} does not exist.`, 2);
  const key = keyFile ? readFileSync(keyFile, 'utf8') : undefined;
  const { created_at } = await restoreBackup(config, new Uint8Array(readFileSync(file)), { key });
  process.stdout.write(`Restored the backup of ${created_at} into ${config.KAS_DATA_DIR}.\n`);
}

/** `kas eval`: the evaluation through the public API of a running service, as a user's client would call it. */
async function evaluate(args: string[]) {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      url: { type: 'string' },
      'no-chat': { type: 'boolean', default: false },
      persona: { type: 'string', default: '0' },
      json: { type: 'boolean', default: false },
    },
  });
  const file = positionals[0];
  if (!file) wrongUse('The golden set file (JSON lines) is missing.', 'eval');
  const config = loadConfig();
  if (!config.KAS_API_KEY) fail('Set KAS_API_KEY to an admin key of the service to evaluate.', 2);
  const personaId = Number(values.persona);
  if (!Number.isInteger(personaId) || personaId < 0) fail('--persona must be an agent id (0 or more).', 2);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    fail(`Cannot read ${file}.`, 2);
  }
  const cases = evaluationService.parseGoldenSet(text);
  const url = (values.url ?? `http://${config.HOST}:${config.PORT}`).replace(/\/$/, '');
  const call = async <T>(method: string, path: string, body?: unknown): Promise<T> => {
    const res = await fetch(`${url}/api${path}`, {
      method,
      headers: { authorization: `Bearer ${config.KAS_API_KEY}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (!res.ok) {
      const error = (await res.json().catch(() => null)) as { detail?: string } | null;
      fail(`${method} /api${path} failed: ${res.status} ${error?.detail ?? ''}`);
    }
    return (res.status === 204 ? undefined : await res.json()) as T;
  };
  const target: evaluationService.EvaluationTarget = {
    search: async (question) => {
      const found = await call<{ documents: { document_id: string }[] }>('POST', '/admin/search', {
        query: question,
        filters: {},
      });
      return found.documents.map((d) => d.document_id);
    },
    ask: async (question, persona) => {
      const answer = await call<{
        chat_session_id: string;
        error_msg: string | null;
        citation_info: { citation_number: number; document_id: string }[];
      }>('POST', '/chat/send-chat-message', {
        message: question,
        chat_session_info: { persona_id: persona, description: 'evaluation' },
        stream: false,
      });
      await call('DELETE', `/chat/delete-chat-session/${answer.chat_session_id}?hard_delete=true`);
      if (answer.error_msg) throw new Error(answer.error_msg);
      return evaluationService.citedDocuments(answer.citation_info);
    },
  };
  const report = await evaluationService.runEvaluation({
    cases,
    target,
    chat: !values['no-chat'],
    personaId,
    onProgress: (done, total) => process.stderr.write(`\revaluated ${done}/${total} questions`),
  });
  process.stderr.write('\n');
  process.stdout.write(
    `${values.json ? JSON.stringify(report, null, 2) : evaluationService.formatReport(report)}\n`,
  );
}

async function main(argv: string[]) {
  const [command, ...rest] = argv;
  if (command === 'serve' || command === 'worker' || command === 'reindex') prepareProcess();
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
      if (rest[0] === 'list') return listKeys(rest.slice(1));
      return wrongUse(
        rest[0] ? `Unknown command "api-key ${rest[0]}".` : 'api-key needs a command.',
        'api-key',
      );
    case 'backup':
      return backup(rest);
    case 'restore':
      return restore(rest);
    case 'eval':
      return evaluate(rest);
    case 'user':
      if (rest[0] === 'create') return createUser(rest.slice(1));
      if (rest[0] === 'token' && rest[1] === 'create') return createUserToken(rest.slice(2));
      return wrongUse(
        rest[0] ? `Unknown command "user ${rest.slice(0, 2).join(' ')}".` : 'user needs a command.',
        'user',
      );
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      process.stdout.write(`${USAGE}\n`);
      return;
    case '--version':
    case '-v':
    case 'version':
      process.stdout.write(`${KAS_VERSION}\n`);
      return;
    default:
      return fail(`Unknown command "${command}".\n\n${USAGE}`, 2);
  }
}

main(process.argv.slice(2)).catch((error: unknown) => {
  if (error instanceof ConfigError || error instanceof DataDirLockedError || error instanceof StartupError)
    fail(error.message);
  if (error instanceof AppError) fail(error.detail);
  if (error instanceof TypeError && (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS'))
    wrongUse(
      error.message,
      process.argv
        .slice(2, 4)
        .filter((word) => !word.startsWith('-'))
        .join(' '),
    );
  process.stderr.write(`kas failed to start: ${(error as Error)?.stack ?? String(error)}\n`);
  process.exit(1);
});
