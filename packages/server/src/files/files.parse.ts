import type { Config } from '../config.ts';
import { AppError } from '../errors.ts';
import { unzipBounded } from './files.unzip.ts';

export type ParsedKind = 'pdf' | 'docx' | 'text';

const TEXT_EXTENSIONS =
  /\.(txt|md|markdown|csv|tsv|json|ya?ml|xml|html?|log|rst|ts|js|py|java|go|rs|c|cpp|h|sql|sh)$/i;

export function kindOf(name: string, contentType: string): ParsedKind | null {
  const type = contentType.toLowerCase();
  if (type === 'application/pdf' || /\.pdf$/i.test(name)) return 'pdf';
  if (type.includes('wordprocessingml') || /\.docx$/i.test(name)) return 'docx';
  if (type.startsWith('text/') || type === 'application/json' || TEXT_EXTENSIONS.test(name)) return 'text';
  return null;
}

/** How much one file may expand to when read (settings, so plain data that crosses to a worker thread). */
export interface ExtractLimits {
  /** Most characters of text one file or page may yield (KAS_MAX_EXTRACTED_CHARS). */
  maxChars: number;
  /** Most pages of a PDF (KAS_MAX_PDF_PAGES). */
  maxPdfPages: number;
  /** Most bytes an archive (a DOCX, a connector's zip) may expand to (KAS_MAX_UNZIPPED_MB). */
  maxUnzippedBytes: number;
}

export const DEFAULT_EXTRACT_LIMITS: ExtractLimits = {
  maxChars: 10_000_000,
  maxPdfPages: 5000,
  maxUnzippedBytes: 100 * 1024 * 1024,
};

export function extractLimitsOf(
  config: Pick<Config, 'KAS_MAX_EXTRACTED_CHARS' | 'KAS_MAX_PDF_PAGES' | 'KAS_MAX_UNZIPPED_MB'>,
): ExtractLimits {
  return {
    maxChars: config.KAS_MAX_EXTRACTED_CHARS,
    maxPdfPages: config.KAS_MAX_PDF_PAGES,
    maxUnzippedBytes: config.KAS_MAX_UNZIPPED_MB * 1024 * 1024,
  };
}

/** Files a DOCX may hold (Word writes a few dozen). */
const MAX_DOCX_ENTRIES = 1000;
/** An XML part of a DOCX over 1 MB that expands more than this is a zip bomb (Word's parts: 5–30×). */
const MAX_DOCX_RATIO = 200;
/** Element nesting of a DOCX's XML (Word nests tables in tables; a few dozen levels at most). */
export const MAX_XML_DEPTH = 256;

export function tooManyChars(subject: string, limits: ExtractLimits): AppError {
  return new AppError(
    'PAYLOAD_TOO_LARGE',
    `${subject} holds more than the limit of ${limits.maxChars} characters of text (KAS_MAX_EXTRACTED_CHARS)`,
  );
}

/**
 * The text of an uploaded file: PDF through unpdf, DOCX through mammoth, text as UTF-8 (or UTF-16
 * with a byte-order mark). Bounded by `limits`: a refusal is a 413 naming the setting. Runs in the
 * CPU pool's worker threads (cpu-pool/tasks.ts).
 */
export async function extractText(
  name: string,
  contentType: string,
  data: Buffer,
  limits: ExtractLimits = DEFAULT_EXTRACT_LIMITS,
): Promise<string> {
  const kind = kindOf(name, contentType);
  const subject = `"${name}"`;
  if (!kind)
    throw new AppError(
      'UNSUPPORTED_MEDIA_TYPE',
      `Cannot read "${name}" (${contentType}): upload text, Markdown, PDF or DOCX files`,
    );
  let text: string;
  try {
    if (kind === 'pdf') text = await pdfText(data, subject, limits);
    else if (kind === 'docx') text = await docxText(data, subject, limits);
    else text = decodeText(data, subject);
  } catch (error) {
    if (error instanceof AppError) throw error;
    throw new AppError(
      'INVALID_INPUT',
      `Could not read "${name}": the file is damaged or not a ${kind.toUpperCase()} file`,
      { cause: error },
    );
  }
  if (text.length > limits.maxChars) throw tooManyChars(subject, limits);
  return text;
}

