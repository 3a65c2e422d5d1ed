/**
 * The layering rules of STYLE.md, checked rather than remembered (`npm test` runs this):
 * - under packages/server/src, every file sits in one layer of `LAYERS` (placed by `PLACES`), and an
 *   import (value or type) never points to a higher layer;
 * - no import cycle: neither between files, nor between folders (a folder's files of one layer form a
 *   unit: `db/schema.ts` assembles the `<domain>.table.ts` leaves, which sit below `db/` though they
 *   live in the domains' folders);
 * - only the transport files (trpc.ts, router.ts, context.ts, *.router.ts) import express or @trpc/server;
 * - SQL (Kysely's `sql` tag or query builders) appears only in repositories and migrations;
 * - the SDK never imports server code at run time;
 * - the server package's entry points are explicit: no `"./*"` subpath in its exports, no `export *`
 *   (other than a named namespace) in an entry file.
 * Test code (tests, contract suites, testing/) is exempt. Prints each violation with the offending
 * import; exits 1 if any.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, posix, relative, sep } from 'node:path';
import ts from 'typescript';

export interface Violation {
  file: string;
  line: number;
  rule: string;
}

/**
 * The server's layers, lowest first (STYLE.md "Layers", design review L0..L8). A file may import its
 * own layer or a lower one. `context` (AppDeps, the ServiceContext every service takes, and contracts
 * over them) sits above the repositories, which take an executor and never a context, and below the
 * auth policy, which reads the deps. The REST bridge (packages/rest-bridge) is the process layer
 * above all of these.
 */
export const LAYERS = [
  'leaves',
  'database',
  'platform',
  'data',
  'context',
  'policy',
  'services',
  'transport',
  'assembly',
] as const;
export type Layer = (typeof LAYERS)[number];

/**
 * Where each file of packages/server/src sits: the first pattern that matches its path (relative to
 * src, `/`-separated) decides. A top-level file no pattern names is a violation; a file in a domain
 * folder that no earlier pattern names is a service.
 */
