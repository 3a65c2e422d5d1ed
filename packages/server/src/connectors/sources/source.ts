import type { z } from 'zod';
import { AppError } from '../../errors.ts';
import type { Logger } from '../../logger.ts';
import type { OutboundFetch } from '../../outbound/outbound.ts';
import type { ExtractedPage } from './html.ts';

/** What a checkpoint may hold: it is stored as JSON between batches so a new worker resumes where a dead one stopped. */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

/** One bad or missing key of a connector configuration or credential (`key` is a dotted path). */
export interface ConfigProblem {
  key: string;
  message: string;
}

export type Validation<T> = { ok: true; value: T } | { ok: false; problems: ConfigProblem[] };

/** Validates with a Zod schema and reports every problem, each with the key it concerns. */
export function validateWith<S extends z.ZodType>(schema: S, raw: unknown): Validation<z.output<S>> {
  const result = schema.safeParse(raw ?? {});
  if (result.success) return { ok: true, value: result.data };
  return {
    ok: false,
    problems: result.error.issues.map((issue) => ({
      key: issue.path.map(String).join('.') || '(root)',
      message: issue.message,
    })),
  };
}

/**
 * Who may see a document according to the source itself (`sync` access): the source's own user
 * emails and group ids; the connectors domain maps them to kas users and external groups.
 */
export interface ExternalAccess {
  is_public: boolean;
  user_emails: string[];
  /** Ids of the source's groups (e.g. `github:org/team`, `slack:C0123` channel members), as external groups know them. */
  external_group_ids: string[];
  /** Accounts at the source that are not emails (a Confluence account id, a GitHub login), as linked identities know them. */
  user_ids?: string[];
}

/** The access of one document, or of every document whose id starts with a container's prefix. */
export type PermissionEntry =
  | { document_id: string; access: ExternalAccess }
  | { document_id_prefix: string; access: ExternalAccess };

/** A group at the source with its members, recorded for `sync` pairs so that group grants reach users. */
export interface ExternalGroup {
  group_id: string;
  member_emails: string[];
  /** Members' accounts at the source (matched against linked external identities). */
  member_ids?: string[];
}

export interface SourceOwner {
  display_name?: string | null;
  email?: string | null;
}

/** A document as a source yields it; it goes through the same ingestion path as the API's documents. */
export interface SourceDocument {
  /** Stable id in kas (a web page's URL, `github:owner/repo/issues/12`, …). */
  id: string;
  semantic_identifier: string;
  title?: string | null;
  sections: { text: string; link?: string | null }[];
  metadata?: Record<string, string | string[]>;
  doc_updated_at?: Date | null;
  primary_owners?: SourceOwner[];
  secondary_owners?: SourceOwner[];
  /** Set by sources that know permissions; used when the pair's access type is `sync`. */
  external_access?: ExternalAccess;
}

/**
 * An item that failed for its own reason (too large, over an export limit, a 403 on one file, a 409 on
 * one repository, a parse error): the source lists it in its batch's `failures` and goes on with the
 * others. It is recorded as a per-document error of the attempt (`GET …/cc-pair/{id}/errors`, with the
 * reason and the link), the attempt ends `completed_with_errors`, and the item is tried again on the
 * next run (the next poll window still covers it). Failures of the whole run throw `SourceError`.
 */
export interface SourceDocumentFailure {
  /** The id the document would have in kas, when known. */
  document_id: string | null;
  /** Where a person can see the item at the source. */
  link?: string | null;
  /** Why it failed, safe to show (no secrets, no internals). */
  message: string;
  /**
   * The item no longer exists at the source (a broken link, 404/410): reported on the attempt but not
   * kept as seen, so a full run removes it from the index.
   */
  gone?: boolean;
}

/** A per-item failure thrown inside a source's own per-item code, turned into a `SourceDocumentFailure` with `itemFailure`. */
export class ItemError extends Error {
  readonly documentId: string | null;
  readonly link: string | null;
  constructor(
    documentId: string | null,
    message: string,
    options: { link?: string | null; cause?: unknown } = {},
  ) {
    super(message, { cause: options.cause });
    this.name = 'ItemError';
    this.documentId = documentId;
    this.link = options.link ?? null;
  }
}

/** The failure record of an item: from an `ItemError`, or from the given id, link and reason. */
export function itemFailure(
  item: ItemError | { document_id: string | null; link?: string | null; message: string },
): SourceDocumentFailure {
  if (item instanceof ItemError)
    return { document_id: item.documentId, link: item.link, message: item.message };
  return { document_id: item.document_id, link: item.link ?? null, message: item.message };
}

