import { type ParseError, parse, printParseErrorCode } from 'jsonc-parser';
import { AppError } from '../../errors.ts';

const METHODS = ['get', 'post', 'put', 'delete', 'patch'] as const;
type HttpMethod = (typeof METHODS)[number];

/** One operation of an OpenAPI action: one tool the model can call. */
export interface OpenApiMethod {
  method: string;
  path: string;
  summary: string;
  /** The function name offered to the model: the operationId limited to `[A-Za-z0-9_-]`. */
  name: string;
  /** JSON Schema of the arguments: path and query parameters, and `requestBody`. */
  parameters: Record<string, unknown>;
  pathParams: string[];
  queryParams: string[];
  hasBody: boolean;
}

export interface ParsedOpenApi {
  spec: Record<string, unknown>;
  title: string;
  description: string;
  serverUrl: string;
  methods: OpenApiMethod[];
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

function invalid(detail: string): AppError {
  return new AppError('INVALID_INPUT', `Invalid OpenAPI definition: ${detail}`);
}

/** The definition as an object: given as one, or as the uploaded file's text (JSON, trailing commas tolerated). */
export function definitionObject(definition: unknown): Obj {
  if (isObj(definition)) return definition;
  if (typeof definition !== 'string') throw invalid('`definition` must be a JSON object or its text');
  const errors: ParseError[] = [];
  const value: unknown = parse(definition, errors, { allowTrailingComma: true, disallowComments: false });
  const first = errors[0];
  if (first) {
    const before = definition.slice(0, first.offset);
    const line = before.split('\n').length;
    const column = first.offset - before.lastIndexOf('\n');
    throw invalid(`${printParseErrorCode(first.error)} at line ${line}, column ${column}`);
  }
  if (!isObj(value)) throw invalid('the document must be a JSON object');
  return value;
}

/** Resolves a local `$ref` (`#/components/...`); other references are refused. */
function deref(spec: Obj, value: unknown, where: string, seen = new Set<string>()): unknown {
  if (!isObj(value)) return value;
  const ref = value.$ref;
  if (typeof ref !== 'string') return value;
  if (!ref.startsWith('#/'))
    throw invalid(`${where}: only local references (#/...) are supported, got ${ref}`);
  if (seen.has(ref)) throw invalid(`${where}: circular reference ${ref}`);
  seen.add(ref);
  let node: unknown = spec;
  for (const part of ref.slice(2).split('/')) {
    const key = part.replace(/~1/g, '/').replace(/~0/g, '~');
    node = isObj(node) ? node[key] : undefined;
  }
  if (node === undefined) throw invalid(`${where}: reference ${ref} does not resolve`);
  return deref(spec, node, where, seen);
}

/** Validates an OpenAPI 3.x document and lists its operations; 400 names the path and operation at fault. */
export function parseOpenApi(definition: unknown): ParsedOpenApi {
  const spec = definitionObject(definition);
  if (typeof spec.openapi !== 'string' || !spec.openapi.startsWith('3.'))
    throw invalid('`openapi` must be a 3.x version string');
  const info = spec.info;
  if (!isObj(info) || typeof info.title !== 'string' || !info.title.trim())
    throw invalid('`info.title` is required');
  if (typeof info.description !== 'string' || !info.description.trim())
    throw invalid('`info.description` is required');
  const servers = spec.servers;
  if (
    !Array.isArray(servers) ||
    servers.length !== 1 ||
    !isObj(servers[0]) ||
    typeof servers[0].url !== 'string'
  )
    throw invalid('`servers` must hold exactly one entry with a `url`');
  const serverUrl = servers[0].url;
  try {
    const url = new URL(serverUrl);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('scheme');
  } catch {
    throw invalid(`\`servers[0].url\` must be an absolute http(s) URL, got ${serverUrl}`);
  }
  const paths = spec.paths;
  if (!isObj(paths) || Object.keys(paths).length === 0) throw invalid('`paths` must hold at least one path');

  const methods: OpenApiMethod[] = [];
  const names = new Map<string, string>();
  for (const [path, rawItem] of Object.entries(paths)) {
    const item = deref(spec, rawItem, `paths.${path}`);
    if (!path.startsWith('/')) throw invalid(`path ${path} must start with /`);
    if (!isObj(item)) throw invalid(`path ${path} must be an object`);
    const shared = Array.isArray(item.parameters) ? item.parameters : [];
    for (const key of Object.keys(item)) {
      const method = key.toLowerCase();
      if (!METHODS.includes(method as HttpMethod)) continue;
      const where = `${method.toUpperCase()} ${path}`;
      const op = item[key];
      if (!isObj(op)) throw invalid(`${where}: the operation must be an object`);
      if (typeof op.operationId !== 'string' || !op.operationId.trim())
        throw invalid(`${where}: \`operationId\` is required`);
      const summary =
        typeof op.summary === 'string' && op.summary.trim()
          ? op.summary
          : typeof op.description === 'string' && op.description.trim()
            ? op.description
            : null;
      if (!summary) throw invalid(`${where}: \`summary\` (or \`description\`) is required`);
      const name = op.operationId.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 64);
      const clash = names.get(name);
      if (clash)
        throw invalid(`${where}: operationId ${op.operationId} gives the same tool name as ${clash}`);
      names.set(name, where);

      const properties: Obj = {};
      const required: string[] = [];
      const pathParams: string[] = [];
      const queryParams: string[] = [];
      const params = [...shared, ...(Array.isArray(op.parameters) ? op.parameters : [])];
      for (const raw of params) {
        const p = deref(spec, raw, where);
        if (!isObj(p) || typeof p.name !== 'string' || typeof p.in !== 'string')
          throw invalid(`${where}: every parameter needs \`name\` and \`in\``);
        if (p.in === 'path') pathParams.push(p.name);
        else if (p.in === 'query') queryParams.push(p.name);
        else continue;
        const schema = isObj(p.schema) ? (deref(spec, p.schema, where) as Obj) : { type: 'string' };
        properties[p.name] = {
          ...schema,
          ...(typeof p.description === 'string' ? { description: p.description } : {}),
        };
        if (p.in === 'path' || p.required === true) required.push(p.name);
      }
      for (const template of path.matchAll(/\{([^}]+)\}/g)) {
        if (!pathParams.includes(template[1] as string))
          throw invalid(`${where}: path parameter {${template[1]}} is not declared`);
      }
      let hasBody = false;
      if (op.requestBody !== undefined) {
        const body = deref(spec, op.requestBody, where);
        const content = isObj(body) && isObj(body.content) ? body.content : null;
        const json = content?.['application/json'];
        if (!content || !isObj(json)) throw invalid(`${where}: a request body must be \`application/json\``);
        properties.requestBody = isObj(json.schema)
          ? resolveSchema(spec, json.schema, where)
          : { type: 'object' };
        if (isObj(body) && body.required === true) required.push('requestBody');
        hasBody = true;
      }
      methods.push({
        method: method.toUpperCase(),
        path,
        summary,
        name,
        parameters: { type: 'object', properties, ...(required.length ? { required } : {}) },
        pathParams,
        queryParams,
        hasBody,
      });
    }
  }
  if (methods.length === 0)
    throw invalid('no operation (GET, POST, PUT, DELETE or PATCH) found under `paths`');
  // Stored as jsonb, whose key order is not the file's: a stable order by path, then method.
  methods.sort(
    (a, b) =>
      a.path.localeCompare(b.path) ||
      METHODS.indexOf(a.method.toLowerCase() as HttpMethod) -
        METHODS.indexOf(b.method.toLowerCase() as HttpMethod),
  );
  return { spec, title: info.title, description: info.description, serverUrl, methods };
}

