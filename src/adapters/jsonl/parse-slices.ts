/**
 * The parse of many records of a transcript file at once (see TranscriptLog.pushBytes, which lays the
 * file's bytes out so that consecutive records read as the inside of a JSON array).
 */
import type { TranscriptRecord } from "../../ports/store.js";

/** Bytes of records per `JSON.parse` (see parseSlices); a larger record is parsed on its own. */
const PARSE_SLICE = 32 * 1024;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;

/**
 * The records `source[starts[i], ends[i])` from index `from` on, one `JSON.parse` per slice of up to
 * PARSE_SLICE bytes: for a long transcript that is ~20% cheaper than a parse per record. A slice text is
 * small enough for V8's young generation; one string of a whole 100k-record window was not, and in a
 * fresh process, which pays for each page of memory it touches first, cost 70 ms more. A record text
 * that is not one JSON value on its own (only a broken writer could checksum one) could shift the
 * split; the seqs would show it, and then that slice is parsed record by record (`one(i)`), failing as
 * it always did.
 */
export function parseSlices(
  source: Buffer,
  starts: readonly number[],
  ends: readonly number[],
  from: number,
  one: (i: number) => TranscriptRecord,
): TranscriptRecord[] {
  const out: TranscriptRecord[] = [];
  for (let first = from; first < starts.length; ) {
    let last = first;
    while (last + 1 < starts.length && ends[last + 1]! - starts[first]! <= PARSE_SLICE) last++;
    let records: TranscriptRecord[] | undefined;
    try {
      records = parseArray(source, starts[first]!, ends[last]!);
    } catch {
      // parsed one by one below
    }
    if (records?.length === last + 1 - first && seqsFollow(records, first + 1))
      for (const record of records) out.push(record);
    else for (let i = first; i <= last; i++) out.push(one(i));
    first = last + 1;
  }
  return out;
}

/**
 * `source[start, end)` parsed as the inside of a JSON array. The byte before and the one after (a
 * space, newline, comma or quote between records) stand in for the brackets while the text is decoded,
 * and are put back: one string per slice, where `[${text}]` made a second copy of each (a reopen of
 * 100k records decoded 25 MB twice, and the collector paid for both).
 */
function parseArray(source: Buffer, start: number, end: number): TranscriptRecord[] {
  const before = source[start - 1];
  const after = source[end];
  if (before === undefined || after === undefined)
    return JSON.parse(`[${source.toString("utf8", start, end)}]`) as TranscriptRecord[];
  source[start - 1] = OPEN_BRACKET;
  source[end] = CLOSE_BRACKET;
  try {
    return JSON.parse(source.toString("utf8", start - 1, end + 1)) as TranscriptRecord[];
  } finally {
    source[start - 1] = before;
    source[end] = after;
  }
}

/** Whether `records` hold seqs `first`, `first + 1`, … in order. */
function seqsFollow(records: TranscriptRecord[], first: number): boolean {
  for (let i = 0; i < records.length; i++) if (records[i]?.seq !== first + i) return false;
  return true;
}