/** One batch of a run: the documents, the checkpoint after them, and progress when the source knows it. */
export interface SourceBatch {
  documents: SourceDocument[];
  failures?: SourceDocumentFailure[];
  /** Where to resume after this batch has been indexed; `null` when the run is complete. */
  checkpoint: JsonValue | null;
  /** Total documents the run will yield, when the source knows it (for progress and ETA). */
  total?: number | null;
}

/** Readable uploaded files (for the `file` source). */
export interface SourceFileStore {
  read(fileId: string): Promise<{ name: string; content: Buffer; contentType: string | null } | null>;
}

/**
 * Reads files and pages in the CPU pool's worker threads, within the configured limits, so that a
 * hostile file never holds the event loop; a refusal is an `AppError` naming the limit (record it as
 * the document's failure).
 */
export interface SourceExtractor {
  /** The text of a file: PDF, DOCX, text or Markdown. */
  text(file: { name: string; contentType: string; data: Uint8Array }): Promise<string>;
  /** Text, title and links of an HTML page (`subject` names it in refusals, e.g. its URL). */
  html(subject: string, html: string | Uint8Array): Promise<ExtractedPage>;
}

/** Why a file or page could not be read, for its per-document failure: a refusal's detail (a limit), else nothing. */
export function unreadableReason(error: unknown): string {
  return error instanceof AppError ? `: ${error.detail}` : '';
}

/** What a source gets for one run. */
export interface SourceRunContext<Config, Credential> {
  config: Config;
  credential: Credential;
  /** The one HTTP client (address guard, caps, retries). Sources never call `fetch` themselves. */
  fetch: OutboundFetch;
  /** Aborted when the pair is paused, deleted or the worker stops: stop between requests. */
  signal: AbortSignal;
  logger: Logger;
  files: SourceFileStore;
  /** Parses files and pages off the main thread; sources never parse a file or a page themselves. */
  extract: SourceExtractor;
  connectorId: number;
  /** The pair's access type: sources read permissions only for `sync` (reading them may need more rights). */
  accessType?: 'public' | 'private' | 'sync';
  /** Most pages a crawling source (web) takes in one run (`KAS_WEB_MAX_PAGES`); absent: its default. */
  maxPages?: number;
}

export interface LoadArgs<Config, Credential> extends SourceRunContext<Config, Credential> {
  /** The checkpoint stored after the last indexed batch of this attempt, or null to start. */
  checkpoint: JsonValue | null;
  /** Poll window: documents updated in [start, end) (start is null on a first or from-beginning run). */
  window: { start: Date | null; end: Date };
}

/**
 * A kind of external system kas syncs from. Implementations live in `sources/<name>.ts` and are
 * registered in `sources/index.ts`. Errors: throw `SourceError` for failures of the whole run.
 */
export interface Source<Config = unknown, Credential = unknown> {
  /** The `source` value of connectors (`web`, `github`, …). */
  readonly name: string;
  readonly displayName: string;
  /** Whether a credential must carry secrets; sources like `web` and `file` accept an empty one. */
  readonly needsCredential: boolean;
  /** Input types this source supports (`poll`, `load_state`, `event`). */
  readonly inputTypes: readonly ('poll' | 'load_state' | 'event')[];
  /** Checks `connector_specific_config`, reporting every bad or missing key. */
  validateConfig(raw: unknown): Validation<Config>;
  /** Checks `credential_json`, reporting every bad or missing key. */
  validateCredential(raw: unknown): Validation<Credential>;
  /** Streams the documents in batches; each batch carries the checkpoint to resume after it. */
  load(args: LoadArgs<Config, Credential>): AsyncIterable<SourceBatch>;
  /**
   * The current state of these documents, read by id (a run after one that ended with per-item
   * errors retries only the failed items this way, and its window moves on). Ids the source no longer
   * has are left out. Absent: such a run reads again from the start of the failed run's window.
   */
  loadItems?(args: SourceRunContext<Config, Credential>, documentIds: string[]): AsyncIterable<SourceBatch>;
  /** Every document id the source still has (for pruning). Absent: ids seen by a full `load` are used. */
  listIds?(args: SourceRunContext<Config, Credential>): AsyncIterable<string[]>;
  /**
   * Current permissions (permission sync for `sync` access, on every run): per document id, or per
   * container (`document_id_prefix`: every document of the pair whose id starts with it, such as a
   * repository's or a channel's, read without listing them). Absent when the source has none.
   */
  permissions?(args: SourceRunContext<Config, Credential>): AsyncIterable<PermissionEntry[]>;
  /** Access that holds for every document of the pair (a Confluence space's permissions): applied to all of them on each run. */
  pairAccess?(args: SourceRunContext<Config, Credential>): Promise<ExternalAccess>;
  /** The source's groups and their members (permission sync of `sync` pairs); absent when access lists only users. */
  externalGroups?(args: SourceRunContext<Config, Credential>): Promise<ExternalGroup[]>;
  /** Every `load` yields every document the source has (a crawl), so documents it did not yield were deleted. */
  readonly fullListing?: boolean;
  /** Webhooks the source accepts on `POST /api/manage/connector/{id}/event`. */
  readonly events?: SourceEvents<Config, Credential>;
  /** Credential keys whose values are secret (masked on read); default: every key. */
  readonly publicCredentialKeys?: readonly string[];
  /**
   * Every address the credential's secrets are sent to, with the key that decides it (a base URL in
   * the configuration, a token endpoint in the credential). The secrets are bound to these origins:
   * pointing one elsewhere needs them entered again. Absent: the source sends them nowhere a
   * configuration can change.
   */
  secretTargets?(config: Config, credential: Credential): SecretTarget[];
}

