// The checksum of every JSONL line, and of whole transcripts in their index (docs/store.md).
import * as zlib from "node:zlib";

/**
 * CRC-32 (zlib's) of `bytes[start, end)`, eight bytes per step ("slicing-by-8"). A reopen checks
 * 100k short lines: in JavaScript that is about twice as fast as one native `zlib.crc32` call per line,
 * whose cost is the call, not the checksum.
 */
export function crc32(bytes: Uint8Array, start = 0, end = bytes.length, seed = 0): number {
  const t = CRC_TABLES;
  let crc = ~seed;
  let i = start;
  for (; i + 8 <= end; i += 8) {
    const low = crc ^ (bytes[i]! | (bytes[i + 1]! << 8) | (bytes[i + 2]! << 16) | (bytes[i + 3]! << 24));
    crc =
      t[1792 + (low & 0xff)]! ^
      t[1536 + ((low >>> 8) & 0xff)]! ^
      t[1280 + ((low >>> 16) & 0xff)]! ^
      t[1024 + (low >>> 24)]! ^
      t[768 + bytes[i + 4]!]! ^
      t[512 + bytes[i + 5]!]! ^
      t[256 + bytes[i + 6]!]! ^
      t[bytes[i + 7]!]!;
  }
  for (; i < end; i++) crc = t[(crc ^ bytes[i]!) & 0xff]! ^ (crc >>> 8);
  return ~crc >>> 0;
}

/**
 * The CRC-32 of `bytes` continued from `seed`, the CRC of the bytes before them: one call over
 * megabytes, where zlib's native CRC (Node 20.15+) is three times faster than the table version.
 */
export function crc32Run(bytes: Uint8Array, seed = 0): number {
  return nativeCrc32 ? nativeCrc32(bytes, seed) : crc32(bytes, 0, bytes.length, seed);
}

const nativeCrc32 = (zlib as { crc32?: (data: Uint8Array, value?: number) => number }).crc32;

/** `CRC_TABLES[k * 256 + b]`: the CRC of byte `b` followed by `k` zero bytes. */
const CRC_TABLES = new Int32Array(8 * 256);
for (let b = 0; b < 256; b++) {
  let c = b;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  CRC_TABLES[b] = c;
}
for (let i = 256; i < CRC_TABLES.length; i++) {
  const previous = CRC_TABLES[i - 256]!;
  CRC_TABLES[i] = (previous >>> 8) ^ CRC_TABLES[previous & 0xff]!;
}
