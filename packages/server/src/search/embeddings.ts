/** An OpenAI-compatible embeddings endpoint (`KAS_EMBEDDING_BASE_URL`). */
export interface Embedder {
  /** One unit-length vector per text, in order. */
  embed(texts: string[]): Promise<number[][]>;
}

function normalise(vector: number[]): number[] {
  const norm = Math.sqrt(vector.reduce((sum, v) => sum + v * v, 0)) || 1;
  return vector.map((v) => v / norm);
}

/** `…/v1` bases get `/embeddings`; bare hosts get `/v1/embeddings`. */
export function embeddingsUrl(baseUrl: string): string {
  const base = baseUrl.replace(/\/+$/, '');
  return /\/v\d+$/.test(base) ? `${base}/embeddings` : `${base}/v1/embeddings`;
}

export function createOpenAiEmbedder(options: {
  baseUrl: string;
  model?: string | undefined;
  apiKey?: string | undefined;
  batchSize?: number;
  timeoutMs?: number;
}): Embedder {
  const url = embeddingsUrl(options.baseUrl);
  const model = options.model ?? 'text-embedding-3-small';
  const batchSize = options.batchSize ?? 64;
  return {
    async embed(texts) {
      const out: number[][] = [];
      for (let i = 0; i < texts.length; i += batchSize) {
        const input = texts.slice(i, i + batchSize);
        const response = await fetch(url, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            ...(options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {}),
          },
          body: JSON.stringify({ model, input }),
          signal: AbortSignal.timeout(options.timeoutMs ?? 60_000),
        });
        if (!response.ok) {
          throw new Error(
            `Embeddings request failed: ${response.status} ${(await response.text()).slice(0, 200)}`,
          );
        }
        const body = (await response.json()) as { data?: { embedding: number[]; index: number }[] };
        const data = [...(body.data ?? [])].sort((a, b) => a.index - b.index);
        if (data.length !== input.length)
          throw new Error('Embeddings response has the wrong number of vectors');
        out.push(...data.map((d) => normalise(d.embedding)));
      }
      return out;
    },
  };
}
