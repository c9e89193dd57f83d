import * as zlib from "node:zlib";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { crc32, crc32Run } from "../../../src/adapters/jsonl/crc32.js";

// The JSONL store's line checksum must stay zlib's CRC-32: files written by earlier versions (which
// called zlib.crc32) are verified with it.
describe("crc32", () => {
  it("equals zlib's CRC-32 on any bytes and any sub-range", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), fc.nat(), fc.nat(), (bytes, a, b) => {
        const start = bytes.length === 0 ? 0 : a % (bytes.length + 1);
        const end = start + (bytes.length - start === 0 ? 0 : b % (bytes.length - start + 1));
        expect(crc32(bytes, start, end)).toBe(zlib.crc32(bytes.subarray(start, end)));
      }),
      { numRuns: 2_000 },
    );
  });

  it("continues a CRC over split bytes, in JavaScript as natively", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), fc.nat(), (bytes, a) => {
        const cut = bytes.length === 0 ? 0 : a % (bytes.length + 1);
        const whole = zlib.crc32(bytes);
        const head = crc32(bytes, 0, cut);
        expect(crc32(bytes, cut, bytes.length, head)).toBe(whole);
        expect(crc32Run(bytes.subarray(cut), crc32Run(bytes.subarray(0, cut)))).toBe(whole);
      }),
      { numRuns: 1_000 },
    );
  });

  it("gives the standard check value for 123456789", () => {
    expect(crc32(Buffer.from("123456789"))).toBe(0xcbf43926);
  });
});
