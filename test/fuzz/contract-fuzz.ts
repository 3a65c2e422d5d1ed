/**
 * A fuzzer driven by the API contract: it reads /api/openapi.json, generates for every operation valid
 * requests (from the schemas, with fast-check) and broken ones, sends them over raw HTTP and checks
 * every answer against the contract: no 5xx, no hang, the error envelope with a documented status,
 * 2xx bodies that match the response schema, and no stack trace, SQL or file path in any body.
 */
import { Agent, request as httpRequest } from 'node:http';
import { gzipSync } from 'node:zlib';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import fc from 'fast-check';
import { arbitraryFor, type JsonSchema } from './schema-arbitrary.ts';

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => void;

export type FuzzKey = 'admin' | 'curator' | 'basic' | 'limited' | 'none' | 'unknown';

interface Parameter {
  in: 'path' | 'query' | 'header';
  name: string;
  required?: boolean;
  schema: JsonSchema;
}

export interface Operation {
  method: string;
  path: string;
  operationId: string;
  parameters: Parameter[];
  bodySchema?: JsonSchema;
  bodyType?: string;
  responses: Record<string, { content?: Record<string, { schema?: JsonSchema }> }>;
  minRole?: string;
}

export const MUTATIONS = [
  'wrong-type',
  'missing-field',
  'extra-field',
  'huge-string',
  'deep-nesting',
  'null-byte',
  'invalid-utf8',
  'bad-path-id',
  'non-json',
  'wrong-content-type',
  'corrupt-encoding',
  'huge-number',
  'bad-query',
] as const;
export type Mutation = (typeof MUTATIONS)[number];

/** One generated request, before the values that depend on the server's state are filled in. */
export interface FuzzCase {
  op: number;
  key: FuzzKey;
  path: Record<string, unknown>;
  query: Record<string, unknown>;
  body: unknown;
  mutation: Mutation | null;
  /** Free choices for the mutation and for picking known ids: which field, which variant. */
  pick: number;
  variant: number;
}

export interface SentRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: Buffer;
}

export interface Finding {
  /** The run's seed and the case's index in it: `npm run fuzz -- --seed S --cases I+1` replays up to it. */
  seed: number;
  index: number;
  operation: string;
  mutation: Mutation | 'valid';
  key: FuzzKey;
  problem: string;
  status: number;
  request: string;
  body: string;
}

export interface FuzzReport {
  cases: number;
  findings: Finding[];
  statuses: Record<string, number>;
  /** 2xx answers per operation: how deep the valid requests got. */
  successes: Record<string, number>;
  slowestMs: number;
  /** The request that took `slowestMs`. */
  slowestRequest: string;
  seconds: number;
}

const BAD_PATH_IDS = [
  '..%2F..%2Fetc%2Fpasswd',
  '../../etc/passwd',
  '%00',
  'abc%00def',
  '99999999999999999999',
  '2147483648',
  '-1',
  '%ff%fe',
  '%',
  '1e3',
  '0x10',
  '%20',
  'null',
  "1'%20OR%20'1'='1",
  `${'9'.repeat(400)}`,
];

