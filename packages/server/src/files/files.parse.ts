import { AppError } from '../errors.ts';

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

/** The text of an uploaded file: PDF through unpdf, DOCX through mammoth, text as UTF-8. */
export async function extractText(name: string, contentType: string, data: Buffer): Promise<string> {
  const kind = kindOf(name, contentType);
  if (!kind)
    throw new AppError(
      'UNSUPPORTED_MEDIA_TYPE',
      `Cannot read "${name}" (${contentType}): upload text, Markdown, PDF or DOCX files`,
    );
  try {
    if (kind === 'pdf') {
      const { extractText: pdfText, getDocumentProxy } = await import('unpdf');
      const pdf = await getDocumentProxy(new Uint8Array(data));
      const { text } = await pdfText(pdf, { mergePages: true });
      return text;
    }
    if (kind === 'docx') {
      const mammoth = await import('mammoth');
      const { value } = await mammoth.extractRawText({ buffer: data });
      return value;
    }
    return data.toString('utf8');
  } catch (error) {
    throw new AppError(
      'INVALID_INPUT',
      `Could not read "${name}": the file is damaged or not a ${kind.toUpperCase()} file`,
      {
        cause: error,
      },
    );
  }
}