/** Inlines local references so the model sees one self-contained schema. */
function resolveSchema(spec: Obj, schema: unknown, where: string, depth = 0): unknown {
  if (depth > 20) throw invalid(`${where}: the request body schema nests too deeply`);
  const value = deref(spec, schema, where);
  if (Array.isArray(value)) return value.map((v) => resolveSchema(spec, v, where, depth + 1));
  if (!isObj(value)) return value;
  return Object.fromEntries(
    Object.entries(value).map(([k, v]) => [k, resolveSchema(spec, v, where, depth + 1)]),
  );
}

/** The HTTP request for one call of an operation; a missing path parameter throws a message for the model. */
export function buildRequest(
  serverUrl: string,
  method: OpenApiMethod,
  args: Obj,
): { url: string; method: string; body: string | undefined } {
  let path = method.path;
  for (const name of method.pathParams) {
    const value = args[name];
    if (value === undefined || value === null || value === '')
      throw new Error(`Missing required path parameter ${name}`);
    path = path.replaceAll(`{${name}}`, encodeURIComponent(String(value)));
  }
  const url = new URL(serverUrl.replace(/\/+$/, '') + path);
  for (const name of method.queryParams) {
    const value = args[name];
    if (value === undefined || value === null) continue;
    for (const v of Array.isArray(value) ? value : [value])
      url.searchParams.append(name, typeof v === 'object' ? JSON.stringify(v) : String(v));
  }
  const body =
    method.hasBody && args.requestBody !== undefined ? JSON.stringify(args.requestBody) : undefined;
  return { url: url.toString(), method: method.method, body };
}