const LEAKS: [RegExp, string][] = [
  [/\n\s*at [^\n]+:\d+:\d+/, 'stack trace'],
  [/\bat (?:async )?[\w$.<>]+ \((?:file:|node:|\/)[^)]*\)/, 'stack trace'],
  [/node_modules|node:internal|file:\/\//, 'file path'],
  [/\/(?:work|home|usr|tmp|var|root|opt|srv|app)\/[\w./-]+\.(?:ts|js|mjs|cjs)\b/, 'file path'],
  [
    /syntax error at or near|violates (?:foreign key|unique|not-null|check) constraint|duplicate key value|relation "[^"]*" does not exist|column "[^"]*" (?:does not exist|of relation)|SQLSTATE|invalid input syntax for type|\bpg_[a-z_]+\(/i,
    'SQL error',
  ],
];
const SQL_TEXT = /\b(?:SELECT\s[\s\S]{0,200}\sFROM|INSERT INTO|UPDATE\s+"?\w+"?\s+SET|DELETE FROM)\s/;

function operationsOf(doc: any): Operation[] {
  const operations: Operation[] = [];
  for (const [path, item] of Object.entries<Record<string, any>>(doc.paths)) {
    for (const [method, op] of Object.entries<any>(item)) {
      if (!op?.responses) continue;
      const content = op.requestBody?.content ?? {};
      const bodyType = Object.keys(content)[0];
      operations.push({
        method: method.toUpperCase(),
        path,
        operationId: op.operationId ?? `${method} ${path}`,
        parameters: op.parameters ?? [],
        bodySchema: bodyType ? content[bodyType].schema : undefined,
        bodyType,
        responses: op.responses,
        minRole: op['x-kas-min-role'],
      });
    }
  }
  return operations;
}

/** Rewrites local `#/components/...` references so Ajv resolves them in the registered document. */
function withDocumentRefs(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(withDocumentRefs);
  if (schema && typeof schema === 'object') {
    return Object.fromEntries(
      Object.entries(schema).map(([key, value]) => [
        key,
        key === '$ref' && typeof value === 'string' && value.startsWith('#/')
          ? `kas-openapi${value}`
          : withDocumentRefs(value),
      ]),
    );
  }
  return schema;
}

const KEY_WEIGHTS: [FuzzKey, number][] = [
  ['admin', 12],
  ['curator', 2],
  ['basic', 2],
  ['limited', 2],
  ['none', 1],
  ['unknown', 1],
];

function caseArbitrary(
  operations: Operation[],
  resolve: (ref: string) => JsonSchema,
): fc.Arbitrary<FuzzCase> {
  const perOperation = operations.map((op, index) => {
    const params = (where: 'path' | 'query') => {
      const list = op.parameters.filter((p) => p.in === where);
      return fc.record(Object.fromEntries(list.map((p) => [p.name, arbitraryFor(p.schema, resolve)])), {
        requiredKeys: list.filter((p) => p.required || where === 'path').map((p) => p.name),
      });
    };
    return fc.record({
      op: fc.constant(index),
      key: fc.oneof(...KEY_WEIGHTS.map(([key, weight]) => ({ weight, arbitrary: fc.constant(key) }))),
      path: params('path'),
      query: params('query'),
      body:
        op.bodySchema && op.bodyType === 'application/json'
          ? arbitraryFor(op.bodySchema, resolve)
          : fc.constant(undefined),
      mutation: fc.oneof(
        { weight: 5, arbitrary: fc.constant(null) },
        { weight: 6, arbitrary: fc.constantFrom(...MUTATIONS) },
      ),
      pick: fc.nat(),
      variant: fc.nat(),
    });
  });
  return fc.oneof(...perOperation);
}

type Leaf = { parent: Record<string, unknown> | unknown[]; key: string | number; value: unknown };

/** Every value in the tree with its container, so a mutation can replace one. */
function leaves(root: unknown): Leaf[] {
  const out: Leaf[] = [];
  const walk = (node: unknown) => {
    if (Array.isArray(node)) {
      node.forEach((value, key) => {
        out.push({ parent: node, key, value });
        walk(value);
      });
    } else if (node && typeof node === 'object') {
      for (const [key, value] of Object.entries(node)) {
        out.push({ parent: node as Record<string, unknown>, key, value });
        walk(value);
      }
    }
  };
  walk(root);
  return out;
}

function setLeaf(leaf: Leaf, value: unknown) {
  (leaf.parent as Record<string | number, unknown>)[leaf.key] = value;
}

function otherTypeValue(value: unknown, variant: number): unknown {
  const options: unknown[] = [42, -1.5, 'text', true, null, [1, 'a'], { a: 1 }, '', 0];
  const others = options.filter(
    (o) => typeof o !== typeof value || Array.isArray(o) !== Array.isArray(value),
  );
  return others[variant % others.length];
}

const DEEP_MARKER = '__kas_fuzz_deep__';

/** Deeply nested JSON text, written directly (serialising it would overflow the fuzzer's own stack). */
function deepJson(variant: number): string {
  const depth = [64, 1000, 5000, 20000][variant % 4]!;
  return variant % 2
    ? `${'['.repeat(depth)}"bottom"${']'.repeat(depth)}`
    : `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
}

/** Ids the server handed out, by JSON type, so later requests name resources that exist. */
export class IdPool {
  ints: number[] = [];
  strings: string[] = [];
  /** The fuzzer's own keys and users: never offered, so it does not revoke the keys it works with. */
  private readonly own: ReadonlySet<number | string>;
  constructor(own: ReadonlySet<number | string> = new Set()) {
    this.own = own;
  }
  /** True for the fuzzer's own key and user ids: requests never name them (no revoking its own keys). */
  isOwn(value: unknown): boolean {
    return (typeof value === 'number' || typeof value === 'string') && this.own.has(value);
  }
  record(value: unknown) {
    const walk = (node: unknown, depth: number) => {
      if (depth > 4 || !node || typeof node !== 'object') return;
      for (const [key, child] of Object.entries(node)) {
        const isId = key === 'id' || key.endsWith('_id');
        if (isId && this.own.has(child as number | string)) continue;
        if (isId && typeof child === 'number' && Number.isInteger(child)) {
          if (!this.ints.includes(child)) this.ints.push(child);
        } else if (isId && typeof child === 'string' && child.length < 100) {
          if (!this.strings.includes(child)) this.strings.push(child);
        } else walk(child, depth + 1);
      }
    };
    walk(value, 0);
    if (this.ints.length > 200) this.ints.splice(0, 100);
    if (this.strings.length > 200) this.strings.splice(0, 100);
  }
}

function queryString(query: Record<string, unknown>, nulByte: boolean): string {
  const parts: string[] = [];
  for (const [name, value] of Object.entries(query)) {
    const values = Array.isArray(value) ? value : [value];
    for (const item of values) {
      const text = typeof item === 'object' && item !== null ? JSON.stringify(item) : String(item);
      parts.push(`${encodeURIComponent(name)}=${encodeURIComponent(text)}${nulByte ? '%00' : ''}`);
    }
  }
  return parts.length ? `?${parts.join('&')}` : '';
}

function multipartBody(variant: number): { body: Buffer; contentType: string } {
  const boundary = `----kasfuzz${variant}`;
  const field = variant % 4 === 0 ? 'wrong_field' : 'files';
  const content =
    variant % 3 === 0
      ? Buffer.from([0xff, 0xfe, 0x00, 0x41, 0x00])
      : Buffer.from(`fuzz file ${variant}\nhello world\n`);
  const body = Buffer.concat([
    Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="${field}"; filename="f${variant}.txt"\r\nContent-Type: text/plain\r\n\r\n`,
    ),
    content,
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ]);
  return { body, contentType: `multipart/form-data; boundary=${boundary}` };
}