/** Page by page, so that the page and character limits stop the work rather than judge it afterwards. */
async function pdfText(data: Buffer, subject: string, limits: ExtractLimits): Promise<string> {
  const { getDocumentProxy } = await import('unpdf');
  const pdf = await getDocumentProxy(new Uint8Array(data));
  try {
    if (pdf.numPages > limits.maxPdfPages)
      throw new AppError(
        'PAYLOAD_TOO_LARGE',
        `${subject} has ${pdf.numPages} pages, more than the limit of ${limits.maxPdfPages} (KAS_MAX_PDF_PAGES)`,
      );
    const pages: string[] = [];
    let chars = 0;
    for (let n = 1; n <= pdf.numPages; n++) {
      const page = await pdf.getPage(n);
      const content = await page.getTextContent();
      let text = '';
      for (const item of content.items)
        if ('str' in item && item.str != null) text += item.str + (item.hasEOL ? '\n' : '');
      page.cleanup();
      chars += text.length + 1;
      if (chars > limits.maxChars) throw tooManyChars(subject, limits);
      pages.push(text);
    }
    // As unpdf's `mergePages`: whitespace collapsed, line breaks kept, at most one blank line.
    return pages
      .join('\n')
      .replace(/[^\S\n]+/g, ' ')
      .replace(/ ?\n ?/g, '\n')
      .replace(/\n{3,}/g, '\n\n');
  } finally {
    await pdf.loadingTask.destroy();
  }
}

/**
 * A DOCX is a zip: its entries are counted, their declared and actual sizes capped and their XML's
 * nesting checked before mammoth inflates and parses it (a 153 KB bomb expanded to gigabytes).
 */
async function docxText(data: Buffer, subject: string, limits: ExtractLimits): Promise<string> {
  const parts = unzipBounded(data, {
    subject,
    maxEntries: MAX_DOCX_ENTRIES,
    maxBytes: limits.maxUnzippedBytes,
    bytesSetting: 'KAS_MAX_UNZIPPED_MB',
    maxRatio: MAX_DOCX_RATIO,
    damaged: (why) =>
      new AppError(
        'INVALID_INPUT',
        `Could not read ${subject}: the file is damaged or not a DOCX file (${why})`,
      ),
  });
  for (const part of parts) if (/\.(xml|rels)$/i.test(part.name)) checkXml(part.data, subject, part.name);
  const mammoth = await import('mammoth');
  const { value } = await mammoth.extractRawText({ buffer: data });
  return value;
}

const LT = 0x3c;
const GT = 0x3e;
const SLASH = 0x2f;
const BANG = 0x21;
const QUESTION = 0x3f;

/**
 * Refuses XML nested deeper than `MAX_XML_DEPTH` (parsers recurse per level) and any DTD (entity
 * expansion), in one linear pass over the bytes.
 */
export function checkXml(xml: Buffer, subject: string, part: string): void {
  let depth = 0;
  let i = 0;
  const skipTo = (marker: string, from: number) => {
    const at = xml.indexOf(marker, from, 'latin1');
    return at < 0 ? xml.length : at + marker.length;
  };
  while (i < xml.length) {
    i = xml.indexOf(LT, i);
    if (i < 0) break;
    const next = xml[i + 1];
    if (next === QUESTION) {
      i = skipTo('?>', i + 2);
    } else if (next === BANG) {
      if (xml.toString('latin1', i, i + 4) === '<!--') i = skipTo('-->', i + 4);
      else if (xml.toString('latin1', i, i + 9) === '<![CDATA[') i = skipTo(']]>', i + 9);
      else
        throw new AppError(
          'PAYLOAD_TOO_LARGE',
          `${subject} declares a DTD in "${part}" (refused: entity expansion)`,
        );
    } else if (next === SLASH) {
      depth--;
      i = xml.indexOf(GT, i);
      if (i < 0) break;
    } else {
      let quote = 0;
      let j = i + 1;
      for (; j < xml.length; j++) {
        const c = xml[j] as number;
        if (quote) {
          if (c === quote) quote = 0;
        } else if (c === 0x22 || c === 0x27) quote = c;
        else if (c === GT) break;
      }
      if (xml[j - 1] !== SLASH && ++depth > MAX_XML_DEPTH)
        throw new AppError(
          'PAYLOAD_TOO_LARGE',
          `${subject} nests XML elements deeper than the limit of ${MAX_XML_DEPTH} levels in "${part}"`,
        );
      i = j;
    }
  }
}

const REPLACEMENT = /\uFFFD/g;

/**
 * Text files: UTF-8, or UTF-16 when a byte-order mark says so. Invalid sequences become U+FFFD (as
 * browsers read them) rather than refusing the file, unless so much is invalid that it is not text.
 */
export function decodeText(data: Buffer, subject: string): string {
  let encoding = 'utf-8';
  if (data[0] === 0xff && data[1] === 0xfe) encoding = 'utf-16le';
  else if (data[0] === 0xfe && data[1] === 0xff) encoding = 'utf-16be';
  const text = new TextDecoder(encoding).decode(data);
  const sample = text.slice(0, 1_000_000);
  const bad = (sample.match(REPLACEMENT)?.length ?? 0) + sample.split('\u0000').length - 1;
  if (sample.length && bad / sample.length > 0.1)
    throw new AppError(
      'INVALID_INPUT',
      `${subject} is not UTF-8 text (nor UTF-16 with a byte-order mark): save it as UTF-8`,
    );
  return text;
}
