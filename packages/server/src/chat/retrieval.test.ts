import { describe, expect, it } from 'vitest';
import { type RetrievedChunk, rankDocuments } from './retrieval.ts';

function chunk(document_id: string, chunk_id: number, score: number, content: string, title = document_id) {
  return { document_id, chunk_id, score, content, title, semantic_identifier: title } as RetrievedChunk;
}

const order = (queries: string[], chunks: RetrievedChunk[]) =>
  rankDocuments(queries, chunks).map((d) => d.document_id);

describe('rankDocuments (the order chat numbers documents in)', () => {
  it('keeps retrieval order when nothing tells the documents apart', () => {
    const chunks = [
      chunk('a', 0, 3, 'backup tools'),
      chunk('b', 0, 2, 'backup tools'),
      chunk('c', 0, 1, 'backup tools'),
    ];
    expect(order(['backup tools'], chunks)).toEqual(['a', 'b', 'c']);
  });

  it('groups a document’s chunks, best first, and counts its other matching chunks', () => {
    const ranked = rankDocuments(
      ['vacuum settings'],
      [
        chunk('single', 0, 10, 'vacuum settings'),
        chunk('several', 2, 7, 'vacuum settings'),
        chunk('several', 0, 9, 'vacuum settings'),
      ],
    );
    expect(ranked.map((d) => d.document_id)).toEqual(['several', 'single']);
    expect(ranked[0]!.chunks.map((c) => c.chunk_id)).toEqual([0, 2]);
  });

  it('prefers a document containing every word of the question over a higher-scored partial match', () => {
    const chunks = [
      chunk('partial', 0, 10, 'Logical replication copies data between servers.'),
      chunk('complete', 0, 8, 'A row filter limits which rows logical replication copies.'),
    ];
    expect(
      order(['Can I replicate only some rows with a row filter in logical replication?'], chunks),
    ).toEqual(['complete', 'partial']);
  });

  it('prefers the question’s words close together (stop words between them allowed)', () => {
    const chunks = [
      chunk('scattered', 0, 10, 'The plan was ready. Much later the execution of the script began.'),
      chunk('together', 0, 9, 'EXPLAIN shows the execution plan of a statement.'),
    ];
    expect(order(['How do I see the execution plan?'], chunks)).toEqual(['together', 'scattered']);
  });

  it('reads identifiers as one word', () => {
    const chunks = [
      chunk('split', 0, 10, 'The shared memory buffers of the server.'),
      chunk('identifier', 0, 9, 'Set shared_buffers to a quarter of memory.'),
    ];
    expect(order(['How big should shared_buffers be?'], chunks)).toEqual(['identifier', 'split']);
  });
});
