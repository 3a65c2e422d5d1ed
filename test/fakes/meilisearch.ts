import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A local server speaking the documented Meilisearch HTTP API that our adapter uses: health, index
 * settings, documents add / delete by filter / delete all, tasks, and search with filters. Its search
 * mimics Meilisearch's defaults (prefix on every word, 1 typo from 5 letters, 2 from 9, phrases,
 * `-word` exclusion, title before content) closely enough for the contract suite; filters follow the
 * documented grammar and reject attributes that are not filterable, as the real engine does.
 */
export interface FakeMeilisearch {
  url: string;
  apiKey: string;
  /** The next enqueued task fails with this error (as a real task failure: 202, then status failed). */
  failNextTask(error?: { code: string; message: string }): void;
  requests: { method: string; path: string; body: unknown }[];
  documents(indexUid: string): Record<string, unknown>[];
  close(): Promise<void>;
}

type Doc = Record<string, unknown>;

interface Index {
  uid: string;
  primaryKey: string | null;
  docs: Map<string, Doc>;
  settings: {
    searchableAttributes: string[];
    filterableAttributes: string[];
    sortableAttributes: string[];
    stopWords?: string[];
  };
}

interface Task {
  uid: number;
  indexUid: string;
  status: 'enqueued' | 'processing' | 'succeeded' | 'failed';
  type: string;
  error: { message: string; code: string; type: string; link: string } | null;
  enqueuedAt: string;
  finishedAt: string | null;
}

class MeiliError extends Error {
  readonly status: number;
  readonly code: string;
  readonly type: string;
  constructor(status: number, code: string, message: string, type = 'invalid_request') {
    super(message);
    this.status = status;
    this.code = code;
    this.type = type;
  }
}

// ---- filter grammar: expr := or; or := and (OR and)*; and := not (AND not)*; not := NOT not | atom
type Filter = (doc: Doc) => boolean;

function tokenizeFilter(text: string): string[] {
  const tokens: string[] = [];
  const re = /\s*("(?:[^"\\]|\\.)*"|\(|\)|\[|\]|,|>=|<=|!=|=|>|<|[^\s()[\],=<>!]+)/y;
  let at = 0;
  for (;;) {
    re.lastIndex = at;
    const m = re.exec(text);
    if (!m) break;
    tokens.push(m[1]!);
    at = re.lastIndex;
  }
  if (text.slice(at).trim()) {
    throw new MeiliError(400, 'invalid_search_filter', `Unexpected "${text.slice(at)}" in filter`);
  }
  return tokens;
}

function literal(token: string | undefined): unknown {
  if (token === undefined) throw new MeiliError(400, 'invalid_search_filter', 'Missing value');
  if (token.startsWith('"')) return token.slice(1, -1).replace(/\\(.)/g, '$1');
  if (token === 'true' || token === 'false') return token;
  return token;
}

function equals(value: unknown, expected: unknown): boolean {
  if (Array.isArray(value)) return value.some((v) => equals(v, expected));
  return String(value) === String(expected);
}

