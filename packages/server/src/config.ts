import { isIP } from 'node:net';
import { z } from 'zod';
import { closest } from './edit-distance.ts';

const booleanString = z.enum(['true', 'false', '1', '0']).transform((v) => v === 'true' || v === '1');
const optionalString = z
  .string()
  .optional()
  .transform((v) => (v === '' ? undefined : v));
const optionalUrl = optionalString.pipe(z.url().optional());

/** Whether a `KAS_TRUST_PROXY` list is one express can apply: addresses, CIDRs (bits or a v4 mask) and its names. */
function validTrustProxy(setting: boolean | number | string): boolean {
  if (typeof setting !== 'string') return true;
  return setting.split(',').every((entry) => {
    const [address, bits, extra] = entry.trim().split('/');
    if (extra !== undefined || !address) return false;
    if (bits === undefined)
      return ['loopback', 'linklocal', 'uniquelocal'].includes(address) || isIP(address) > 0;
    const version = isIP(address);
    if (/^\d+$/.test(bits)) return version > 0 && Number(bits) <= (version === 4 ? 32 : 128);
    return version === 4 && isIP(bits) === 4;
  });
}

export const API_KEY_PATTERN = /^svck-[A-Za-z0-9_-]{43}$/;

const ConfigSchema = z.object({
  PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  HOST: z.string().min(1).default('127.0.0.1'),
  KAS_DATA_DIR: z.string().min(1).default('./.kas-data'),
  DATABASE_URL: optionalString.pipe(
    z
      .string()
      .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// or postgresql:// URL')
      .optional(),
  ),
  /** Postgres streaming replicas (comma-separated URLs) that serve searches, listings and history; writes stay on DATABASE_URL. */
  DATABASE_READ_URLS: z
    .string()
    .default('')
    .transform((v) =>
      v
        .split(',')
        .map((u) => u.trim())
        .filter(Boolean),
    )
    .pipe(z.array(z.string().regex(/^postgres(ql)?:\/\//, 'must be postgres:// or postgresql:// URLs'))),
  /** A replica further behind the primary than this (ms) is skipped until it catches up. */
  KAS_REPLICA_MAX_LAG_MS: z.coerce.number().int().min(0).max(3_600_000).default(2000),
  MEILI_URL: optionalUrl,
  MEILI_API_KEY: optionalString,
  MEILI_INDEX: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,400}$/, 'must be a Meilisearch index uid')
    .default('kas_chunks'),
  KAS_BOOTSTRAP_ADMIN_KEY: optionalString.pipe(
    z.string().regex(API_KEY_PATTERN, 'must be svck- followed by 43 base64url characters').optional(),
  ),
  KAS_ENCRYPTION_KEY: optionalString.pipe(
    z
      .string()
      .regex(/^[A-Za-z0-9+/=_-]{43,88}$/, 'must be 32 random bytes, base64 or base64url encoded')
      .optional(),
  ),
  KAS_LLM_PROVIDER: z.enum(['builtin', 'openai', 'anthropic']).default('builtin'),
  KAS_LLM_BASE_URL: optionalUrl,
  KAS_LLM_API_KEY: optionalString,
  KAS_LLM_MODEL: optionalString,
  /** More models of the provider that any user may pick (`llm_override.model_name`, an agent's model). */
  KAS_LLM_MODELS: optionalString.transform((v) =>
    (v ?? '')
      .split(',')
      .map((m) => m.trim())
      .filter(Boolean),
  ),
  /** Whether the configured model calls tools (search, actions); false: agents search first, actions are not run. */
  KAS_LLM_TOOL_CALLING: booleanString.default(true),
  KAS_LLM_CONTEXT_TOKENS: optionalString.pipe(
    z
      .string()
      .regex(/^\d+$/, 'must be a number of tokens')
      .transform(Number)
      .pipe(z.number().min(512))
      .optional(),
  ),
  KAS_EMBEDDING_BASE_URL: optionalUrl,
  KAS_EMBEDDING_MODEL: optionalString,
  KAS_EMBEDDING_API_KEY: optionalString,
  KAS_HARD_DELETE_CHATS: booleanString.default(false),
  /** Internal: the quiet time after which a chat stream sends a `chat_heartbeat` line (tests shorten it). */
  KAS_CHAT_HEARTBEAT_MS: z.coerce.number().int().min(10).max(3_600_000).default(15_000),
  /** Largest stream kept per chat answer for resuming it, in KB (0: streams are not kept, never resumable). */
  KAS_STREAM_BUFFER_MAX_KB: z.coerce.number().int().min(0).max(1_048_576).default(4096),
  /** How long a chat answer's stream is kept for resuming it, in seconds from its start. */
  KAS_STREAM_BUFFER_MAX_AGE_S: z.coerce.number().int().min(1).max(604_800).default(600),
  /** The longest wait of a resumed stream between reads of the lines a run in another process writes, in ms (it reads again after 10 ms, doubling while nothing new comes). */
  KAS_STREAM_BUFFER_POLL_MS: z.coerce.number().int().min(5).max(10_000).default(100),
  KAS_RATE_LIMIT_PER_MINUTE: z.coerce.number().int().min(0).default(600),
  /** How long SIGTERM waits for requests in flight, streams and the worker's batch before closing connections. */
  KAS_SHUTDOWN_GRACE_S: z.coerce.number().min(0).max(3600).default(10),
  /** The admin key `kas backup` sends to a running server. */
  KAS_API_KEY: optionalString,
  /** Largest request body, in MB (413 beyond). */
  KAS_MAX_BODY_MB: z.coerce.number().positive().max(1024).default(20),
  /** Browser origins allowed to call the API (comma-separated); unset: CORS off. */
  KAS_CORS_ORIGINS: optionalString,
  /** Failed authentications per client address per minute before its refusals become 429; 0 disables. */
  KAS_AUTH_FAILURES_PER_MINUTE: z.coerce.number().int().min(0).default(30),
  /** Refused webhook deliveries per client address per minute before its refused deliveries become 429; 0 disables. */
  KAS_WEBHOOK_FAILURES_PER_MINUTE: z.coerce.number().int().min(0).default(60),
  /**
   * Which proxies' `X-Forwarded-For` names the client (express `trust proxy`): `false` (the default: the
   * socket's address), `true` (any), a hop count, or comma-separated addresses, CIDRs and the names
   * `loopback`, `linklocal`, `uniquelocal`.
   */
  KAS_TRUST_PROXY: z
    .string()
    .trim()
    .default('false')
    .transform((value): boolean | number | string =>
      value === 'true'
        ? true
        : value === 'false' || value === ''
          ? false
          : /^\d+$/.test(value)
            ? Number(value)
            : value,
    )
    .refine(validTrustProxy, {
      message:
        'must be true, false, a hop count, or comma-separated addresses, CIDRs, loopback, linklocal, uniquelocal',
    }),
  /** Largest file accepted by an upload, in MB (413 beyond). */
  KAS_MAX_UPLOAD_MB: z.coerce.number().positive().max(1024).default(20),
  /** Largest multipart upload request, all files and fields together, in MB (413 beyond). */
  KAS_MAX_UPLOAD_REQUEST_MB: z.coerce.number().positive().max(4096).default(100),
  /** Most text fields in a multipart upload (413 beyond). */
  KAS_MAX_UPLOAD_FIELDS: z.coerce.number().int().min(0).max(1000).default(10),
  /** Largest text field in a multipart upload, in KB (413 beyond). */
  KAS_MAX_UPLOAD_FIELD_KB: z.coerce.number().positive().max(10_240).default(64),
  /** Hosts and CIDRs that outbound requests may reach although private, loopback or link-local (comma-separated). */
  KAS_OUTBOUND_ALLOWLIST: z
    .string()
    .default('')
    .refine((v) => parseAllowlist(v).invalid.length === 0, {
      message:
        'must be comma-separated hosts, IP addresses or CIDRs (e.g. 127.0.0.1,10.0.0.0/8,wiki.internal)',
    }),
  /** Longest wait for an outbound response's headers and for each next piece of its body (ms). */
  KAS_OUTBOUND_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(30_000),
  /** Longest outbound exchange including the body (ms). */
  KAS_OUTBOUND_TOTAL_TIMEOUT_MS: z.coerce.number().int().min(100).max(3_600_000).default(120_000),
  /** Largest outbound response body (bytes). */
  KAS_OUTBOUND_MAX_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .default(50 * 1024 * 1024),
  /** Retries of idempotent outbound requests after network errors, 429, 502, 503, 504. */
  KAS_OUTBOUND_RETRIES: z.coerce.number().int().min(0).max(10).default(3),
  /** The embedded database's buffer cache (MB); it stays in the process's memory for good once filled. */
  KAS_PGLITE_SHARED_BUFFERS_MB: z.coerce.number().int().min(1).max(4096).default(16),
  /**
   * A second embedded database on a thread of its own computes the tsvectors of a bulk load's chunks
   * (db/text-thread.ts): ~250 MB more while it runs. `auto`: on with two cores or more and 3 GiB of
   * memory or more for the process (cgroup limit or the machine's).
   */
  KAS_PGLITE_TEXT_THREAD: z.enum(['auto', 'true', 'false']).default('auto'),
  /** kas tunes V8 and the C allocator for a small footprint (restarting itself once on start); false: Node's defaults. */
  KAS_MEMORY_TUNING: booleanString.default(true),
  /**
   * V8's optimising compiler for the embedded database's WebAssembly: `false` keeps it on the baseline
   * compiler (`--liftoff-only`: ~30 % slower, but no ~500 MB compile); `auto`: `false` when the process
   * may use less than 1.5 GiB (cgroup limit or the machine's memory).
   */
  KAS_WASM_OPTIMIZE: z.enum(['auto', 'true', 'false']).default('auto'),
  /**
   * V8's young-generation semi-space (MB); 0: V8's own size (~32 MB, young generation ~100 MB). Unset: 8 on
   * the embedded database, 32 with `DATABASE_URL` (memory.ts).
   */
  KAS_HEAP_SEMI_SPACE_MB: z.coerce.number().int().min(0).max(256).optional(),
  /**
   * A full garbage collection runs when V8's heap has grown this much (%) beyond its live set; 0: V8's own
   * choice (1.1–4×). Unset: 30 on the embedded database, V8's own with `DATABASE_URL` (memory.ts).
   */
  KAS_HEAP_GROWTH_PERCENT: z.coerce.number().int().min(0).max(1000).optional(),
  /** Hard cap on V8's heap (MB; kas restarts itself with --max-old-space-size); 0: no cap of kas's own. */
  KAS_MAX_HEAP_MB: z.coerce
    .number()
    .int()
    .min(0)
    .max(65_536)
    .refine((v) => v === 0 || v >= 128, { message: 'must be 0 (no cap) or at least 128 MB' })
    .default(0),
  /**
   * Ingestion transactions that run at once (each a group of documents); 0: half the machine's cores, at
   * least 1, so that searches and chats keep CPU while documents are written.
   */
  KAS_INGEST_WRITERS: z.coerce.number().int().min(0).max(64).default(0),
  /**
   * Postgres: ingestion transactions that run at once during a bulk load (a full group of documents
   * waiting and no search or chat statement in this process for 2 s); 0: the machine's cores, at least 2.
   * Not below `KAS_INGEST_WRITERS` (set it to 1, or to `KAS_INGEST_WRITERS`, for no bulk mode).
   */
  KAS_BULK_INGEST_WRITERS: z.coerce.number().int().min(0).max(64).default(0),
  /**
   * Postgres: longest time (ms) a background statement (ingestion, search maintenance) holds back while
   * this process runs a request's statements, so that searches and chats get the database's CPU first; 0: never.
   */
  KAS_BACKGROUND_YIELD_MS: z.coerce.number().int().min(0).max(10_000).default(100),
  /**
   * Postgres: most background statements (ingestion, search maintenance) that run at once, so that the
   * rest of the database's CPU stays with searches and chats (per process); 0: as many as ingestion
   * writers (`KAS_INGEST_WRITERS`), which maintenance then takes turns with.
   */
  KAS_BACKGROUND_STATEMENTS: z.coerce.number().int().min(0).max(256).default(0),
  /** Worker threads that parse files and chunk large documents; 0: one fewer than the machine's cores (at least 1). */
  KAS_WORKER_THREADS: z.coerce.number().int().min(0).max(64).default(0),
  /** Heap of one parsing thread (MB): a file that needs more to read is refused (413). */
  KAS_WORKER_MEMORY_MB: z.coerce.number().int().min(64).max(16_384).default(512),
  /** Longest time reading one file or chunking one document may run in a worker thread (ms; 413 beyond); a task waits at most as long for a free thread (503 beyond). */
  KAS_WORKER_TIMEOUT_MS: z.coerce.number().int().min(100).max(3_600_000).default(120_000),
  /** Most chunks of one document (~512 tokens, ~2 KB of English each); a larger one is refused (413), a connector's listed as a per-document error. */
  KAS_MAX_DOCUMENT_CHUNKS: z.coerce.number().int().min(1).max(1_000_000).default(20_000),
  /** Most documents one `POST /svc-api/ingestion/batch` request may carry (413 beyond; at most 1000). */
  KAS_INGESTION_BATCH_MAX: z.coerce.number().int().min(1).max(1000).default(100),
  /** Most characters of text one file or page may yield when read (413 for an upload, a per-document error for a connector). */
  KAS_MAX_EXTRACTED_CHARS: z.coerce.number().int().min(1000).max(1_000_000_000).default(10_000_000),
  /** Most pages of a PDF that is read (413 beyond). */
  KAS_MAX_PDF_PAGES: z.coerce.number().int().min(1).max(1_000_000).default(5000),
  /** Most an archive (a DOCX, a connector upload's zip) may expand to, in MB, checked before and while inflating (413 beyond). */
  KAS_MAX_UNZIPPED_MB: z.coerce.number().positive().max(16_384).default(100),
  /** Index attempts one worker process runs at once (each pair runs at most one). */
  KAS_CONNECTOR_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(2),
  /** How often a running attempt records a heartbeat and checks for a pause (ms). */
  KAS_CONNECTOR_HEARTBEAT_MS: z.coerce.number().int().min(50).max(60_000).default(1000),
  /** A running attempt without a heartbeat for this long is resumed by another worker (ms). */
  KAS_CONNECTOR_STALE_MS: z.coerce.number().int().min(500).max(3_600_000).default(30_000),
  /** First retry delay after a failed attempt (ms); doubled per consecutive failure, at most an hour. */
  KAS_CONNECTOR_BACKOFF_MS: z.coerce.number().int().min(0).max(3_600_000).default(60_000),
  /** Tries of one queued webhook event (backoff as above) before it is marked failed. */
  KAS_CONNECTOR_EVENT_TRIES: z.coerce.number().int().min(1).max(100).default(5),
  /** Most pages one web crawl takes (sitemap entries or followed links); the rest of a larger site is not indexed. */
  KAS_WEB_MAX_PAGES: z.coerce.number().int().min(1).max(10_000_000).default(100_000),
  /** Uploads for file connectors that no connector references are removed after this many hours. */
  KAS_CONNECTOR_UPLOAD_GRACE_HOURS: z.coerce.number().min(0).max(8760).default(24),
  /** Longest time one action call (OpenAPI request or MCP tool call) may take in chat (ms). */
  KAS_ACTION_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(30_000),
  /** Largest action response (bytes); a larger one is reported to the model as an error. */
  KAS_ACTION_MAX_RESPONSE_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .max(50 * 1024 * 1024)
    .default(256 * 1024),
  /** Model calls in one chat turn, tool rounds included (the last must answer). */
  KAS_CHAT_MAX_TOOL_CYCLES: z.coerce.number().int().min(2).max(20).default(6),
  /** The address people reach kas at, for OAuth redirect URIs; default http://localhost:PORT. */
  KAS_PUBLIC_URL: optionalUrl,
  /** Accept bearer JWTs (ID tokens or JWT access tokens) from this OpenID provider as signed-in people. */
  KAS_OIDC_ISSUER: optionalUrl,
  /** The `aud` the tokens must carry (usually the client id registered for kas); required with the issuer. */
  KAS_OIDC_AUDIENCE: optionalString,
  /** Emails (comma-separated, case-insensitive) that are admins when they sign in. */
  KAS_OIDC_ADMIN_EMAILS: z.string().default(''),
  /** The token claim that lists the person's groups at the provider. */
  KAS_OIDC_GROUPS_CLAIM: z.string().min(1).default('groups'),
  /** Provider groups (comma-separated) whose members are admins / curators when they sign in. */
  KAS_OIDC_ADMIN_GROUPS: z.string().default(''),
  KAS_OIDC_CURATOR_GROUPS: z.string().default(''),
  /** Create a `basic` user the first time an unknown email signs in. */
  KAS_OIDC_AUTO_PROVISION: booleanString.default(true),
  /**
   * Accept tokens that carry no `email_verified` claim (the provider vouches for every email it puts
   * in a token). `email_verified` present and anything but boolean `true` is refused regardless.
   */
  KAS_OIDC_TRUST_UNVERIFIED_EMAIL: booleanString.default(false),
  /** Signature algorithms accepted (comma-separated); `none` and HMAC are never accepted. */
  KAS_OIDC_ALGORITHMS: z
    .string()
    .default('RS256,PS256,ES256,EdDSA')
    .refine((v) => v.split(',').every((a) => /^(RS|PS|ES)(256|384|512)$|^EdDSA$|^Ed25519$/.test(a.trim())), {
      message: 'must be asymmetric JWS algorithms such as RS256,ES256',
    }),
  /** Tolerance for `exp`/`nbf`/`iat` against the provider's clock, in seconds. */
  KAS_OIDC_CLOCK_SKEW_S: z.coerce.number().int().min(0).max(600).default(60),
  /** Internal: least time between two JWKS fetches for unknown key ids (tests shorten it). */
  KAS_OIDC_JWKS_COOLDOWN_MS: z.coerce.number().int().min(0).max(3_600_000).default(30_000),
  /**
   * Who signs MCP clients in: `kas` (kas is its own OAuth authorization server for /mcp) or `oidc` (the
   * Protected Resource Metadata names KAS_OIDC_ISSUER, whose tokens kas already accepts).
   */
  KAS_MCP_AUTHORIZATION_SERVER: z.enum(['kas', 'oidc']).default('kas'),
  /**
   * The client secret kas sends to KAS_OIDC_ISSUER's token endpoint when a person signs in there to
   * approve an MCP client (unset: kas is a public client, with PKCE).
   */
  KAS_OIDC_CLIENT_SECRET: optionalString,
  /** Lifetime of an OAuth access token kas issues to MCP clients, in seconds. */
  KAS_OAUTH_ACCESS_TOKEN_TTL_S: z.coerce.number().int().min(60).max(86_400).default(3600),
  /** Lifetime of an OAuth refresh token (each refresh rotates it and starts a new lifetime), in days. */
  KAS_OAUTH_REFRESH_TOKEN_TTL_DAYS: z.coerce.number().int().min(1).max(365).default(30),
  /**
   * How long start-up waits for a Postgres that does not accept connections yet (not listening, starting
   * up, its host not resolvable yet), in seconds; 0: fail at once. A refused password or a missing database fails at once.
   */
  KAS_DB_CONNECT_TIMEOUT_S: z.coerce.number().min(0).max(3600).default(60),
  /** A database statement that takes at least this long is logged at `warn` with its SQL (no parameters); 0: never. */
  KAS_SLOW_QUERY_MS: z.coerce.number().int().min(0).max(3_600_000).default(1000),
  KAS_LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** `pretty` lines for people, `json` for log collectors; `auto`: pretty on a terminal unless in production. */
  KAS_LOG_FORMAT: z.enum(['auto', 'pretty', 'json']).default('auto'),
  NODE_ENV: optionalString,
});

export type Config = z.infer<typeof ConfigSchema>;

export class ConfigError extends Error {}

/** Parses configuration from an environment; the only place that reads process.env. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const result = ConfigSchema.safeParse(env);
  if (!result.success) {
    const lines = result.error.issues.map((issue) => {
      const name = issue.path.join('.');
      return `  ${name}=${JSON.stringify(env[name] ?? '')}: ${issue.message}`;
    });
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
  }
  const config = result.data;
  if (config.DATABASE_URL && !config.KAS_ENCRYPTION_KEY) {
    throw new ConfigError(
      'Invalid configuration:\n  KAS_ENCRYPTION_KEY: required when DATABASE_URL is set (32 random bytes, base64)',
    );
  }
  // Without a base URL the SDK calls the provider's public API, which refuses every request without a key.
  if (config.KAS_LLM_PROVIDER !== 'builtin' && !config.KAS_LLM_BASE_URL && !config.KAS_LLM_API_KEY) {
    const publicApi =
      config.KAS_LLM_PROVIDER === 'openai' ? 'the public OpenAI API' : 'the public Anthropic API';
    throw new ConfigError(
      `Invalid configuration:\n  KAS_LLM_API_KEY: required when KAS_LLM_PROVIDER=${config.KAS_LLM_PROVIDER} and KAS_LLM_BASE_URL is unset ` +
        `(that is ${publicApi}); for a local server (Ollama, vLLM, LiteLLM, llama.cpp) set KAS_LLM_BASE_URL to its address`,
    );
  }
  if (config.DATABASE_READ_URLS.length && !config.DATABASE_URL) {
    throw new ConfigError(
      'Invalid configuration:\n  DATABASE_READ_URLS: replicas need their primary in DATABASE_URL',
    );
  }
  if (config.KAS_OIDC_ISSUER && !config.KAS_OIDC_AUDIENCE) {
    throw new ConfigError(
      'Invalid configuration:\n  KAS_OIDC_AUDIENCE: required when KAS_OIDC_ISSUER is set (the client id tokens are issued for)',
    );
  }
  if (config.KAS_MCP_AUTHORIZATION_SERVER === 'oidc' && !config.KAS_OIDC_ISSUER) {
    throw new ConfigError(
      'Invalid configuration:\n  KAS_MCP_AUTHORIZATION_SERVER: `oidc` needs KAS_OIDC_ISSUER (the provider MCP clients sign in with)',
    );
  }
  return config;
}

/** KAS_* variables that are not settings of the server but are read by kas's tools and examples. */
const OTHER_KAS_VARIABLES = /^KAS_(URL|PROCESS_TUNED|TEST_\w+|FUZZ_\w+)$/;

/**
 * The KAS_* variables of an environment that are no setting (a misspelt one is otherwise ignored without
 * a word), each with the setting whose name is closest, when one is a few edits away.
 */
export function unknownSettings(
  env: Record<string, string | undefined> = process.env,
): { name: string; closest: string | undefined }[] {
  const known = Object.keys(ConfigSchema.shape);
  return Object.keys(env)
    .filter((name) => name.startsWith('KAS_') && !known.includes(name) && !OTHER_KAS_VARIABLES.test(name))
    .sort()
    .map((name) => ({ name, closest: closest(name, known, Math.max(2, Math.floor(name.length / 4))) }));
}

/** A config for tests and tools: defaults plus the given overrides, validated the same way. */
export function configFrom(overrides: Record<string, string | undefined>): Config {
  return loadConfig(overrides);
}

/** Parses the comma-separated `KAS_OUTBOUND_ALLOWLIST`; returns the entries and the ones that are not hosts, addresses or CIDRs. */
export function parseAllowlist(value: string | undefined): { entries: string[]; invalid: string[] } {
  const entries = (value ?? '')
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean);
  const invalid = entries.filter((entry) => {
    const [net, prefix, extra] = entry.split('/');
    if (extra !== undefined || !net) return true;
    const family = isIP(net.replace(/^\[|\]$/g, ''));
    if (prefix !== undefined) {
      const bits = Number(prefix);
      return !family || !/^\d+$/.test(prefix) || bits > (family === 4 ? 32 : 128);
    }
    return !family && !/^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/i.test(net);
  });
  return { entries, invalid };
}
