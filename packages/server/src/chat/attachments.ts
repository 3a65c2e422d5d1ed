import { chunkDocument } from '../documents/chunking.ts';
import { keywords } from '../llm/builtin.ts';
import { B, idf, K1 } from '../search/bm25.ts';

/** An attached file's text as the prompt gives it. */
export interface AttachedText {
  name: string;
  text: string;
}

/**
 * An upper bound of `tokens(text)` at no cost: every token of a byte-level BPE covers at least one UTF-8
 * byte. Prompts that fit by this bound (nearly all: the windows are large) are never tokenized.
 */
export function tokensAtMost(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}

/** Whether the attached files fit `budgetTokens` as they are (nothing to retrieve, nothing costly). */
export function fitWhole(files: AttachedText[], budgetTokens: number): boolean {
  return files.reduce((n, f) => n + tokensAtMost(f.text), 0) <= budgetTokens;
}

/** Attached files take at most this share of the model's window; beyond it they are retrieved from. */
const ATTACHMENT_SHARE = 0.5;
/** Between two retrieved parts of a file that are not adjacent in it. */
const GAP = '\n[…]\n';

/** The tokens attached files may take in a prompt. */
export function attachmentBudget(contextWindow: number): number {
  return Math.floor(contextWindow * ATTACHMENT_SHARE);
}

/**
 * The attached files as the model reads them. Files that fit `budgetTokens` together are given whole.
 * Longer ones are treated like documents: chunked as ingestion chunks them, the chunks ranked against the
 * question by BM25 (the index's K1, B and IDF), and only the best chunks that fit the budget are given, in
 * their files' order — a long attachment is never pasted whole (nor cut at an arbitrary length).
 * Costly for long files (chunking and tokenising): the chat runs it in the worker pool (`rankAttachments`).
 */
export function attachmentsFor(
  question: string,
  files: AttachedText[],
  budgetTokens: number,
): AttachedText[] {
  if (!files.length || fitWhole(files, budgetTokens)) return files;
  const chunked = files.map((file, fileIndex) =>
    chunkDocument({ title: file.name, sections: [{ text: file.text }] }).map((chunk) => ({
      fileIndex,
      chunk,
      terms: keywords(chunk.content),
    })),
  );
  const all = chunked.flat();
  if (all.reduce((n, c) => n + c.chunk.token_count, 0) <= budgetTokens) return files;

  const queryTerms = [...new Set(keywords(question))];
  const df = new Map(queryTerms.map((t) => [t, 0]));
  for (const c of all) for (const t of new Set(c.terms)) if (df.has(t)) df.set(t, df.get(t)! + 1);
  const avgLength = all.reduce((n, c) => n + c.terms.length, 0) / all.length || 1;
  const scored = all.map((c, order) => {
    const tf = new Map<string, number>();
    for (const t of c.terms) if (df.has(t)) tf.set(t, (tf.get(t) ?? 0) + 1);
    let score = 0;
    for (const [term, count] of tf)
      score +=
        (idf(all.length, df.get(term)!) * (count * (K1 + 1))) /
        (count + K1 * (1 - B + (B * c.terms.length) / avgLength));
    return { ...c, score, order };
  });
  // Best first; without any question word, the files' beginnings.
  const ranked = scored.sort((a, b) => b.score - a.score || a.order - b.order);
  const chosen = new Set<object>();
  let used = 0;
  for (const c of ranked) {
    if (used + c.chunk.token_count > budgetTokens) continue;
    chosen.add(c.chunk);
    used += c.chunk.token_count;
  }
  return files.map((file, fileIndex) => {
    const parts = chunked[fileIndex]!.filter((c) => chosen.has(c.chunk));
    if (parts.length === chunked[fileIndex]!.length) return file;
    let text = '';
    let previous = -1;
    for (const { chunk } of parts) {
      if (text) text += chunk.chunk_id === previous + 1 ? '\n' : GAP;
      text += chunk.content.trim();
      previous = chunk.chunk_id;
    }
    return {
      name: `${file.name} (only the parts most relevant to the question: the file is too long to read whole)`,
      text: text || '(no part of this file matched the question)',
    };
  });
}