function parseFilter(text: string, filterable: string[]): Filter {
  const tokens = tokenizeFilter(text);
  let at = 0;
  const peek = () => tokens[at];
  const next = () => tokens[at++];
  const expect = (t: string) => {
    if (next() !== t) throw new MeiliError(400, 'invalid_search_filter', `Expected ${t} in filter "${text}"`);
  };
  const attribute = () => {
    const name = next()!;
    if (!filterable.includes(name)) {
      throw new MeiliError(
        400,
        'invalid_search_filter',
        `Index: Attribute \`${name}\` is not filterable. Available filterable attributes are: \`${filterable.join(', ')}\`.`,
      );
    }
    return name;
  };
  const atom = (): Filter => {
    if (peek() === '(') {
      next();
      const inner = or();
      expect(')');
      return inner;
    }
    const name = attribute();
    const op = next();
    if (op === 'IN') {
      expect('[');
      const values: unknown[] = [];
      while (peek() !== ']') {
        values.push(literal(next()));
        if (peek() === ',') next();
      }
      expect(']');
      return (doc) => values.some((v) => equals(doc[name], v));
    }
    const value = literal(next());
    switch (op) {
      case '=':
        return (doc) => equals(doc[name], value);
      case '!=':
        return (doc) => !equals(doc[name], value);
      case '>=':
        return (doc) => Number(doc[name]) >= Number(value);
      case '>':
        return (doc) => Number(doc[name]) > Number(value);
      case '<=':
        return (doc) => Number(doc[name]) <= Number(value);
      case '<':
        return (doc) => Number(doc[name]) < Number(value);
      default:
        throw new MeiliError(400, 'invalid_search_filter', `Unknown operator ${op}`);
    }
  };
  const not = (): Filter => {
    if (peek() === 'NOT') {
      next();
      const inner = not();
      return (doc) => !inner(doc);
    }
    return atom();
  };
  const and = (): Filter => {
    const parts = [not()];
    while (peek() === 'AND') {
      next();
      parts.push(not());
    }
    return (doc) => parts.every((p) => p(doc));
  };
  const or = (): Filter => {
    const parts = [and()];
    while (peek() === 'OR') {
      next();
      parts.push(and());
    }
    return (doc) => parts.some((p) => p(doc));
  };
  const result = or();
  if (at < tokens.length)
    throw new MeiliError(400, 'invalid_search_filter', `Unexpected ${peek()} in "${text}"`);
  return result;
}

// ---- search
function words(text: string): string[] {
  return text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
}

/** Meilisearch counts two neighbouring letters swapped as one typo (its Levenshtein automata allow transpositions). */
function editDistance(a: string, b: string, max: number): number {
  if (Math.abs(a.length - b.length) > max) return max + 1;
  let before: number[] = [];
  let prev = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) {
      cur[j] = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        cur[j] = Math.min(cur[j]!, before[j - 2]! + 1);
    }
    before = prev;
    prev = cur;
  }
  return prev[b.length]!;
}

/** How well `term` matches a word: 0 none, else higher is better (exact > prefix > typo). */
function termMatch(term: string, word: string): number {
  if (word === term) return 3;
  if (word.startsWith(term)) return 2;
  const typos = term.length >= 9 ? 2 : term.length >= 5 ? 1 : 0;
  return typos && editDistance(term, word, typos) <= typos ? 1 : 0;
}

interface QueryPart {
  words: string[];
  phrase: boolean;
  negated: boolean;
}

function parseSearchQuery(q: string): QueryPart[] {
  const parts: QueryPart[] = [];
  for (const m of q.matchAll(/(-?)"([^"]*)"?|(\S+)/g)) {
    if (m[2] !== undefined) parts.push({ words: words(m[2]), phrase: true, negated: m[1] === '-' });
    else {
      const raw = m[3]!;
      const negated = raw.startsWith('-') && raw.length > 1;
      parts.push({ words: words(negated ? raw.slice(1) : raw), phrase: false, negated });
    }
  }
  return parts.filter((p) => p.words.length);
}

function containsPhrase(text: string[], phrase: string[]): boolean {
  for (let i = 0; i + phrase.length <= text.length; i++) {
    if (phrase.every((w, j) => text[i + j] === w)) return true;
  }
  return false;
}

function scoreDoc(doc: Doc, parts: QueryPart[], searchable: string[], strategy: string): number | null {
  const fields = searchable.map((a) => words(String(doc[a] ?? '')));
  const all = fields.flat();
  let matched = 0;
  let quality = 0;
  let positives = 0;
  for (const part of parts) {
    if (part.negated) {
      const hit = part.phrase ? containsPhrase(all, part.words) : all.some((w) => w === part.words[0]);
      if (hit) return null;
      continue;
    }
    positives++;
    let best = 0;
    fields.forEach((field, rank) => {
      const found =
        part.phrase || part.words.length > 1
          ? containsPhrase(field, part.words)
            ? 3
            : 0
          : Math.max(0, ...field.map((w) => termMatch(part.words[0]!, w)));
      // Earlier searchable attributes rank higher (Meilisearch's attribute rule).
      if (found) best = Math.max(best, found + (searchable.length - rank) * 3);
    });
    if (best) {
      matched++;
      quality += best;
    } else if (strategy === 'all') return null;
  }
  if (positives && !matched) return null;
  return positives ? (matched / positives) * 0.7 + Math.min(quality / (positives * 12), 1) * 0.3 : 1;
}

