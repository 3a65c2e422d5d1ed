/**
 * The layering rules of STYLE.md, checked rather than remembered (`npm test` runs this):
 * - under packages/server/src, only the transport files (trpc.ts, router.ts, context.ts, *.router.ts)
 *   import express or @trpc/server;
 * - SQL (Kysely's `sql` tag or query builders) appears only in repositories and migrations;
 * - the SDK never imports server code at run time.
 * Test code (tests, contract suites, testing/) is exempt. Prints each violation; exits 1 if any.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import ts from 'typescript';

export interface Violation {
  file: string;
  line: number;
  rule: string;
}

const TRANSPORT_FILES = /(^|\/)(trpc|router|context)\.ts$|\.router\.ts$/;
const SQL_HOMES = /\.repository\.ts$|\/db\/migrations\/|\/db\/database\.ts$/;
const TEST_CODE = /\.test\.ts$|\.test-helpers\.ts$|\.contract\.ts$|\/testing\//;
const FRAMEWORKS = /^(express|@trpc\/server)(\/|$)/;
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

function importsOf(source: ts.SourceFile): { specifier: string; typeOnly: boolean; node: ts.Node }[] {
  const found: { specifier: string; typeOnly: boolean; node: ts.Node }[] = [];
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

/** Checks the repository at `root` (or a tree shaped like it). */
export function checkLayering(root: string): Violation[] {
  const violations: Violation[] = [];
  const report = (source: ts.SourceFile, node: ts.Node, rule: string) => {
    const { line } = source.getLineAndCharacterOfPosition(node.getStart(source));
    violations.push({ file: relative(root, source.fileName).split(sep).join('/'), line: line + 1, rule });
  };
  const parse = (path: string) =>
    ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);

  for (const path of filesUnder(join(root, 'packages/server/src'))) {
    const name = relative(root, path).split(sep).join('/');
    if (TEST_CODE.test(name)) continue;
    const source = parse(path);
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

if (import.meta.main) {
  const violations = checkLayering(join(import.meta.dirname, '..'));
  for (const v of violations) process.stderr.write(`${v.file}:${v.line}: ${v.rule}\n`);
  process.stdout.write(violations.length ? `${violations.length} layering violations\n` : 'layering: ok\n');
  process.exit(violations.length ? 1 : 0);
}
