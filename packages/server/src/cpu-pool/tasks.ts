import { type AttachedText, attachmentsFor } from '../chat/attachments.ts';
import { extractHtml } from '../connectors/sources/html.ts';
import { countTokens } from '../documents/chunking.ts';
import { prepareDocument } from '../documents/prepare.ts';
import { AppError } from '../errors.ts';
import { decodeText, type ExtractLimits, extractText, tooManyChars } from '../files/files.parse.ts';
import { unzipBounded } from '../files/files.unzip.ts';

const bufferOf = (data: Uint8Array) => Buffer.from(data.buffer, data.byteOffset, data.byteLength);

/**
 * The CPU-heavy steps that run in the pool's worker threads, by name. Each takes and returns plain data
 * (structured-cloneable: strings, numbers, arrays, objects, Uint8Array), and throws `AppError` for an
 * input it refuses; the pool hands that error back to the caller unchanged.
 */
export const TASKS = {
  /** The text of an uploaded file (PDF, DOCX, text), within the limits (default: files.parse.ts). */
  extractText: (input: { name: string; contentType: string; data: Uint8Array; limits?: ExtractLimits }) =>
    extractText(input.name, input.contentType, bufferOf(input.data), input.limits),
  /** Text, title and links of an HTML page (a crawled page, a Confluence page, an uploaded .html file). */
  extractHtml: (input: { subject: string; html: string | Uint8Array; limits: ExtractLimits }) => {
    const html =
      typeof input.html === 'string' ? input.html : decodeText(bufferOf(input.html), input.subject);
    const page = extractHtml(html);
    if (page.text.length > input.limits.maxChars) throw tooManyChars(input.subject, input.limits);
    return page;
  },
  /** The entries of an uploaded zip whose names match `include`, inflated within `maxBytes` together. */
  unzip: (input: {
    subject: string;
    data: Uint8Array;
    include: RegExp;
    maxEntries: number;
    maxBytes: number;
  }) =>
    unzipBounded(
      bufferOf(input.data),
      {
        subject: input.subject,
        maxEntries: input.maxEntries,
        maxBytes: input.maxBytes,
        bytesSetting: 'KAS_MAX_UNZIPPED_MB',
      },
      (name) => input.include.test(name),
    ).map((entry) => ({ name: entry.name, data: new Uint8Array(entry.data) })),
  /** The parts of long chat attachments most relevant to the question (`attachmentsFor`). */
  rankAttachments: (input: { question: string; files: AttachedText[]; budgetTokens: number }) =>
    attachmentsFor(input.question, input.files, input.budgetTokens),
  /** A large document's id, hashes and chunks (tokenising is the costly part): `prepareDocument`. */
  prepareDocument: (input: {
    input: Parameters<typeof prepareDocument>[0];
    options: Parameters<typeof prepareDocument>[1];
  }) => prepareDocument(input.input, input.options),
  /**
   * A large JSON request body (UTF-8, a byte-order mark ignored), as express's JSON parser reads it in
   * strict mode: an object or an array, or the same refusal.
   */
  parseJson: (input: { data: Uint8Array }) => {
    let value: unknown;
    try {
      value = JSON.parse(new TextDecoder().decode(input.data));
    } catch {
      value = undefined;
    }
    if (typeof value !== 'object' || value === null)
      throw new AppError('VALIDATION_ERROR', 'Malformed JSON in request body');
    return value;
  },
  /** The o200k token count of a long text (an uploaded file's). */
  countTokens: (input: { text: string }) => countTokens(input.text),
};

export type TaskName = keyof typeof TASKS;
export type TaskInput<N extends TaskName> = Parameters<(typeof TASKS)[N]>[0];
export type TaskOutput<N extends TaskName> = Awaited<ReturnType<(typeof TASKS)[N]>>;