/** One address a credential's secrets go to, and the dotted key that sets it (`connector_specific_config.base_url`). */
export interface SecretTarget {
  key: string;
  url: string;
}

/** One webhook delivery (`input_type: event`): its headers (lower-case names) and body exactly as sent. */
export interface SourceEvent<Credential> {
  headers: Record<string, string | undefined>;
  rawBody: string;
  credential: Credential;
  now: Date;
}

/** What a verified delivery asks for: an answer to echo (Slack's challenge) and references to re-read. */
export type EventVerdict =
  | {
      ok: true;
      refs: JsonValue[];
      challenge?: string;
      /** The source's id of this delivery; a redelivery with the same id is not processed again. */
      deliveryId?: string;
    }
  | { ok: false; reason: string };

/** Webhook support of a source: signature check, then the affected documents re-read from the source. */
export interface SourceEvents<Config, Credential> {
  verify(event: SourceEvent<Credential>): EventVerdict;
  /** The current documents behind the references, and the ids of those the source no longer has. */
  fetch(
    args: SourceRunContext<Config, Credential>,
    refs: JsonValue[],
  ): Promise<{ documents: SourceDocument[]; deleted: string[] }>;
}

export type SourceErrorKind = 'auth' | 'rate_limited' | 'transient' | 'config' | 'not_found';

/** A failure of a whole run, with a message safe to show on the attempt. */
export class SourceError extends Error {
  readonly kind: SourceErrorKind;
  /** For `rate_limited`/`transient`: how long to wait before retrying (from `Retry-After` when given). */
  readonly retryAfterMs: number | null;
  constructor(
    kind: SourceErrorKind,
    message: string,
    options: { retryAfterMs?: number | null; cause?: unknown } = {},
  ) {
    super(message, { cause: options.cause });
    this.name = 'SourceError';
    this.kind = kind;
    this.retryAfterMs = options.retryAfterMs ?? null;
  }
}

/**
 * The source is rate limited until `untilMs` (epoch milliseconds): from a `Retry-After`, GitHub's
 * `x-ratelimit-reset`, a secondary limit's back-off or the pair's request budget. Throw it instead of
 * sleeping: the attempt keeps its checkpoint, records "waiting until T" (shown in the pair's status),
 * frees the worker, and the scheduler resumes it from the checkpoint at T. Throw it after yielding
 * the batches already read, so that nothing fetched is fetched again.
 */
export class RateLimitedError extends SourceError {
  /** When requests may start again (epoch milliseconds). */
  readonly untilMs: number;
  constructor(untilMs: number, reason: string, options: { cause?: unknown } = {}) {
    super('rate_limited', reason, { retryAfterMs: Math.max(0, untilMs - Date.now()), cause: options.cause });
    this.name = 'RateLimitedError';
    this.untilMs = untilMs;
  }

  /** The reason shown on the attempt (the message). */
  get reason(): string {
    return this.message;
  }
}

export type AnySource = Source<any, any>;

/** Sources by name; created with the app (no module state) so tests can register their own. */
export class SourceRegistry {
  readonly #sources = new Map<string, AnySource>();

  constructor(sources: readonly AnySource[] = []) {
    for (const source of sources) this.register(source);
  }

  register(source: AnySource): void {
    if (this.#sources.has(source.name)) throw new Error(`Source ${source.name} is registered twice`);
    this.#sources.set(source.name, source);
  }

  get(name: string): AnySource | undefined {
    return this.#sources.get(name);
  }

  names(): string[] {
    return [...this.#sources.keys()].sort();
  }
}