export const PLACES: readonly (readonly [RegExp, Layer])[] = [
  // Leaves: import nothing of the app but other leaves.
  [/^(errors|validation|config|timestamps|logger|memory|version|edit-distance)\.ts$/, 'leaves'],
  [/^db\/columns\.ts$/, 'leaves'],
  [/\.(table|schemas)\.ts$/, 'leaves'],
  // What a credential and a role are (parse, hash, display, expiry): pure, so schemas can name them.
  [/^auth\/(roles|credential)\.ts$/, 'leaves'],
  [/^identity\/principals\.ts$/, 'leaves'],
  // State that lives for the app, typed where context.ts can import it without a service.
  [/^(documents\/ingestion-queue|connectors\/indexing-state|chat\/stop-registry)\.ts$/, 'leaves'],
  [/^db\//, 'database'],
  // Platform: the outside world and the engines the services use.
  [/^(outbound|crypto|llm|cpu-pool)\//, 'platform'],
  [/^rate-limit\.ts$/, 'platform'],
  [
    /^search\/(search-index|create-search-index|postgres|meilisearch|hybrid|bm25|embeddings|query-parser|stop-words|search\.repository)\.ts$/,
    'platform',
  ],
  [/^auth\/(auth-cache|pg-auth-cache|auth-sync\.repository|oidc)\.ts$/, 'platform'],
  [/^connectors\/sources\//, 'platform'],
  [/^actions\/(openapi|mcp|oauth)\//, 'platform'],
  [/^(files\/files\.parse|documents\/(chunking|prepare))\.ts$/, 'platform'],
  [/^files\/files\.unzip\.ts$/, 'platform'],
  // Ranks long chat attachments; runs in the worker pool, so it sits with the other pool tasks.
  [/^chat\/attachments\.ts$/, 'platform'],
  [/\.repository\.ts$/, 'data'],
  [/^context\.ts$/, 'context'],
  [/^worker\/task\.ts$/, 'context'],
  [/^auth\//, 'policy'],
  [/^(trpc|router)\.ts$|\.router\.ts$/, 'transport'],
  // The MCP surface: tools over the services, as a router's procedures are.
  [/^mcp\/mcp\.tools\.ts$/, 'transport'],
  [/^(runtime|index|startup)\.ts$/, 'assembly'],
  [/^worker\//, 'assembly'],
  [/^[^/]+\//, 'services'],
];

/** Files held below their own layer: the highest layer each may import. */
export const CEILINGS: readonly (readonly [RegExp, Layer])[] = [
  // Every router imports trpc.ts: it authenticates through the auth layer and never reaches a service.
  [/^trpc\.ts$/, 'policy'],
];

/**
 * Imports allowed against the order, each with its reason. Empty: keep it so. An entry whose import is
 * gone is reported, so the list cannot outlive its reason. `from` and `to` are paths under
 * packages/server/src.
 */
export const LAYERING_ALLOWLIST: readonly { from: string; to: string }[] = [];

const TRANSPORT_FILES = /(^|\/)(trpc|router|context)\.ts$|\.router\.ts$/;
const SQL_HOMES = /\.repository\.ts$|\/db\/migrations\/|\/db\/database\.ts$/;
const TEST_CODE = /\.test\.ts$|\.test-helpers\.ts$|\.contract\.ts$|\/testing\//;
const FRAMEWORKS = /^(express|@trpc\/server)(\/|$)/;
const SERVER_SRC = 'packages/server/src';
const QUERY_BUILDERS = new Set([
  'selectFrom',
  'insertInto',
  'updateTable',
  'deleteFrom',
  'replaceInto',
  'mergeInto',
]);

function filesUnder(dir: string): string[] {
  let entries: string[];
  try {
    entries = readdirSync(dir);
  } catch {
    return [];
  }
  return entries.flatMap((name) => {
    const path = join(dir, name);
    if (name === 'node_modules' || name === 'dist' || name === 'generated') return [];
    if (statSync(path).isDirectory()) return filesUnder(path);
    return name.endsWith('.ts') ? [path] : [];
  });
}

interface Import {
  specifier: string;
  typeOnly: boolean;
  node: ts.Node;
}

function importsOf(source: ts.SourceFile): Import[] {
  const found: Import[] = [];
  for (const statement of source.statements) {
    if (
      (ts.isImportDeclaration(statement) || ts.isExportDeclaration(statement)) &&
      statement.moduleSpecifier &&
      ts.isStringLiteral(statement.moduleSpecifier)
    ) {
      const clause = ts.isImportDeclaration(statement) ? statement.importClause : undefined;
      const typeOnly = ts.isImportDeclaration(statement)
        ? Boolean(clause?.isTypeOnly) ||
          Boolean(
            clause &&
              !clause.name &&
              clause.namedBindings &&
              ts.isNamedImports(clause.namedBindings) &&
              clause.namedBindings.elements.length > 0 &&
              clause.namedBindings.elements.every((e) => e.isTypeOnly),
          )
        : statement.isTypeOnly;
      found.push({ specifier: statement.moduleSpecifier.text, typeOnly, node: statement });
    }
  }
  // `import('…')` in code and in types.
  const visit = (node: ts.Node) => {
    if (
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments[0] &&
      ts.isStringLiteral(node.arguments[0])
    ) {
      found.push({ specifier: node.arguments[0].text, typeOnly: false, node });
    } else if (
      ts.isImportTypeNode(node) &&
      ts.isLiteralTypeNode(node.argument) &&
      ts.isStringLiteral(node.argument.literal)
    ) {
      found.push({ specifier: node.argument.literal.text, typeOnly: true, node });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

function sqlUses(source: ts.SourceFile): ts.Node[] {
  const uses: ts.Node[] = [];
  const visit = (node: ts.Node) => {
    if (ts.isTaggedTemplateExpression(node)) {
      const tag = ts.isCallExpression(node.tag) ? node.tag.expression : node.tag;
      const name = ts.isPropertyAccessExpression(tag) ? tag.expression : tag;
      if (ts.isIdentifier(name) && name.text === 'sql') uses.push(node);
    } else if (
      ts.isCallExpression(node) &&
      ts.isPropertyAccessExpression(node.expression) &&
      QUERY_BUILDERS.has(node.expression.name.text)
    ) {
      uses.push(node);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return uses;
}

/** The layer of a file (path relative to packages/server/src), or null when no rule places it. */
export function layerOf(path: string): Layer | null {
  for (const [pattern, layer] of PLACES) if (pattern.test(path)) return layer;
  return null;
}

/** The folder unit of a file: its top-level folder (or the file itself) within its layer. */
function unitOf(path: string, layer: Layer): string {
  return `${path.split('/')[0]} (${layer})`;
}

/** One import between two server files, both given relative to packages/server/src. */
interface Edge {
  from: string;
  to: string;
  line: number;
  specifier: string;
  typeOnly: boolean;
}

/** Tarjan's strongly connected components of a graph given as adjacency lists; only those with 2+ nodes. */
function cycles(nodes: Iterable<string>, next: (node: string) => Iterable<string>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  let counter = 0;
  const connect = (node: string) => {
    index.set(node, counter);
    low.set(node, counter);
    counter++;
    stack.push(node);
    onStack.add(node);
    for (const other of next(node)) {
      if (!index.has(other)) {
        connect(other);
        low.set(node, Math.min(low.get(node) ?? 0, low.get(other) ?? 0));
      } else if (onStack.has(other)) {
        low.set(node, Math.min(low.get(node) ?? 0, index.get(other) ?? 0));
      }
    }
    if (low.get(node) === index.get(node)) {
      const component: string[] = [];
      let member: string | undefined;
      do {
        member = stack.pop();
        if (member === undefined) break;
        onStack.delete(member);
        component.push(member);
      } while (member !== node);
      if (component.length > 1) found.push(component.sort());
    }
  };
  for (const node of nodes) if (!index.has(node)) connect(node);
  return found;
}

/** Checks the repository at `root` (or a tree shaped like it). */
export function checkLayering(
  root: string,
  allowlist: readonly { from: string; to: string }[] = LAYERING_ALLOWLIST,
): Violation[] {
  const violations: Violation[] = [];
  const report = (source: ts.SourceFile, node: ts.Node, rule: string) => {
    const { line } = source.getLineAndCharacterOfPosition(node.getStart(source));
    violations.push({ file: relative(root, source.fileName).split(sep).join('/'), line: line + 1, rule });
  };
  const parse = (path: string) =>
    ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);

  const serverRoot = join(root, SERVER_SRC);
  const edges: Edge[] = [];
  const layers = new Map<string, Layer>();
  const allowed = new Set(allowlist.map((a) => `${a.from} -> ${a.to}`));
  const allowedSeen = new Set<string>();

  for (const path of filesUnder(serverRoot)) {
    const name = relative(root, path).split(sep).join('/');
    if (TEST_CODE.test(name)) continue;
    const source = parse(path);
    const inServer = relative(serverRoot, path).split(sep).join('/');
    const layer = layerOf(inServer);
    if (layer) layers.set(inServer, layer);
    else
      violations.push({
        file: name,
        line: 1,
        rule: 'in no layer: place it in PLACES (scripts/check-layering.ts)',
      });
    for (const use of importsOf(source)) {
      if (use.specifier.startsWith('.')) {
        const target = posix.normalize(posix.join(posix.dirname(inServer), use.specifier));
        if (target.startsWith('../') || TEST_CODE.test(`/${target}`)) continue;
        const { line } = source.getLineAndCharacterOfPosition(use.node.getStart(source));
        const edge = {
          from: inServer,
          to: target,
          line: line + 1,
          specifier: use.specifier,
          typeOnly: use.typeOnly,
        };
        const key = `${edge.from} -> ${edge.to}`;
        if (allowed.has(key)) allowedSeen.add(key);
        else edges.push(edge);
      } else if (/^@kas\/rest-bridge(\/|$)/.test(use.specifier)) {
        report(source, use.node, `imports ${use.specifier}: the server never imports the process above it`);
      }
    }
    if (!TRANSPORT_FILES.test(name)) {
      for (const use of importsOf(source)) {
        if (FRAMEWORKS.test(use.specifier))
          report(
            source,
            use.node,
            `imports ${use.specifier} outside trpc.ts, router.ts, context.ts and *.router.ts`,
          );
      }
    }
    if (!SQL_HOMES.test(name)) {
      for (const node of sqlUses(source)) report(source, node, 'SQL outside a repository or migration');
    }
  }

  const describe = (e: Edge) =>
    `import${e.typeOnly ? ' type' : ''} '${e.specifier}' (${e.to}, ${layers.get(e.to) ?? '?'})`;
  const at = (e: Edge, rule: string) =>
    violations.push({ file: `${SERVER_SRC}/${e.from}`, line: e.line, rule });

  for (const e of edges) {
    const from = layers.get(e.from);
    const to = layers.get(e.to);
    if (!from || !to) continue;
    if (LAYERS.indexOf(to) > LAYERS.indexOf(from)) at(e, `${describe(e)} goes up from ${from} to ${to}`);
    const ceiling = CEILINGS.find(([pattern]) => pattern.test(e.from))?.[1];
    if (ceiling && LAYERS.indexOf(to) > LAYERS.indexOf(ceiling))
      at(e, `${describe(e)}: ${e.from} imports nothing above ${ceiling}`);
  }

  const byFile = new Map<string, Edge[]>();
  for (const e of edges) byFile.set(e.from, [...(byFile.get(e.from) ?? []), e]);
  for (const component of cycles(byFile.keys(), (f) => (byFile.get(f) ?? []).map((e) => e.to))) {
    const members = new Set(component);
    for (const e of edges)
      if (members.has(e.from) && members.has(e.to))
        at(e, `${describe(e)} is part of an import cycle between files: ${component.join(', ')}`);
  }

  const unit = (file: string) => {
    const layer = layers.get(file);
    return layer ? unitOf(file, layer) : file;
  };
  const unitEdges = new Map<string, Set<string>>();
  for (const e of edges) {
    const [a, b] = [unit(e.from), unit(e.to)];
    if (a !== b) unitEdges.set(a, (unitEdges.get(a) ?? new Set()).add(b));
  }
  for (const component of cycles(unitEdges.keys(), (u) => unitEdges.get(u) ?? [])) {
    const members = new Set(component);
    for (const e of edges) {
      const [a, b] = [unit(e.from), unit(e.to)];
      if (a !== b && members.has(a) && members.has(b))
        at(e, `${describe(e)} is part of an import cycle between folders: ${component.join(', ')}`);
    }
  }

  for (const key of allowed)
    if (!allowedSeen.has(key))
      violations.push({
        file: 'scripts/check-layering.ts',
        line: 1,
        rule: `allowlisted import ${key} no longer exists: remove its entry`,
      });

  const manifest = join(root, 'packages/server/package.json');
  let exportsField: Record<string, string> = {};
  try {
    exportsField = JSON.parse(readFileSync(manifest, 'utf8')).exports ?? {};
  } catch {
    // No server package in this tree.
  }
  for (const [subpath, target] of Object.entries(exportsField)) {
    if (subpath.includes('*') || target.includes('*')) {
      violations.push({
        file: 'packages/server/package.json',
        line: 1,
        rule: `exports "${subpath}": a wildcard subpath makes every file importable; name each entry point`,
      });
      continue;
    }
    const entry = join(root, 'packages/server', target);
    let source: ts.SourceFile;
    try {
      source = parse(entry);
    } catch {
      continue;
    }
    for (const statement of source.statements)
      if (ts.isExportDeclaration(statement) && !statement.exportClause && statement.moduleSpecifier)
        report(
          source,
          statement,
          `export * from ${statement.moduleSpecifier.getText(source)} in an entry point: list what it exports`,
        );
  }

  for (const path of filesUnder(join(root, 'packages/sdk/src'))) {
    const source = parse(path);
    for (const use of importsOf(source)) {
      const serverCode =
        use.specifier.startsWith('@kas/server') || /(^|\/)server\/src(\/|$)/.test(use.specifier);
      if (serverCode && !use.typeOnly)
        report(source, use.node, `the SDK imports server code at run time (${use.specifier})`);
    }
  }
  return violations;
}

// `node scripts/check-layering.ts [root]`: this repository, or a tree shaped like it.
if (import.meta.main) {
  const violations = checkLayering(process.argv[2] ?? join(import.meta.dirname, '..'));
  for (const v of violations) process.stderr.write(`${v.file}:${v.line}: ${v.rule}\n`);
  process.stdout.write(violations.length ? `${violations.length} layering violations\n` : 'layering: ok\n');
  process.exit(violations.length ? 1 : 0);
}
