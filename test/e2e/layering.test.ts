import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { checkLayering } from '../../scripts/check-layering.ts';

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
    const violations = checkLayering(dir);
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
});
