import { describe, expect, it } from 'vitest';
import { extractAnswer, sentences } from './builtin.ts';
import { passages } from './passages.ts';

describe('sentences read through markup', () => {
  it('joins wrapped lines, so no sentence starts in the middle', () => {
    expect(
      sentences(
        'There is one constructor method named for each type of :dfn:`hash`.  All return\na hash object. For example: use :func:`sha256` to\ncreate a SHA-256 hash object.',
      ),
    ).toEqual([
      'There is one constructor method named for each type of hash.',
      'All return a hash object.',
      'For example: use `sha256` to create a SHA-256 hash object.',
    ]);
  });

  it('keeps a signature with the sentence that describes it (reStructuredText, Markdown, plain text)', () => {
    expect(sentences('.. module:: math\n\n.. function:: gcd(*integers)\n\n   Return the gcd.')).toEqual([
      '`math.gcd(*integers)`: Return the gcd.',
    ]);
    expect(sentences('`list.count(x)`\n: Return the number of times *x* appears in the list.')).toEqual([
      '`list.count(x)`: Return the number of times x appears in the list.',
    ]);
    expect(
      sentences(
        'math.gcd(*integers)\n    Return the greatest common divisor of the specified integer arguments.',
      ),
    ).toEqual([
      '`math.gcd(*integers)`: Return the greatest common divisor of the specified integer arguments.',
    ]);
  });

  it('keeps the code line a sentence introduces, and drops headings, directives and code blocks', () => {
    const found = passages(
      'Title\n=====\n\n.. warning::\n\n   Not for security.\n\nRun it like this::\n\n   python -m venv env\n   ls env\n\n## Next\n\n```\ncode only\n```\n',
    );
    expect(found.filter((p) => !p.isHeading).map((p) => p.text)).toEqual([
      'Not for security.',
      'Run it like this: `python -m venv env`',
    ]);
    expect(found.filter((p) => p.isHeading).map((p) => p.text)).toEqual(['Title', 'Next']);
  });
});

describe('the built-in answer', () => {
  it('answers a FAQ entry with its answer, not its heading or the question asked back elsewhere', () => {
    const answer = extractAnswer('Is there a free tier?', [
      {
        citation_number: 1,
        title: 'Pricing',
        content: 'Is there a free tier? See the FAQ for the answer to this and other questions.',
      },
      {
        citation_number: 2,
        title: 'FAQ',
        content:
          '## Is there a free tier?\n\nYes, up to three projects are free.\n\n## Refunds?\n\nWithin 14 days.',
      },
    ]);
    expect(answer).toBe('Yes, up to three projects are free. [2]');
  });

  it('says a sentence found in several documents once', () => {
    const text = 'Backups run every night at two o’clock.';
    const answer = extractAnswer('When do backups run?', [
      { citation_number: 1, title: 'Backups', content: text },
      { citation_number: 2, title: 'Backups (copy)', content: text },
    ]);
    expect(answer).toBe(`${text} [1]`);
  });
});
