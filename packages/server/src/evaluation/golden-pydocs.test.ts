import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import * as documentsService from '../documents/documents.service.ts';
import { useTestRuntime } from '../testing/runtime-fixture.ts';
import { formatReport, parseGoldenSet } from './evaluation.service.ts';

const CORPUS = join(import.meta.dirname, '../../../../test/eval/pydocs');
const GOLDEN = join(import.meta.dirname, '../../../../test/eval/pydocs.golden.jsonl');

/** The page's title as a website connector would give it: its first heading, without markup. */
function titleOf(text: string, fallback: string): string {
  const first = text.split('\n').find((l) => /[\p{L}]/u.test(l)) ?? fallback;
  return first
    .replace(/^#+\s*/, '')
    .replace(/:\w+:`!?([^`]*)`/g, '$1')
    .trim();
}

describe('the built-in answerer on documentation pages (test/eval/pydocs)', () => {
  const t = useTestRuntime();
  beforeAll(async () => {
    for (const file of readdirSync(CORPUS).sort()) {
      const text = readFileSync(join(CORPUS, file), 'utf8');
      const id = file.replace(/\.(md|rst)$/, '');
      await documentsService.ingestDocument({
        ctx: t.deps,
        input: { document: { id, semantic_identifier: titleOf(text, id), sections: [{ text }] } },
      });
    }
  });

  it('answers with the expected identifier or phrase for at least 80 % of the golden questions', async () => {
    const cases = parseGoldenSet(readFileSync(GOLDEN, 'utf8'));
    const report = await t.caller(t.adminKey).evaluation.evaluate({ cases });
    console.info(formatReport(report));
    expect(report.missing_document_ids).toEqual([]);
    expect(report.chat!.answer_contains).toBeGreaterThanOrEqual(0.8);
    // The FAQ's answer, not its heading; no sentence of another page.
    const free = report.results.find((r) => r.question === 'Is there a free tier?')!;
    expect(free.answer).toMatch(/^Yes, up to three projects are free/);
    expect(free.cited_documents).toEqual(['faq']);
    const gcd = report.results.find((r) => r.question.includes('greatest common divisor'))!;
    expect(gcd.answer).toContain('math.gcd(*integers)');
    expect(gcd.answer).toContain('Return the greatest common divisor');
    const count = report.results.find((r) => r.question.includes('how many times an item'))!;
    expect(count.cited_documents).toEqual(['datastructures']);
  });

  it('flags expected ids that no document has', async () => {
    const report = await t.caller(t.adminKey).evaluation.evaluate({
      cases: [
        {
          question: 'How do I shuffle a list?',
          document_ids: ['random', 'randmo'],
          answer_contains: 'shuffle',
        },
      ],
    });
    expect(report.missing_document_ids).toEqual(['randmo']);
    expect(report.chat!.answer_contains).toBe(1);
    expect(formatReport(report)).toContain('no indexed document has (misspelt, or not indexed): randmo');
  });
});
