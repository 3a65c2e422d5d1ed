import { once } from 'node:events';
import { crc32, createDeflateRaw, deflateRawSync } from 'node:zlib';

/** Real, minimal document files written by hand, so that upload tests parse what a user would send. */

function escapePdfText(text: string): string {
  return text.replace(/[\\()]/g, (c) => `\\${c}`);
}

/** A one-page PDF 1.4 with one text line per entry of `lines` (Helvetica), with a correct xref table. */
export function minimalPdf(lines: string[]): Buffer {
  const content = [
    'BT',
    '/F1 12 Tf',
    '72 720 Td',
    '14 TL',
    ...lines.map((line, i) => `${i === 0 ? '' : 'T* '}(${escapePdfText(line)}) Tj`),
    'ET',
  ].join('\n');
  return pdfOf([
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>',
    `<< /Length ${Buffer.byteLength(content, 'latin1')} >>\nstream\n${content}\nendstream`,
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>',
  ]);
}

/** A PDF 1.4 of the given objects (numbered from 1, the first the catalog), with a correct xref table. */
function pdfOf(objects: string[]): Buffer {
  const parts: string[] = ['%PDF-1.4\n'];
  let length = parts[0]!.length;
  const offsets: number[] = [];
  for (const [i, body] of objects.entries()) {
    offsets.push(length);
    const text = `${i + 1} 0 obj\n${body}\nendobj\n`;
    parts.push(text);
    length += Buffer.byteLength(text, 'latin1');
  }
  const xref = length;
  parts.push(`xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`);
  for (const offset of offsets) parts.push(`${String(offset).padStart(10, '0')} 00000 n \n`);
  parts.push(`trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`);
  return Buffer.from(parts.join(''), 'latin1');
}

/** A PDF of `count` trivial pages sharing one content stream (10,000 pages: about 1.4 MB). */
export function trivialPagesPdf(count: number): Buffer {
  const content = 'BT /F1 12 Tf 72 720 Td (x) Tj ET';
  const kids = Array.from({ length: count }, (_, i) => `${i + 5} 0 R`).join(' ');
  return pdfOf([
    '<< /Type /Catalog /Pages 2 0 R >>',
    `<< /Type /Pages /Kids [${kids}] /Count ${count} >>`,
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>',
    `<< /Length ${content.length} >>\nstream\n${content}\nendstream`,
    ...Array.from(
      { length: count },
      () =>
        '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 3 0 R >> >> >>',
    ),
  ]);
}

/** An entry already deflated (`deflatedRepeat`): its raw deflate stream, CRC-32 and size as declared. */
export interface PackedEntry {
  packed: Buffer;
  crc: number;
  /** The size written in the headers: a zip bomb may declare less than it holds. */
  size: number;
}

/**
 * Deflates `prefix`, then `chunk` `times` times, then `suffix`, without holding the expanded bytes (a
 * zip bomb's entry: 200 MB of one repeated chunk deflate to about 200 KB).
 */
export async function deflatedRepeat(
  chunk: Buffer | string,
  times: number,
  prefix: Buffer | string = '',
  suffix: Buffer | string = '',
): Promise<PackedEntry> {
  const deflate = createDeflateRaw({ level: 9 });
  const out: Buffer[] = [];
  deflate.on('data', (b: Buffer) => out.push(b));
  const done = once(deflate, 'end');
  let crc = 0;
  let size = 0;
  const write = async (data: Buffer | string) => {
    const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
    crc = crc32(bytes, crc);
    size += bytes.length;
    if (!deflate.write(bytes)) await once(deflate, 'drain');
  };
  await write(prefix);
  const bytes = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk;
  // Written in blocks of about 1 MB: one write per repetition would take minutes.
  const perBlock = Math.max(1, Math.floor((1024 * 1024) / bytes.length));
  const block = Buffer.concat(Array.from({ length: Math.min(perBlock, times) }, () => bytes));
  for (let left = times; left > 0; left -= perBlock)
    await write(left >= perBlock ? block : block.subarray(0, left * bytes.length));
  await write(suffix);
  deflate.end();
  await done;
  return { packed: Buffer.concat(out), crc, size };
}

