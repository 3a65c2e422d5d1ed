import { describe, expect, it } from 'vitest';
import { extractAnswer, NOTHING_RELEVANT, planSubQuestions } from '../llm/builtin.ts';
import { CitationProcessor } from './citations.ts';

const docs = new Map([
  [1, { document_id: 'a', link: 'https://a' }],
  [2, { document_id: 'b', link: null }],
]);

function run(pieces: string[], include = true) {
  const p = new CitationProcessor(docs, include);
  let text = '';
  const cited: unknown[] = [];
  for (const piece of [...pieces.map((x) => p.push(x)), p.flush()]) {
    text += piece.text;
    cited.push(...piece.cited);
  }
  return { text, cited, plain: p.citationless };
}

describe('CitationProcessor', () => {
  it('rewrites markers split across tokens, in every bracket style, once per document', () => {
    const out = run(['A [', '1', '] b [[2]] c【1】 d [1, 2]', ' e [9].']);
    expect(out.text).toBe('A [[1]](https://a) b [[2]]() c [[1]](https://a) d [[1]](https://a)[[2]]() e .');
    expect(out.cited).toEqual([
      { citation_number: 1, document_id: 'a' },
      { citation_number: 2, document_id: 'b' },
    ]);
    expect(out.plain).toBe('A  b  c d  e .');
  });

  it('removes markers without reporting when citations are off', () => {
    expect(run(['x [1] y [2]'], false)).toEqual({ text: 'x  y ', cited: [], plain: 'x  y ' });
  });

  it('leaves code and plain brackets alone', () => {
    expect(run(['``', '`\narr[1]\n``', '` and [note]']).text).toBe('```\narr[1]\n``` and [note]');
  });
});

describe('built-in answerer', () => {
  const sources = [
    {
      citation_number: 1,
      title: 'Fuel',
      content: 'The Falcon rocket burns kerosene. It was first launched in 2010.',
    },
    {
      citation_number: 2,
      title: 'Crew',
      content: 'Dragon carries four astronauts. The cafeteria serves lunch.',
    },
  ];

  it('selects the best sentences in source order, each cited, deterministically', () => {
    const answer = extractAnswer('What does the Falcon rocket burn and how many astronauts fly?', sources);
    expect(answer).toBe('The Falcon rocket burns kerosene. [1] Dragon carries four astronauts. [2]');
    expect(extractAnswer('What does the Falcon rocket burn and how many astronauts fly?', sources)).toBe(
      answer,
    );
  });

  it('cites the most relevant source first, even when retrieval ranked it lower', () => {
    const answer = extractAnswer('What does the laptop policy require?', [
      {
        citation_number: 1,
        title: 'General notes',
        content: 'Laptops are mentioned here once, among many other things people say about office life.',
      },
      {
        citation_number: 2,
        title: 'Laptop policy',
        content: 'The laptop policy requires encryption of every laptop.',
      },
    ]);
    expect(answer.indexOf('[2]')).toBeGreaterThanOrEqual(0);
    expect(answer.indexOf('[2]')).toBeLessThan(
      answer.indexOf('[1]') === -1 ? Infinity : answer.indexOf('[1]'),
    );
  });

  it('never cites a source that shares only stop words with the question', () => {
    const answer = extractAnswer('What is the rule for the use of laptops at home?', [
      {
        citation_number: 1,
        title: 'Notes',
        content: 'It is what it is, and that is the way it was for all of them.',
      },
      { citation_number: 2, title: 'Devices', content: 'Laptops taken home must be encrypted by the owner.' },
    ]);
    expect(answer).toBe('Laptops taken home must be encrypted by the owner. [2]');
    expect(answer).not.toContain('[1]');
  });

  it('skips headings and table-of-contents lines', () => {
    const answer = extractAnswer('How do I rank search results?', [
      {
        citation_number: 1,
        title: 'Contents',
        content: '12.3. Ranking Search Results\n12.4. Search Results',
      },
      {
        citation_number: 2,
        title: 'Controls',
        content: 'Use ts_rank to rank the search results by relevance.',
      },
    ]);
    expect(answer).toBe('Use ts_rank to rank the search results by relevance. [2]');
  });

  it('says so when nothing is relevant', () => {
    expect(extractAnswer('Who painted the Mona Lisa?', sources)).toBe(NOTHING_RELEVANT);
    expect(extractAnswer('anything', [])).toBe(NOTHING_RELEVANT);
  });

  it('plans sub-questions from the parts of a question', () => {
    expect(planSubQuestions('What fuel does Falcon use and who flies Dragon?')).toEqual([
      'What fuel does Falcon use',
      'who flies Dragon',
    ]);
    expect(planSubQuestions('What fuel does Falcon use?')).toEqual(['What fuel does Falcon use?']);
  });
});