/** Turns a generated case into bytes on the wire, applying its mutation. */
export function materialise(
  op: Operation,
  c: FuzzCase,
  keys: Record<FuzzKey, string | undefined>,
  pool: IdPool,
): SentRequest {
  const pathValues: Record<string, unknown> = structuredClone(c.path);
  const query: Record<string, unknown> = structuredClone(c.query);
  let body: unknown = structuredClone(c.body);
  // Generated values can hit the ids of the fuzzer's own keys (small integers are favoured): never
  // name them, or a generated revoke, demotion or deletion would silence the rest of the run.
  const scrub = (value: unknown): unknown =>
    pool.isOwn(value) ? (typeof value === 'number' ? 0 : 'x') : value;
  for (const record of [pathValues, query])
    for (const name of Object.keys(record)) record[name] = scrub(record[name]);
  if (pool.isOwn(body)) body = scrub(body);
  for (const leaf of leaves(body)) if (pool.isOwn(leaf.value)) setLeaf(leaf, scrub(leaf.value));
  // Half the time, a path id the server handed out earlier.
  for (const param of op.parameters.filter((p) => p.in === 'path')) {
    if (c.pick % 2 === 0) continue;
    const isInt = JSON.stringify(param.schema).includes('"integer"');
    const candidates: unknown[] = isInt ? pool.ints : pool.strings;
    if (candidates.length) pathValues[param.name] = candidates[(c.pick >> 1) % candidates.length];
  }
  const headers: Record<string, string> = {};
  const key = keys[c.key];
  if (key) headers.authorization = `Bearer ${key}`;
  let raw: Buffer | undefined;
  let contentType: string | undefined = op.bodyType === 'application/json' ? 'application/json' : undefined;
  let nulInQuery = false;
  const pathNames = op.parameters.filter((p) => p.in === 'path').map((p) => p.name);
  let badPath: string | undefined;

  const targets = (): Leaf[] => {
    if (body !== undefined && body !== null && typeof body === 'object') return leaves(body);
    return [];
  };
  const pickLeaf = (filter: (leaf: Leaf) => boolean = () => true) => {
    const list = targets().filter(filter);
    return list.length ? list[c.variant % list.length] : undefined;
  };
  switch (c.mutation) {
    case 'wrong-type': {
      const leaf = pickLeaf();
      if (leaf) setLeaf(leaf, otherTypeValue(leaf.value, c.pick));
      else if (Object.keys(query).length) query[Object.keys(query)[0]!] = 'not-a-value';
      else if (op.bodyType === 'application/json') body = otherTypeValue(body, c.pick);
      else query.unexpected = '1';
      break;
    }
    case 'missing-field': {
      const leaf = pickLeaf((l) => !Array.isArray(l.parent));
      if (leaf) delete (leaf.parent as Record<string, unknown>)[leaf.key as string];
      else if (op.bodyType === 'application/json') body = undefined;
      break;
    }
    case 'extra-field': {
      if (body && typeof body === 'object' && !Array.isArray(body))
        (body as Record<string, unknown>)[`extra_${c.pick % 100}`] = c.variant % 2 ? 'x' : { nested: [1] };
      else query[`extra_${c.pick % 100}`] = 'x';
      break;
    }
    case 'huge-string': {
      const huge = 'a'.repeat(1024 * 1024 - (c.variant % 7)) + (c.variant % 2 ? '' : ' word');
      const leaf = pickLeaf((l) => typeof l.value === 'string') ?? pickLeaf();
      if (leaf) setLeaf(leaf, huge);
      else if (op.bodyType === 'application/json') body = { value: huge };
      else query[Object.keys(query)[0] ?? 'q'] = 'b'.repeat(64 * 1024);
      break;
    }
    case 'deep-nesting': {
      const leaf = pickLeaf();
      if (leaf) setLeaf(leaf, DEEP_MARKER);
      else body = DEEP_MARKER;
      contentType = 'application/json';
      break;
    }
    case 'null-byte': {
      const leaf = pickLeaf((l) => typeof l.value === 'string');
      if (leaf) setLeaf(leaf, `${String(leaf.value)}\u0000x`);
      else if (pathNames.length) badPath = pathNames[c.variant % pathNames.length];
      else nulInQuery = true;
      if (!leaf && pathNames.length) pathValues[badPath!] = 'a%00b';
      break;
    }
    case 'invalid-utf8': {
      const json = JSON.stringify(body ?? { text: 'x' });
      const at = Math.max(0, json.indexOf('"') + 1);
      raw = Buffer.concat([
        Buffer.from(json.slice(0, at)),
        Buffer.from([0xff, 0xfe, 0xc3, 0x28, 0xed, 0xa0, 0x80]),
        Buffer.from(json.slice(at)),
      ]);
      contentType = 'application/json';
      break;
    }
    case 'bad-path-id': {
      const bad = BAD_PATH_IDS[c.variant % BAD_PATH_IDS.length]!;
      if (pathNames.length) pathValues[pathNames[c.pick % pathNames.length]!] = bad;
      else query[Object.keys(query)[0] ?? 'id'] = decodeURIComponentSafe(bad);
      badPath = bad;
      break;
    }
    case 'non-json': {
      raw = Buffer.from(
        ['this is {not json', '{"a":', '[1,2,,]', "{'single': 1}", 'NaN', '\u0000'][c.variant % 6]!,
      );
      contentType = 'application/json';
      break;
    }
    case 'wrong-content-type': {
      contentType = [
        'text/plain',
        'application/xml',
        'multipart/form-data',
        'application/x-www-form-urlencoded',
        'application/json; charset=latin1',
        'image/png',
      ][c.variant % 6];
      raw = Buffer.from(c.variant % 6 === 3 ? 'a=1&b=2' : JSON.stringify(body ?? {}));
      break;
    }
    case 'corrupt-encoding': {
      const encoding = ['gzip', 'br', 'deflate', 'identity, gzip', 'x-unknown'][c.variant % 5]!;
      headers['content-encoding'] = encoding;
      raw =
        c.pick % 3 === 0
          ? gzipSync(JSON.stringify(body ?? {})).subarray(0, 12)
          : Buffer.from('definitely not a compressed stream');
      contentType = 'application/json';
      break;
    }
    case 'huge-number': {
      const value = [2147483648, -2147483649, 1e308, 2 ** 60, -1e20, 1.5][c.variant % 6];
      const leaf = pickLeaf((l) => typeof l.value === 'number') ?? pickLeaf();
      if (leaf) setLeaf(leaf, value);
      else if (pathNames.length) pathValues[pathNames[0]!] = String(value);
      else query[Object.keys(query)[0] ?? 'limit'] = String(value);
      break;
    }
    case 'bad-query': {
      const name = Object.keys(query)[0] ?? op.parameters.find((p) => p.in === 'query')?.name ?? 'q';
      query[name] = [['a', 'b'], '%zz', 'x'.repeat(20_000), '\u0000', '', '-0', 'true&false'][c.variant % 7];
      if (c.variant % 7 === 3) nulInQuery = true;
      break;
    }
  }
  const path = op.path.replace(/\{(\w+)\}/g, (_m, name: string) => {
    const value = pathValues[name];
    if (badPath !== undefined && (value === badPath || value === 'a%00b')) return String(value);
    return encodeURIComponent(typeof value === 'object' ? JSON.stringify(value) : String(value));
  });
  if (op.bodyType === 'multipart/form-data' && !raw) {
    const form = multipartBody(c.variant);
    raw = form.body;
    contentType = c.mutation === 'wrong-content-type' ? contentType : form.contentType;
  }
  if (
    !raw &&
    body !== undefined &&
    (op.bodyType === 'application/json' || contentType === 'application/json')
  )
    raw = Buffer.from(JSON.stringify(body).replace(`"${DEEP_MARKER}"`, () => deepJson(c.pick)));
  if (raw && contentType) headers['content-type'] = contentType;
  if (raw) headers['content-length'] = String(raw.length);
  return { method: op.method, path: `${path}${queryString(query, nulInQuery)}`, headers, body: raw };
}