/** A PDF of many pages, each with its own lines of text (Helvetica), for large uploads. */
export function manyPagePdf(pages: string[][]): Buffer {
  const font = 3;
  const objects: string[] = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    '', // the page tree, once the pages' numbers are known
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>',
  ];
  const kids: number[] = [];
  for (const lines of pages) {
    const content = [
      'BT',
      '/F1 10 Tf',
      '50 750 Td',
      '12 TL',
      ...lines.map((line, i) => `${i === 0 ? '' : 'T* '}(${escapePdfText(line)}) Tj`),
      'ET',
    ].join('\n');
    objects.push(`<< /Length ${Buffer.byteLength(content, 'latin1')} >>\nstream\n${content}\nendstream`);
    const contents = objects.length;
    objects.push(
      `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents ${contents} 0 R /Resources << /Font << /F1 ${font} 0 R >> >> >>`,
    );
    kids.push(objects.length);
  }
  objects[1] = `<< /Type /Pages /Kids [${kids.map((k) => `${k} 0 R`).join(' ')}] /Count ${kids.length} >>`;
  const parts: string[] = ['%PDF-1.4\n'];
  let length = parts[0]!.length;
  const offsets: number[] = [];
  for (const [i, body] of objects.entries()) {
    offsets.push(length);
    const part = `${i + 1} 0 obj\n${body}\nendobj\n`;
    parts.push(part);
    length += Buffer.byteLength(part, 'latin1');
  }
  parts.push(`xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`);
  for (const offset of offsets) parts.push(`${String(offset).padStart(10, '0')} 00000 n \n`);
  parts.push(`trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${length}\n%%EOF\n`);
  return Buffer.from(parts.join(''), 'latin1');
}

/** A zip archive (deflated entries, CRC-32, central directory), as Office files are. */
export function zip(
  entries: Array<{ name: string; data: Buffer | string } | ({ name: string } & PackedEntry)>,
): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const entry of entries) {
    const name = Buffer.from(entry.name, 'utf8');
    let packed: Buffer;
    let crc: number;
    let size: number;
    if ('packed' in entry) ({ packed, crc, size } = entry);
    else {
      const data = typeof entry.data === 'string' ? Buffer.from(entry.data, 'utf8') : entry.data;
      packed = deflateRawSync(data);
      crc = crc32(data);
      size = data.length;
    }
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4); // version needed
    local.writeUInt16LE(0x0800, 6); // UTF-8 names
    local.writeUInt16LE(8, 8); // deflate
    local.writeUInt16LE(0, 10); // time
    local.writeUInt16LE(0x21, 12); // date: 1980-01-01
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(packed.length, 18);
    local.writeUInt32LE(size, 22);
    local.writeUInt16LE(name.length, 26);
    local.writeUInt16LE(0, 28);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(20, 4); // made by
    central.writeUInt16LE(20, 6); // needed
    central.writeUInt16LE(0x0800, 8);
    central.writeUInt16LE(8, 10);
    central.writeUInt16LE(0, 12);
    central.writeUInt16LE(0x21, 14);
    central.writeUInt32LE(crc, 16);
    central.writeUInt32LE(packed.length, 20);
    central.writeUInt32LE(size, 24);
    central.writeUInt16LE(name.length, 28);
    // extra, comment, disk, internal and external attributes stay 0
    central.writeUInt32LE(offset, 42);
    locals.push(local, name, packed);
    centrals.push(central, name);
    offset += local.length + name.length + packed.length;
  }
  const directory = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(directory.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, directory, end]);
}

const xmlEscape = (text: string) =>
  text.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);

const DOCX_HEADER = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n';
/** `word/document.xml` of a DOCX is `DOCUMENT_OPEN`, the body's XML, `DOCUMENT_CLOSE`. */
export const DOCUMENT_OPEN = `${DOCX_HEADER}<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>`;
export const DOCUMENT_CLOSE = '</w:body></w:document>';

/** A DOCX with one paragraph per entry of `paragraphs`. */
export function minimalDocx(paragraphs: string[]): Buffer {
  return docxWith(
    `${DOCUMENT_OPEN}${paragraphs
      .map((p) => `<w:p><w:r><w:t xml:space="preserve">${xmlEscape(p)}</w:t></w:r></w:p>`)
      .join('')}${DOCUMENT_CLOSE}`,
  );
}

/** A DOCX whose `word/document.xml` is `document` (plain XML, or an entry deflated by `deflatedRepeat`). */
export function docxWith(document: string | PackedEntry): Buffer {
  const header = DOCX_HEADER;
  return zip([
    {
      name: '[Content_Types].xml',
      data: `${header}<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>`,
    },
    {
      name: '_rels/.rels',
      data: `${header}<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>`,
    },
    typeof document === 'string'
      ? { name: 'word/document.xml', data: document }
      : { name: 'word/document.xml', ...document },
  ]);
}

export const DOCX_TYPE = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';
