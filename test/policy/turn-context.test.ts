import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { historyToModel, type ModelMessage, windowToModel } from "../../src/policy/turn-context.js";
import type { TranscriptRecord } from "../../src/ports/store.js";
import { UNDELIVERED_FINAL } from "../../src/ports/store.js";

let seq = 0;
const base = () => ({ id: `r${++seq}`, seq, at: 0, sessionId: "s", revision: 1 });
const recordArb: fc.Arbitrary<() => TranscriptRecord> = fc.oneof(
  fc.constant(() => ({ ...base(), role: "user", text: `u${seq}`, messageId: `m${seq}` }) as TranscriptRecord),
  fc.constant(
    () =>
      ({ ...base(), role: "assistant", text: `a${seq}`, runId: "r", delivered: true }) as TranscriptRecord,
  ),
  fc.constant(
    () =>
      ({
        ...base(),
        role: "custom",
        customType: UNDELIVERED_FINAL,
        display: false,
        details: { finalSeq: seq - 1 },
      }) as TranscriptRecord,
  ),
);

type Op =
  | { kind: "push"; records: Array<() => TranscriptRecord> }
  | { kind: "replace" }
  | { kind: "convert" };
const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant("push" as const), records: fc.array(recordArb, { maxLength: 4 }) }),
  fc.constant({ kind: "replace" as const }),
  fc.constant({ kind: "convert" as const }),
);

describe("windowToModel", () => {
  it("equals historyToModel of the window as it grows or is replaced, and never changes what it returned", () => {
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 40 }), (ops) => {
        let window: TranscriptRecord[] = [];
        const handedOut: Array<{ messages: ModelMessage[]; copy: ModelMessage[] }> = [];
        for (const op of ops) {
          if (op.kind === "push") window.push(...op.records.map((make) => make()));
          else if (op.kind === "replace") window = [...window.slice(1)];
          else {
            const messages = windowToModel(window);
            expect(messages).toEqual(historyToModel(window));
            handedOut.push({ messages, copy: structuredClone(messages) });
          }
        }
        for (const { messages, copy } of handedOut) expect(messages).toEqual(copy);
      }),
      { numRuns: 500 },
    );
  });

  it("converts only the records appended since the last call on the same window", () => {
    const window: TranscriptRecord[] = [];
    const user = (n: number) =>
      ({ ...base(), role: "user", text: `t${n}`, messageId: `m${n}` }) as TranscriptRecord;
    for (let n = 0; n < 3; n++) window.push(user(n));
    const first = windowToModel(window);
    window.push(user(3));
    const second = windowToModel(window);
    expect(second).toHaveLength(4);
    expect(second.slice(0, 3).every((message, i) => message === first[i])).toBe(true);
    expect(windowToModel(window)).toBe(second);
  });
});