function decodeURIComponentSafe(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  ms: number;
}

function send(baseUrl: URL, agent: Agent, req: SentRequest, timeoutMs: number): Promise<Answer> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const outgoing = httpRequest(
      {
        host: baseUrl.hostname,
        port: baseUrl.port,
        method: req.method,
        path: req.path,
        headers: req.headers,
        agent,
        timeout: timeoutMs,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: Buffer.concat(chunks),
            ms: performance.now() - started,
          }),
        );
        res.on('error', reject);
      },
    );
    outgoing.on('timeout', () => outgoing.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    outgoing.on('error', reject);
    outgoing.end(req.body);
  });
}

export interface FuzzTarget {
  url: string;
  /** Ids of the fuzzer's own keys and users, kept out of generated requests (renewals add to it). */
  ownIds: Set<number | string>;
  keys: Record<FuzzKey, string | undefined>;
  /** Called when a role's key stops working (the fuzzer revoked or demoted it): returns a fresh one. */
  renewKey?(role: FuzzKey): Promise<string | undefined>;
}

export interface FuzzOptions {
  cases: number;
  seed: number;
  concurrency?: number;
  timeoutMs?: number;
  /** Known status codes that are not documented on the operation. */
  onProgress?(done: number, report: FuzzReport): void;
}

