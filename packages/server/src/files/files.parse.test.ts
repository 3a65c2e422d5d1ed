import { describe, expect, it } from 'vitest';
import {
  DOCUMENT_CLOSE,
  DOCUMENT_OPEN,
  docxWith,
  minimalDocx,
  trivialPagesPdf,
  zip,
} from '../../../../test/harness/office-files.ts';
import { AppError } from '../errors.ts';
import { checkXml, DEFAULT_EXTRACT_LIMITS, decodeText, extractText, MAX_XML_DEPTH } from './files.parse.ts';
import { unzipBounded } from './files.unzip.ts';

const refusal = (fn: () => unknown) => {
  try {
    fn();
  } catch (error) {
    if (error instanceof AppError) return { error_code: error.error_code, detail: error.detail };
    throw error;
  }
  return null;
};
const nested = (levels: number) => Buffer.from(`${'<a>'.repeat(levels)}${'</a>'.repeat(levels)}`);

describe('reading files within limits (issue 22)', () => {
  it('measures XML nesting in one pass: quotes, self-closing elements, comments and CDATA do not fool it', () => {
    expect(refusal(() => checkXml(nested(MAX_XML_DEPTH), '"a.docx"', 'p.xml'))).toBeNull();
    expect(refusal(() => checkXml(nested(MAX_XML_DEPTH + 1), '"a.docx"', 'p.xml'))).toEqual({
      error_code: 'PAYLOAD_TOO_LARGE',
      detail: `"a.docx" nests XML elements deeper than the limit of ${MAX_XML_DEPTH} levels in "p.xml"`,
    });
    const tricky = `<?xml version="1.0"?><r a="x>y" b='/>'>${'<e/><f x="1"/>'.repeat(1000)}<!-- <<<< --><![CDATA[<<<<]]></r>`;
    expect(refusal(() => checkXml(Buffer.from(tricky.repeat(300)), '"a.docx"', 'p.xml'))).toBeNull();
    expect(
      refusal(() =>
        checkXml(Buffer.from('<!DOCTYPE r [<!ENTITY a "aaaa">]><r>&a;</r>'), '"a.docx"', 'p.xml'),
      ),
    ).toMatchObject({ error_code: 'PAYLOAD_TOO_LARGE', detail: expect.stringContaining('declares a DTD') });
  });

  it('caps the entries and the expanded size of a zip before inflating, and refuses an entry larger than it declares', () => {
    const limits = { subject: '"z.zip"', maxEntries: 2, maxBytes: 1000, bytesSetting: 'KAS_MAX_UNZIPPED_MB' };
    const three = zip(['a', 'b', 'c'].map((name) => ({ name, data: name })));
    expect(refusal(() => unzipBounded(three, limits))).toEqual({
      error_code: 'PAYLOAD_TOO_LARGE',
      detail: '"z.zip" holds 3 files, more than the limit of 2',
    });
    expect(unzipBounded(three, { ...limits, maxEntries: 3 }).map((e) => e.data.toString())).toEqual([
      'a',
      'b',
      'c',
    ]);
    expect(refusal(() => unzipBounded(zip([{ name: 'a', data: 'x'.repeat(1001) }]), limits))).toMatchObject({
      error_code: 'PAYLOAD_TOO_LARGE',
      detail: '"z.zip" expands to more than the limit of 0 MB (KAS_MAX_UNZIPPED_MB)',
    });
    // Only the entries kept count: a skipped large entry is never inflated.
    const mixed = zip([
      { name: 'big.bin', data: 'x'.repeat(5000) },
      { name: 'a.txt', data: 'kept' },
    ]);
    expect(unzipBounded(mixed, limits, (n) => n.endsWith('.txt')).map((e) => e.name)).toEqual(['a.txt']);
    // Rewrite a's declared size (local and central headers) to 1 byte: inflating stops after 2 bytes.
    const liar = zip([{ name: 'a', data: 'x'.repeat(500) }]);
    liar.writeUInt32LE(1, 22);
    liar.writeUInt32LE(1, liar.indexOf(Buffer.from([0x50, 0x4b, 0x01, 0x02])) + 24);
    expect(refusal(() => unzipBounded(liar, limits))).toEqual({
      error_code: 'INVALID_INPUT',
      detail: '"z.zip" is not a readable zip archive ("a" holds more than its declared size)',
    });
  });

  it('reads a DOCX within the limits and refuses a compressed bomb by its ratio', async () => {
    expect(
      await extractText('ok.docx', 'application/octet-stream', minimalDocx(['Kept paragraph.'])),
    ).toContain('Kept paragraph.');
    const bomb = docxWith(
      `${DOCUMENT_OPEN}${'<w:p><w:r><w:t>a</w:t></w:r></w:p>'.repeat(100_000)}${DOCUMENT_CLOSE}`,
    );
    await expect(extractText('bomb.docx', 'application/octet-stream', bomb)).rejects.toMatchObject({
      error_code: 'PAYLOAD_TOO_LARGE',
      detail: '"bomb.docx" looks like a zip bomb: "word/document.xml" expands more than 200 times',
    });
  });

  it('stops a PDF at the page limit and at the character limit', async () => {
    const pdf = trivialPagesPdf(5);
    expect(await extractText('p.pdf', 'application/pdf', pdf)).toBe('x\nx\nx\nx\nx');
    await expect(
      extractText('p.pdf', 'application/pdf', pdf, { ...DEFAULT_EXTRACT_LIMITS, maxPdfPages: 4 }),
    ).rejects.toMatchObject({
      error_code: 'PAYLOAD_TOO_LARGE',
      detail: '"p.pdf" has 5 pages, more than the limit of 4 (KAS_MAX_PDF_PAGES)',
    });
    await expect(
      extractText('p.pdf', 'application/pdf', pdf, { ...DEFAULT_EXTRACT_LIMITS, maxChars: 5 }),
    ).rejects.toMatchObject({
      error_code: 'PAYLOAD_TOO_LARGE',
      detail: '"p.pdf" holds more than the limit of 5 characters of text (KAS_MAX_EXTRACTED_CHARS)',
    });
  });

  it('decodes UTF-8 with replacement characters and UTF-16 by its byte-order mark; refuses binary', () => {
    expect(decodeText(Buffer.from([...Buffer.from('caf'), 0xe9, ...Buffer.from(' au lait')]), '"t"')).toBe(
      'caf\uFFFD au lait',
    );
    expect(
      decodeText(Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('héllo', 'utf16le')]), '"t"'),
    ).toBe('héllo');
    expect(decodeText(Buffer.from([0xef, 0xbb, 0xbf, 0x61]), '"t"')).toBe('a');
    expect(refusal(() => decodeText(Buffer.alloc(100), '"zeros.txt"'))).toMatchObject({
      error_code: 'INVALID_INPUT',
      detail: expect.stringContaining('"zeros.txt" is not UTF-8 text'),
    });
  });
});
