import { inflateRawSync } from 'node:zlib';
import { AppError } from '../errors.ts';

/** One file of a zip archive, as its central directory declares it. */
export interface ZipEntry {
  name: string;
  /** 0 stored, 8 deflated; other methods are refused when read. */
  method: number;
  compressedSize: number;
  /** The declared size; `inflateEntry` refuses an entry that holds more. */
  size: number;
  /** Offset of the entry's local header. */
  offset: number;
  encrypted: boolean;
}

export interface UnzipLimits {
  /** What the refusals call the archive, e.g. `"report.docx"`. */
  subject: string;
  maxEntries: number;
  /** Most bytes all the entries read may expand to, together. */
  maxBytes: number;
  /** The setting that sets `maxBytes`, named in the refusal. */
  bytesSetting: string;
  /** Refuse an entry over 1 MB that expands more than this many times (a zip bomb's signature). */
  maxRatio?: number;
  /** The refusal of a damaged archive, given why (default: "… is not a readable zip archive (why)"). */
  damaged?: (why: string) => AppError;
}

const EOCD = 0x06054b50;
const CENTRAL = 0x02014b50;
const LOCAL = 0x04034b50;
const RATIO_FLOOR = 1024 * 1024;

const damaged = (limits: UnzipLimits, why: string) =>
  limits.damaged?.(why) ??
  new AppError('INVALID_INPUT', `${limits.subject} is not a readable zip archive (${why})`);

/**
 * The entries of a zip archive from its central directory, without inflating anything, so that the
 * count and the declared sizes are checked before a byte is expanded.
 */
export function zipEntries(data: Buffer, limits: UnzipLimits): ZipEntry[] {
  let end = -1;
  for (let i = data.length - 22; i >= Math.max(0, data.length - 22 - 0xffff); i--)
    if (data.readUInt32LE(i) === EOCD) {
      end = i;
      break;
    }
  if (end < 0) throw damaged(limits, 'no central directory');
  const count = data.readUInt16LE(end + 10);
  const directorySize = data.readUInt32LE(end + 12);
  const directoryOffset = data.readUInt32LE(end + 16);
  if (count === 0xffff || directoryOffset === 0xffffffff)
    throw damaged(limits, 'ZIP64 archives are not supported');
  if (directoryOffset + directorySize > data.length) throw damaged(limits, 'truncated');
  if (count > limits.maxEntries)
    throw new AppError(
      'PAYLOAD_TOO_LARGE',
      `${limits.subject} holds ${count} files, more than the limit of ${limits.maxEntries}`,
    );
  const entries: ZipEntry[] = [];
  let at = directoryOffset;
  for (let i = 0; i < count; i++) {
    if (at + 46 > data.length || data.readUInt32LE(at) !== CENTRAL) throw damaged(limits, 'bad directory');
    const nameLength = data.readUInt16LE(at + 28);
    const entry: ZipEntry = {
      encrypted: (data.readUInt16LE(at + 8) & 1) === 1,
      method: data.readUInt16LE(at + 10),
      compressedSize: data.readUInt32LE(at + 20),
      size: data.readUInt32LE(at + 24),
      offset: data.readUInt32LE(at + 42),
      name: data.toString('utf8', at + 46, at + 46 + nameLength),
    };
    if (entry.size === 0xffffffff || entry.compressedSize === 0xffffffff)
      throw damaged(limits, 'ZIP64 archives are not supported');
    entries.push(entry);
    at += 46 + nameLength + data.readUInt16LE(at + 30) + data.readUInt16LE(at + 32);
  }
  const files = entries.filter((e) => !e.name.endsWith('/'));
  for (const entry of files) checkRatio(entry, limits);
  return files;
}

function checkRatio(entry: ZipEntry, limits: UnzipLimits): void {
  if (!limits.maxRatio || entry.size <= RATIO_FLOOR) return;
  if (entry.size / Math.max(1, entry.compressedSize) > limits.maxRatio)
    throw new AppError(
      'PAYLOAD_TOO_LARGE',
      `${limits.subject} looks like a zip bomb: "${entry.name}" expands more than ${limits.maxRatio} times`,
    );
}

/** Refusal of an archive that expands beyond the limit. */
export function tooLarge(limits: UnzipLimits): AppError {
  return new AppError(
    'PAYLOAD_TOO_LARGE',
    `${limits.subject} expands to more than the limit of ${Math.round(limits.maxBytes / 1024 / 1024)} MB (${limits.bytesSetting})`,
  );
}

/**
 * One entry's bytes, inflated with a cap: never more than its declared size (an entry that holds
 * more is refused, so declared sizes cannot lie) nor than `budget` bytes.
 */
export function inflateEntry(data: Buffer, entry: ZipEntry, budget: number, limits: UnzipLimits): Buffer {
  if (entry.encrypted) throw damaged(limits, `"${entry.name}" is encrypted`);
  if (entry.size > budget) throw tooLarge(limits);
  if (entry.offset + 30 > data.length || data.readUInt32LE(entry.offset) !== LOCAL)
    throw damaged(limits, 'bad local header');
  const start =
    entry.offset + 30 + data.readUInt16LE(entry.offset + 26) + data.readUInt16LE(entry.offset + 28);
  if (start + entry.compressedSize > data.length) throw damaged(limits, 'truncated');
  const packed = data.subarray(start, start + entry.compressedSize);
  let out: Buffer;
  if (entry.method === 0) out = packed;
  else if (entry.method === 8) {
    try {
      // One byte over the declared size is enough to know it lied; inflating stops there.
      out = inflateRawSync(packed, { maxOutputLength: entry.size + 1 });
    } catch (error) {
      if ((error as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE')
        throw damaged(limits, `"${entry.name}" holds more than its declared size`);
      throw damaged(limits, `"${entry.name}" cannot be inflated`);
    }
  } else throw damaged(limits, `"${entry.name}" uses an unsupported compression method`);
  if (out.length !== entry.size) throw damaged(limits, `"${entry.name}" does not hold its declared size`);
  return out;
}

/**
 * The entries `include` accepts, inflated within the limits: the entry count and the declared sizes
 * are checked first, then each entry is inflated with a running cap.
 */
export function unzipBounded(
  data: Buffer,
  limits: UnzipLimits,
  include: (name: string) => boolean = () => true,
): Array<{ name: string; data: Buffer }> {
  const entries = zipEntries(data, limits).filter((e) => include(e.name));
  const declared = entries.reduce((sum, e) => sum + e.size, 0);
  if (declared > limits.maxBytes) throw tooLarge(limits);
  let budget = limits.maxBytes;
  return entries.map((entry) => {
    const bytes = inflateEntry(data, entry, budget, limits);
    budget -= bytes.length;
    return { name: entry.name, data: bytes };
  });
}
