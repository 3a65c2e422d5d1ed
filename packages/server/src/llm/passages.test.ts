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

describe('signatures in reStructuredText reference pages', () => {
  it("names a function of a chunk without its module directive after the page title's module", () => {
    const chunk = '.. function:: gcd(*integers)\n\n   Return the greatest common divisor.\n';
    expect(sentences(chunk)).toEqual(['`gcd(*integers)`: Return the greatest common divisor.']);
    const found = passages(chunk, 'math --- Mathematical functions');
    expect(found.map((p) => [p.signature, p.text])).toEqual([
      ['math.gcd(*integers)', 'Return the greatest common divisor.'],
    ]);
  });

  it('names a method declared inside its class with the class, and ends the class with its body', () => {
    const found = passages(
      [
        '.. module:: collections',
        '',
        '.. class:: Counter([iterable-or-mapping])',
        '',
        '   A dict subclass for counting hashable objects.',
        '',
        '   .. method:: update([iterable-or-mapping])',
        '',
        '      Elements are counted from an iterable.  Like dict.update() but adds counts.',
        '',
        '      .. versionadded:: 3.2',
        '',
        '         Keyword arguments.',
        '',
        'The module also has named tuples.',
      ].join('\n'),
    );
    expect(found.map((p) => [p.signature, p.text])).toEqual([
      ['collections.Counter([iterable-or-mapping])', 'A dict subclass for counting hashable objects.'],
      ['collections.Counter.update([iterable-or-mapping])', 'Elements are counted from an iterable.'],
      ['collections.Counter.update([iterable-or-mapping])', 'Like dict.update() but adds counts.'],
      ['collections.Counter.update([iterable-or-mapping])', 'Keyword arguments.'],
      [null, 'The module also has named tuples.'],
    ]);
  });

  it('joins a signature continued over several lines, shortens a long one, and skips code directives', () => {
    const found = passages(
      [
        '.. module:: subprocess',
        '',
        '.. function:: run(args, *, stdin=None, input=None, stdout=None, stderr=None,\\',
        '                  capture_output=False, shell=False, cwd=None, timeout=None)',
        '',
        '   Run the command described by *args*.  Wait for command to complete.',
        '',
        '   .. code-block:: python',
        '',
        '      run(["ls", "-l"])',
        '',
        '   >>> subprocess.run(["ls", "-l"])',
        "   CompletedProcess(args=['ls', '-l'], returncode=0)",
        '',
        '   The arguments are used to create a Popen.',
      ].join('\n'),
    );
    expect(found.map((p) => p.text)).toEqual([
      'Run the command described by args.',
      'Wait for command to complete.',
      'The arguments are used to create a Popen.',
    ]);
    expect(new Set(found.map((p) => p.signature))).toEqual(
      new Set(['subprocess.run(args, *, stdin=None, input=None, stdout=None, …)']),
    );
  });
});

describe('what is no prose', () => {
  it('leaves out reStructuredText tables and code that reached the prose (a chunk starting inside an example)', () => {
    const text = [
      '+--------+-------------------+',
      '| Option | Meaning           |',
      '+========+===================+',
      '| ``e``  | Exponent notation |',
      '+--------+-------------------+',
      '',
      '====  =====',
      'Name  Value',
      '====  =====',
      'a     1',
      '====  =====',
      '',
      '    print(f"Task {name}: Compute factorial({number}), currently i={i}...")',
      '    total = total + await compute(number)',
      '',
      'The coefficient has one digit before the point.  For `p` digits the value is `round(x, p)`.',
    ].join('\n');
    expect(sentences(text)).toEqual([
      'The coefficient has one digit before the point.',
      'For `p` digits the value is `round(x, p)`.',
    ]);
  });

  it('joins a sentence that a blank line cut (chunks put back together)', () => {
    expect(
      sentences(
        '.. function:: lognormvariate(mu, sigma)\n\n   Log normal distribution.  If you take the natural logarithm of this\n\n   distribution, you get a normal distribution.\n\nDescription\n\npg_dump is a utility for backing up a database.',
      ),
    ).toEqual([
      '`lognormvariate(mu, sigma)`: Log normal distribution.',
      'If you take the natural logarithm of this distribution, you get a normal distribution.',
      'Description',
      'pg_dump is a utility for backing up a database.',
    ]);
  });

  it('reads on after a table whose start is in another chunk', () => {
    const chunk = ['a     1', 'b     2', '====  =====', '', 'The prose after the table is read.'].join('\n');
    expect(sentences(chunk).at(-1)).toBe('The prose after the table is read.');
  });

  it('ends a sentence at two spaces before a lower-case parameter name', () => {
    expect(
      sentences('Compress the *data*, returning a bytes object.  *compresslevel* has the same meaning.'),
    ).toEqual(['Compress the data, returning a bytes object.', 'compresslevel has the same meaning.']);
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

  it('shows a signature once, before the first sentence it describes, and names "this module"', () => {
    const content = [
      '.. function:: isqrt(n)',
      '',
      '   Return the integer square root of the nonnegative integer n.  This is the floor of the exact square root of n.',
      '',
      '.. function:: sqrt(x)',
      '',
      '   Return the square root of x.',
    ].join('\n');
    const answer = extractAnswer('How do I compute the square root of x?', [
      { citation_number: 1, title: 'math --- Mathematical functions', content },
    ]);
    expect(answer).toBe(
      '`math.isqrt(n)`: Return the integer square root of the nonnegative integer n. [1] This is the floor of the exact square root of n. [1] `math.sqrt(x)`: Return the square root of x. [1]',
    );
    const timeit = extractAnswer('How do I time small bits of code?', [
      {
        citation_number: 1,
        title: 'timeit --- Measure execution time of small code snippets',
        content: 'This module provides a simple way to time small bits of Python code.',
      },
    ]);
    expect(timeit).toBe('The `timeit` module provides a simple way to time small bits of Python code. [1]');
  });

  it('answers a FAQ question with the sentence under it, though it shares no word with the question', () => {
    const answer = extractAnswer('How do I check whether an object is an instance of a class?', [
      {
        citation_number: 1,
        title: 'Programming FAQ',
        content:
          'How do I check if an object is an instance of a given class?\n------------------------------------------------------------\n\nUse the built-in function :func:`isinstance(obj, cls) <isinstance>`.\n',
      },
    ]);
    expect(answer).toBe('Use the built-in function `isinstance(obj, cls)`. [1]');
  });
});
