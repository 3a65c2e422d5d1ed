import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '../..');
const read = (file: string) => readFileSync(join(root, file), 'utf8');

/** Every setting `config.ts` reads: the keys of its Zod schema, one per line. */
function settings(): string[] {
  return [...read('packages/server/src/config.ts').matchAll(/^ {2}([A-Z][A-Z0-9_]+):/gm)].map((m) => m[1]!);
}

describe('the documentation', () => {
  it('lists every setting of config.ts in the configuration reference, with a default and an example, and no other', () => {
    const page = read('docs/configuration.md');
    const rows = new Map(
      [...page.matchAll(/^\| `([A-Z][A-Z0-9_]+)` +\| ([^|]+) \| ([^|]+) \|/gm)].map((m) => [
        m[1]!,
        { fallback: m[2]!.trim(), example: m[3]!.trim() },
      ]),
    );
    const known = settings();
    expect(known.length).toBeGreaterThan(50);
    expect(known.filter((name) => !rows.has(name))).toEqual([]);
    expect([...rows.keys()].filter((name) => !known.includes(name))).toEqual([]);
    for (const [name, row] of rows) {
      expect(row.fallback, name).not.toBe('');
      expect(row.example, name).toContain(`${name}=`);
    }
  });

  it('links only to files and headings that exist', () => {
    const pages = [
      'README.md',
      'packages/sdk/README.md',
      ...readdirSync(join(root, 'docs')).map((f) => `docs/${f}`),
    ];
    const broken: string[] = [];
    const anchors = (file: string) =>
      new Set(
        [...read(file).matchAll(/^#+ (.+)$/gm)].map((m) =>
          m[1]!
            .toLowerCase()
            .replace(/[^\p{L}\p{N} _-]/gu, '')
            .replace(/ /g, '-'),
        ),
      );
    for (const page of pages) {
      // Links in prose only: code blocks and spans show link syntax as text (`[[1]](link)`).
      const prose = read(page)
        .replace(/```[\s\S]*?```/g, '')
        .replace(/`[^`\n]*`/g, '');
      for (const [, target] of prose.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/.test(target!)) continue;
        const [path, anchor] = target!.split('#');
        const file = path ? join(dirname(page), path) : page;
        if (!existsSync(join(root, file))) broken.push(`${page}: ${target}`);
        else if (anchor && file.endsWith('.md') && !anchors(file).has(anchor))
          broken.push(`${page}: ${target}`);
      }
    }
    expect(broken).toEqual([]);
  });
});
