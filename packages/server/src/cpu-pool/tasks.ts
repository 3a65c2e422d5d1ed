import { countTokens } from '../documents/chunking.ts';
import { prepareDocument } from '../documents/prepare.ts';
import { extractText } from '../files/files.parse.ts';

/**
 * The CPU-heavy steps that run in the pool's worker threads, by name. Each takes and returns plain data
 * (structured-cloneable: strings, numbers, arrays, objects, Uint8Array), and throws `AppError` for an
 * input it refuses; the pool hands that error back to the caller unchanged.
 */
export const TASKS = {
  /** The text of an uploaded file (PDF, DOCX, text). */
  extractText: (input: { name: string; contentType: string; data: Uint8Array }) =>
    extractText(
      input.name,
      input.contentType,
      Buffer.from(input.data.buffer, input.data.byteOffset, input.data.byteLength),
    ),
  /** A large document's id, hashes and chunks (tokenising is the costly part): `prepareDocument`. */
  prepareDocument: (input: {
    input: Parameters<typeof prepareDocument>[0];
    options: Parameters<typeof prepareDocument>[1];
  }) => prepareDocument(input.input, input.options),
  /** The o200k token count of a long text (an uploaded file's). */
  countTokens: (input: { text: string }) => countTokens(input.text),
};

export type TaskName = keyof typeof TASKS;
export type TaskInput<N extends TaskName> = Parameters<(typeof TASKS)[N]>[0];
export type TaskOutput<N extends TaskName> = Awaited<ReturnType<(typeof TASKS)[N]>>;
