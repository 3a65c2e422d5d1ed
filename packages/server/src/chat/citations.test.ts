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