/** Runs `cases` generated requests against a running server and reports every contract violation. */
export async function runContractFuzz(target: FuzzTarget, options: FuzzOptions): Promise<FuzzReport> {
  const base = new URL(target.url);
  const agent = new Agent({ keepAlive: true, maxSockets: options.concurrency ?? 4 });
  const timeoutMs = options.timeoutMs ?? 10_000;
  const docAnswer = await fetch(new URL('/api/openapi.json', base));
  const doc = (await docAnswer.json()) as any;
  const operations = operationsOf(doc);
  const errorCodes = new Set<string>(doc.components.schemas.ErrorBody.properties.error_code.enum);
  const ajv = new Ajv2020({ strict: false, allErrors: false, validateFormats: true });
  addFormats(ajv);
  ajv.addSchema({ $id: 'kas-openapi', components: withDocumentRefs(doc.components) } as object);
  const resolve = (ref: string): JsonSchema => {
    const name = ref.replace('#/components/schemas/', '');
    return doc.components.schemas[name];
  };
  const validators = new Map<string, ValidateFunction>();
  const validatorFor = (schema: JsonSchema): ValidateFunction => {
    const id = JSON.stringify(schema);
    let validate = validators.get(id);
    if (!validate) {
      validate = ajv.compile(withDocumentRefs(schema) as object);
      validators.set(id, validate);
    }
    return validate;
  };
  const arbitrary = caseArbitrary(operations, resolve);
  const keys = { ...target.keys };
  const pool = new IdPool(target.ownIds);
  const report: FuzzReport = {
    cases: 0,
    findings: [],
    statuses: {},
    successes: {},
    slowestMs: 0,
    slowestRequest: '',
    seconds: 0,
  };
  const started = performance.now();
  const batchSize = 200;

  const check = async (c: FuzzCase, index: number) => {
    const op = operations[c.op]!;
    const sent = materialise(op, c, keys, pool);
    const finding = (problem: string, status = 0, body = '') =>
      report.findings.push({
        seed: options.seed,
        index,
        operation: `${op.method} ${op.path}`,
        mutation: c.mutation ?? 'valid',
        key: c.key,
        problem,
        status,
        request: `${sent.method} ${sent.path.slice(0, 300)} ${sent.body ? sent.body.subarray(0, 300).toString('latin1') : ''}`,
        body: body.slice(0, 500),
      });
    let answer: Answer;
    try {
      answer = await send(base, agent, sent, timeoutMs + 2000);
    } catch (error) {
      finding(`no answer: ${(error as Error).message}`);
      return;
    }
    report.cases++;
    report.statuses[answer.status] = (report.statuses[answer.status] ?? 0) + 1;
    if (answer.ms > report.slowestMs) {
      report.slowestMs = answer.ms;
      report.slowestRequest = `${sent.method} ${sent.path.slice(0, 200)} → ${answer.status}`;
    }
    const text = answer.body.toString('utf8');
    if (answer.ms > timeoutMs) finding(`answered after ${Math.round(answer.ms)} ms`, answer.status, text);
    if (answer.status >= 500) finding(`server error ${answer.status}`, answer.status, text);
    const type = String(answer.headers['content-type'] ?? '');
    for (const [pattern, what] of LEAKS)
      if (pattern.test(text)) finding(`body carries a ${what}`, answer.status, text);
    const documented = Object.keys(op.responses);
    if (!documented.includes(String(answer.status)))
      finding(`undocumented status ${answer.status}`, answer.status, text);
    if (answer.status >= 300) {
      if (SQL_TEXT.test(text)) finding('error body carries SQL', answer.status, text);
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch {
        finding('error body is not JSON', answer.status, text);
        return;
      }
      const envelope = parsed as { error_code?: unknown; detail?: unknown };
      if (
        !envelope ||
        typeof envelope !== 'object' ||
        Object.keys(envelope).sort().join() !== 'detail,error_code' ||
        typeof envelope.detail !== 'string' ||
        !errorCodes.has(envelope.error_code as string)
      )
        finding('error body is not the {error_code, detail} envelope', answer.status, text);
      if (
        answer.status === 401 &&
        c.key !== 'none' &&
        c.key !== 'unknown' &&
        keys[c.key] &&
        target.renewKey
      ) {
        // The fuzzer revoked or demoted its own key through the API: take a fresh one.
        keys[c.key] = await target.renewKey(c.key);
      }
      return;
    }
    report.successes[op.operationId] = (report.successes[op.operationId] ?? 0) + 1;
    const responseSpec = op.responses[String(answer.status)];
    if (answer.status === 204) {
      if (answer.body.length) finding('204 with a body', answer.status, text);
      return;
    }
    const mediaType = type.split(';')[0]!.trim();
    const schema = responseSpec?.content?.[mediaType]?.schema;
    if (!schema) {
      finding(`2xx with undocumented content type ${mediaType}`, answer.status, text.slice(0, 200));
      return;
    }
    if ((schema as JsonSchema).format === 'binary') return;
    const validate = validatorFor(schema);
    const values: unknown[] = [];
    try {
      if (mediaType === 'text/event-stream') {
        for (const line of text.split('\n')) if (line.trim()) values.push(JSON.parse(line));
      } else values.push(JSON.parse(text));
    } catch {
      finding('2xx body is not JSON', answer.status, text);
      return;
    }
    for (const value of values) {
      if (!validate(value)) {
        finding(
          `2xx body does not match the response schema: ${ajv.errorsText(validate.errors)}`,
          answer.status,
          JSON.stringify(value),
        );
        break;
      }
      pool.record(value);
    }
  };

  try {
    for (let offset = 0; offset < options.cases; offset += batchSize) {
      const size = Math.min(batchSize, options.cases - offset);
      const batch = fc.sample(arbitrary, { numRuns: size, seed: options.seed + offset });
      let next = 0;
      const worker = async () => {
        while (next < batch.length) {
          const at = next++;
          await check(batch[at]!, offset + at);
        }
      };
      await Promise.all(Array.from({ length: options.concurrency ?? 4 }, worker));
      report.seconds = (performance.now() - started) / 1000;
      options.onProgress?.(offset + size, report);
    }
  } finally {
    agent.destroy();
  }
  report.seconds = (performance.now() - started) / 1000;
  return report;
}

/** One line per distinct problem, with an example request: what a failing run prints. */
export function summariseFindings(findings: Finding[], limit = 40): string {
  const groups = new Map<string, { count: number; example: Finding }>();
  for (const f of findings) {
    const id = `${f.operation} | ${f.mutation} | ${f.problem.slice(0, 120)}`;
    const group = groups.get(id);
    if (group) group.count++;
    else groups.set(id, { count: 1, example: f });
  }
  return [...groups.entries()]
    .slice(0, limit)
    .map(
      ([id, { count, example }]) =>
        `${count}× ${id}\n    seed=${example.seed} case=${example.index} key=${example.key} status=${example.status}\n` +
        `    request: ${example.request.slice(0, 240)}\n    body: ${JSON.stringify(example.body.slice(0, 300))}\n` +
        `    replay: npm run fuzz -- --seed ${example.seed} --cases ${example.index + 1}`,
    )
    .join('\n');
}
