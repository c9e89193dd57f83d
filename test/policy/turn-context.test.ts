import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  historyToModel,
  type ModelMessage,
  ROLLED_BACK,
  rolledBackSeqs,
  windowToModel,
} from "../../src/policy/turn-context.js";
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

describe("rolledBackSeqs", () => {
  it("on a window that grows, equals a fresh scan, also when a rollback marker arrives later", () => {
    const user = () => {
      const record = { ...base(), role: "user", text: `u${seq}`, messageId: `m${seq}` } as TranscriptRecord;
      return record;
    };
    // A marker naming the newest user message so far (or none): it hides from there up to itself.
    const marker = (window: TranscriptRecord[]) => {
      const last = window.findLast((record) => record.role === "user");
      return {
        ...base(),
        role: "custom",
        customType: ROLLED_BACK,
        display: false,
        details: { runId: "", messageIds: last && last.role === "user" ? [last.messageId] : [] },
      } as TranscriptRecord;
    };
    fc.assert(
      fc.property(fc.array(fc.constantFrom("user", "marker", "look"), { maxLength: 30 }), (steps) => {
        const window: TranscriptRecord[] = [];
        for (const step of steps) {
          if (step === "user") window.push(user());
          else if (step === "marker") window.push(marker(window));
          else expect([...rolledBackSeqs(window)].sort()).toEqual([...rolledBackSeqs([...window])].sort());
        }
        expect([...rolledBackSeqs(window)].sort()).toEqual([...rolledBackSeqs([...window])].sort());
      }),
      { numRuns: 300 },
    );
  });
});