export async function startFakeMeilisearch(options: { apiKey?: string } = {}): Promise<FakeMeilisearch> {
  const apiKey = options.apiKey ?? 'fake-meili-master-key';
  const indexes = new Map<string, Index>();
  const tasks: Task[] = [];
  const requests: FakeMeilisearch['requests'] = [];
  let failNext: { code: string; message: string } | null = null;

  const getIndex = (uid: string) => {
    let index = indexes.get(uid);
    if (!index) {
      index = {
        uid,
        primaryKey: null,
        docs: new Map(),
        settings: { searchableAttributes: ['*'], filterableAttributes: [], sortableAttributes: [] },
      };
      indexes.set(uid, index);
    }
    return index;
  };

  const enqueue = (indexUid: string, type: string, apply: () => void) => {
    const task: Task = {
      uid: tasks.length,
      indexUid,
      status: 'enqueued',
      type,
      error: null,
      enqueuedAt: new Date().toISOString(),
      finishedAt: null,
    };
    tasks.push(task);
    // Processed asynchronously, like the real engine: the first poll may still see it enqueued.
    setImmediate(() => {
      if (failNext) {
        task.status = 'failed';
        task.error = { ...failNext, type: 'invalid_request', link: 'https://docs.meilisearch.com/errors' };
        failNext = null;
      } else {
        try {
          apply();
          task.status = 'succeeded';
        } catch (error) {
          task.status = 'failed';
          const e = error as MeiliError;
          task.error = {
            message: e.message,
            code: e.code ?? 'internal',
            type: e.type ?? 'internal',
            link: '',
          };
        }
      }
      task.finishedAt = new Date().toISOString();
    });
    return { taskUid: task.uid, indexUid, status: 'enqueued', type, enqueuedAt: task.enqueuedAt };
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString();
    const body = text ? JSON.parse(text) : undefined;
    requests.push({ method: req.method ?? '', path: url.pathname + url.search, body });
    const send = (status: number, payload: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(payload));
    };
    if (url.pathname === '/health') return send(200, { status: 'available' });
    if (req.headers.authorization !== `Bearer ${apiKey}`) {
      throw new MeiliError(
        req.headers.authorization ? 403 : 401,
        req.headers.authorization ? 'invalid_api_key' : 'missing_authorization_header',
        'The provided API key is invalid.',
        'auth',
      );
    }
    const path = url.pathname.split('/').filter(Boolean);
    if (path[0] === 'tasks' && path.length === 2 && req.method === 'GET') {
      const task = tasks[Number(path[1])];
      if (!task) throw new MeiliError(404, 'task_not_found', `Task \`${path[1]}\` not found.`);
      return send(200, task);
    }
    if (path[0] !== 'indexes' || !path[1]) throw new MeiliError(404, 'not_found', 'Not found');
    const uid = path[1];
    const rest = path.slice(2).join('/');
    const method = req.method;

    if (rest === 'settings' && method === 'PATCH') {
      return send(
        202,
        enqueue(uid, 'settingsUpdate', () => {
          const index = getIndex(uid);
          index.settings = { ...index.settings, ...body };
        }),
      );
    }
    if (rest === 'documents' && (method === 'POST' || method === 'PUT')) {
      if (!Array.isArray(body))
        throw new MeiliError(400, 'malformed_payload', 'The payload must be an array');
      const primaryKey = url.searchParams.get('primaryKey');
      return send(
        202,
        enqueue(uid, 'documentAdditionOrUpdate', () => {
          const index = getIndex(uid);
          index.primaryKey ??= primaryKey ?? 'id';
          for (const doc of body as Doc[]) {
            const id = doc[index.primaryKey];
            if (typeof id !== 'string' || !/^[A-Za-z0-9_-]{1,511}$/.test(id)) {
              throw new MeiliError(
                400,
                'invalid_document_id',
                `Document identifier \`${String(id)}\` is invalid.`,
              );
            }
            index.docs.set(id, doc);
          }
        }),
      );
    }
    if (rest === 'documents' && method === 'DELETE') {
      return send(
        202,
        enqueue(uid, 'documentDeletion', () => getIndex(uid).docs.clear()),
      );
    }
    if (rest === 'documents/delete' && method === 'POST') {
      const index = getIndex(uid);
      const filter = parseFilter(String(body?.filter ?? ''), index.settings.filterableAttributes);
      return send(
        202,
        enqueue(uid, 'documentDeletion', () => {
          for (const [id, doc] of index.docs) if (filter(doc)) index.docs.delete(id);
        }),
      );
    }
    if (rest === 'search' && method === 'POST') {
      const index = indexes.get(uid);
      if (!index) throw new MeiliError(404, 'index_not_found', `Index \`${uid}\` not found.`);
      const started = performance.now();
      const filter = body?.filter
        ? parseFilter(String(body.filter), index.settings.filterableAttributes)
        : () => true;
      const searchable =
        index.settings.searchableAttributes[0] === '*'
          ? ['title', 'content']
          : index.settings.searchableAttributes;
      // Stop words are ignored in queries (Meilisearch's `stopWords` setting).
      const stop = new Set(index.settings.stopWords ?? []);
      const parts = parseSearchQuery(String(body?.q ?? ''))
        .map((p) => (p.phrase ? p : { ...p, words: p.words.filter((w) => !stop.has(w)) }))
        .filter((p) => p.words.length);
      const scored: { doc: Doc; score: number }[] = [];
      for (const doc of index.docs.values()) {
        if (!filter(doc)) continue;
        const score = scoreDoc(doc, parts, searchable, body?.matchingStrategy ?? 'last');
        if (score !== null) scored.push({ doc, score });
      }
      const sort = (body?.sort as string[] | undefined)?.[0];
      if (sort) {
        const [attr, dir] = sort.split(':') as [string, string];
        if (!index.settings.sortableAttributes.includes(attr)) {
          throw new MeiliError(400, 'invalid_search_sort', `Attribute \`${attr}\` is not sortable.`);
        }
        scored.sort((a, b) => (Number(a.doc[attr]) - Number(b.doc[attr])) * (dir === 'desc' ? -1 : 1));
      } else scored.sort((a, b) => b.score - a.score);
      const limit = body?.limit ?? 20;
      const retrieve = body?.attributesToRetrieve as string[] | undefined;
      const hits = scored.slice(0, limit).map(({ doc, score }) => ({
        ...(retrieve ? Object.fromEntries(retrieve.map((a) => [a, doc[a]])) : doc),
        ...(body?.showRankingScore ? { _rankingScore: score } : {}),
      }));
      return send(200, {
        hits,
        query: body?.q ?? '',
        processingTimeMs: Math.round(performance.now() - started),
        limit,
        offset: 0,
        estimatedTotalHits: scored.length,
      });
    }
    throw new MeiliError(404, 'not_found', `No route ${method} ${url.pathname}`);
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      const e =
        error instanceof MeiliError ? error : new MeiliError(500, 'internal', String(error), 'internal');
      res.writeHead(e.status, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          message: e.message,
          code: e.code,
          type: e.type,
          link: 'https://docs.meilisearch.com/errors',
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    apiKey,
    requests,
    failNextTask: (error = { code: 'internal', message: 'simulated task failure' }) => {
      failNext = error;
    },
    documents: (uid) => [...(indexes.get(uid)?.docs.values() ?? [])],
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
