import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export const FAKE_EMBEDDING_DIMENSIONS = 1024;

/**
 * Deterministic hashing embedder: each word (crudely stemmed to its first 5 letters) adds ±1 to one
 * dimension. Texts sharing words get similar vectors, which is all the tests need of "meaning".
 */
export function hashEmbedding(text: string, dimensions = FAKE_EMBEDDING_DIMENSIONS): number[] {
  const vector = new Array<number>(dimensions).fill(0);
  for (const word of text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []) {
    const digest = createHash('sha256').update(word.slice(0, 5)).digest();
    vector[digest.readUInt32BE(0) % dimensions]! += digest[4]! & 1 ? 1 : -1;
  }
  return vector;
}

export interface FakeEmbeddings {
  /** Base URL ending in /v1, as OpenAI-compatible servers are configured. */
  url: string;
  requests: { model: string; input: string[]; authorization: string | undefined }[];
  /** Answer the next request with this HTTP status. */
  failNext(status: number): void;
  close(): Promise<void>;
}

/** A local server speaking OpenAI's `POST /v1/embeddings`. */
export async function startFakeEmbeddings(): Promise<FakeEmbeddings> {
  const requests: FakeEmbeddings['requests'] = [];
  let failStatus: number | null = null;
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    if (req.method !== 'POST' || req.url !== '/v1/embeddings') {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: 'Not found', type: 'invalid_request_error' } }));
      return;
    }
    const body = JSON.parse(Buffer.concat(chunks).toString()) as { model: string; input: string | string[] };
    const input = Array.isArray(body.input) ? body.input : [body.input];
    requests.push({ model: body.model, input, authorization: req.headers.authorization });
    if (failStatus) {
      res.writeHead(failStatus, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: 'simulated failure', type: 'server_error' } }));
      failStatus = null;
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({
        object: 'list',
        model: body.model,
        data: input.map((text, index) => ({ object: 'embedding', index, embedding: hashEmbedding(text) })),
        usage: { prompt_tokens: 0, total_tokens: 0 },
      }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    failNext: (status) => {
      failStatus = status;
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
