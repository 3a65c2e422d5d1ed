import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { checkLayering, LAYERING_ALLOWLIST, layerOf } from '../../scripts/check-layering.ts';

const root = join(import.meta.dirname, '../..');
const scratch = mkdtempSync(join(tmpdir(), 'kas-layering-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

function tree(files: Record<string, string>): string {
  const dir = mkdtempSync(join(scratch, 'tree-'));
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), content);
  }
  return dir;
}

describe('the layering check', () => {
  it('passes on this repository', () => {
    expect(checkLayering(root)).toEqual([]);
  });

  it('fails on each kind of deliberate violation, and only on those', () => {
    const dir = tree({
      'packages/server/src/widgets/widgets.service.ts': [
        "import { TRPCError } from '@trpc/server';",
        "import express from 'express';",
        "import { sql } from 'kysely';",
        'export const list = (db: any) => db.selectFrom("widgets").selectAll().execute();',
        'export const count = (db: any) => sql`select count(*) from widgets`.execute(db);',
      ].join('\n'),
      'packages/server/src/widgets/widgets.router.ts': "import { TRPCError } from '@trpc/server';\n",
      'packages/server/src/widgets/widgets.repository.ts':
        'export const list = (db: any) => db.selectFrom("widgets").selectAll().execute();\n',
      'packages/server/src/widgets/widgets.test.ts': "import express from 'express';\n",
      'packages/sdk/src/client.ts': [
        "import type { AppRouter } from '@kas/server';",
        "import { appRouter } from '@kas/server';",
      ].join('\n'),
    });
    const violations = checkLayering(dir, []);
    expect(violations.map((v) => `${v.file}:${v.line}`).sort()).toEqual([
      'packages/sdk/src/client.ts:2',
      'packages/server/src/widgets/widgets.service.ts:1',
      'packages/server/src/widgets/widgets.service.ts:2',
      'packages/server/src/widgets/widgets.service.ts:4',
      'packages/server/src/widgets/widgets.service.ts:5',
    ]);
    expect(violations.find((v) => v.line === 4)?.rule).toMatch(/SQL outside a repository/);
    expect(violations.find((v) => v.file.startsWith('packages/sdk'))?.rule).toMatch(
      /server code at run time/,
    );
  });

  it('places every layer of the design review', () => {
    expect(
      [
        'errors.ts',
        'db/columns.ts',
        'chat/chat.table.ts',
        'db/schema.ts',
        'outbound/outbound.ts',
        'search/search-index.ts',
        'chat/chat.repository.ts',
        'context.ts',
        'auth/scope.ts',
        'chat/chat.service.ts',
        'chat/service/turn.ts',
        'trpc.ts',
        'chat/chat.router.ts',
        'runtime.ts',
        'worker/worker.ts',
      ].map((path) => `${path}: ${layerOf(path)}`),
    ).toEqual([
      'errors.ts: leaves',
      'db/columns.ts: leaves',
      'chat/chat.table.ts: leaves',
      'db/schema.ts: database',
      'outbound/outbound.ts: platform',
      'search/search-index.ts: platform',
      'chat/chat.repository.ts: data',
      'context.ts: context',
      'auth/scope.ts: policy',
      'chat/chat.service.ts: services',
      'chat/service/turn.ts: services',
      'trpc.ts: transport',
      'chat/chat.router.ts: transport',
      'runtime.ts: assembly',
      'worker/worker.ts: assembly',
    ]);
  });

  // The kinds of fault the layering check exists for, each as the code once had it (issue 21).
  const faults = {
    // A table file importing the schema that assembles it, for a column helper.
    'packages/server/src/db/schema.ts':
      "import type { WidgetsTable } from '../widgets/widgets.table.ts';\nexport interface Database { widgets: WidgetsTable }\n",
    'packages/server/src/widgets/widgets.table.ts':
      "import type { CreatedAt } from '../db/schema.ts';\nexport interface WidgetsTable { created_at: CreatedAt }\n",
    // The bottom type of the app importing a service's state type.
    'packages/server/src/context.ts':
      "import type { WidgetQueue } from './widgets/widgets.service.ts';\nexport interface AppDeps { widgets: WidgetQueue }\n",
    'packages/server/src/widgets/widgets.service.ts': [
      "import type { AppDeps } from '../context.ts';",
      "import { gadgetOf } from '../gadgets/gadgets.service.ts';",
      'export interface WidgetQueue { pending: string[] }',
      'export const widgetOf = (deps: AppDeps) => gadgetOf(deps);',
    ].join('\n'),
    // Two domains' services importing each other.
    'packages/server/src/gadgets/gadgets.service.ts': [
      "import type { AppDeps } from '../context.ts';",
      "import { widgetOf } from '../widgets/widgets.service.ts';",
      'export const gadgetOf = (deps: AppDeps): unknown => deps;',
      'export const both = (deps: AppDeps) => widgetOf(deps);',
    ].join('\n'),
    // Two files of one folder importing each other's values.
    'packages/server/src/gadgets/service/a.ts': "import { b } from './b.ts';\nexport const a = () => b();\n",
    'packages/server/src/gadgets/service/b.ts':
      "import { a } from './a.ts';\nexport const b = (): unknown => a;\n",
    // A repository reading a service, and the transport's base file reaching a service.
    'packages/server/src/gadgets/gadgets.repository.ts':
      "import { gadgetOf } from './gadgets.service.ts';\nexport const find = gadgetOf;\n",
    'packages/server/src/trpc.ts':
      "import { gadgetOf } from './gadgets/gadgets.service.ts';\nexport const t = gadgetOf;\n",
    'packages/server/src/gadgets/gadgets.router.ts':
      "import { t } from '../trpc.ts';\nimport { gadgetOf } from './gadgets.service.ts';\nexport const r = [t, gadgetOf];\n",
    // A top-level file no rule places.
    'packages/server/src/misc.ts': 'export const misc = 1;\n',
    // Test code is exempt.
    'packages/server/src/widgets/widgets.test.ts':
      "import { t } from '../trpc.ts';\nimport { misc } from '../misc.ts';\nexport const x = [t, misc];\n",
  };

  it('fails on an import against the layer order, on import cycles and on unplaced files, naming each import', () => {
    const lines = checkLayering(tree(faults), []).map((v) => `${v.file}:${v.line}: ${v.rule}`);
    const up = lines.filter((l) => l.includes(' goes up ')).sort();
    expect(up).toEqual([
      "packages/server/src/context.ts:1: import type './widgets/widgets.service.ts' (widgets/widgets.service.ts, services) goes up from context to services",
      "packages/server/src/gadgets/gadgets.repository.ts:1: import './gadgets.service.ts' (gadgets/gadgets.service.ts, services) goes up from data to services",
      "packages/server/src/widgets/widgets.table.ts:1: import type '../db/schema.ts' (db/schema.ts, database) goes up from leaves to database",
    ]);
    expect(lines).toContain(
      "packages/server/src/trpc.ts:1: import './gadgets/gadgets.service.ts' (gadgets/gadgets.service.ts, services): trpc.ts imports nothing above policy",
    );
    expect(lines).toContain(
      "packages/server/src/gadgets/service/a.ts:1: import './b.ts' (gadgets/service/b.ts, services) is part of an import cycle between files: gadgets/service/a.ts, gadgets/service/b.ts",
    );
    const folderCycle = lines.filter((l) => l.includes('cycle between folders')).map((l) => l.split(': ')[0]);
    expect(folderCycle).toEqual(
      expect.arrayContaining([
        'packages/server/src/gadgets/gadgets.service.ts:2',
        'packages/server/src/widgets/widgets.service.ts:2',
      ]),
    );
    expect(lines).toContain(
      'packages/server/src/misc.ts:1: in no layer: place it in PLACES (scripts/check-layering.ts)',
    );
    expect(lines.some((l) => l.includes('widgets.test.ts') || l.includes('gadgets.router.ts'))).toBe(false);
  });

  it('skips allowlisted imports, and reports an entry whose import is gone', () => {
    const dir = tree({
      'packages/server/src/gadgets/gadgets.repository.ts':
        "import { gadgetOf } from './gadgets.service.ts';\nexport const find = gadgetOf;\n",
      'packages/server/src/gadgets/gadgets.service.ts': 'export const gadgetOf = () => 1;\n',
    });
    expect(
      checkLayering(dir, [
        { from: 'gadgets/gadgets.repository.ts', to: 'gadgets/gadgets.service.ts' },
        { from: 'trpc.ts', to: 'gadgets/gadgets.service.ts' },
      ]).map((v) => v.rule),
    ).toEqual([
      'allowlisted import trpc.ts -> gadgets/gadgets.service.ts no longer exists: remove its entry',
    ]);
  });

  it('allows no import against the order in the real tree', () => {
    expect(LAYERING_ALLOWLIST).toEqual([]);
  });

  it('exits 1 from the command line, printing the offending import', () => {
    const run = spawnSync(process.execPath, [join(root, 'scripts/check-layering.ts'), tree(faults)], {
      encoding: 'utf8',
    });
    expect(run.status).toBe(1);
    expect(run.stderr).toContain(
      "packages/server/src/widgets/widgets.table.ts:1: import type '../db/schema.ts' (db/schema.ts, database) goes up from leaves to database",
    );
    expect(run.stdout).toMatch(/\d+ layering violations/);
  });

  it('fails on a wildcard export of the server package and on export * in an entry point', () => {
    const dir = tree({
      'packages/server/package.json': JSON.stringify({
        exports: { '.': './src/index.ts', './testing': './src/testing/index.ts', './*': './src/*' },
      }),
      'packages/server/src/index.ts': [
        "export * from './errors.ts';",
        "export * as widgetsService from './widgets/widgets.service.ts';",
        "export { AppError } from './errors.ts';",
      ].join('\n'),
      'packages/server/src/testing/index.ts': "export * from '../errors.ts';\n",
      'packages/server/src/errors.ts': 'export class AppError extends Error {}\n',
      'packages/server/src/widgets/widgets.service.ts': 'export const list = () => [];\n',
    });
    expect(checkLayering(dir, []).map((v) => `${v.file}:${v.line}: ${v.rule}`)).toEqual([
      "packages/server/src/index.ts:1: export * from './errors.ts' in an entry point: list what it exports",
      "packages/server/src/testing/index.ts:1: export * from '../errors.ts' in an entry point: list what it exports",
      'packages/server/package.json:1: exports "./*": a wildcard subpath makes every file importable; name each entry point',
    ]);
  });
});
