import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { SeenIds } from "../../src/gateway/sessions/seen-ids.js";

// The ids a session remembers decide which redeliveries are acked `duplicate`. SeenIds stores them
// more compactly than a Map; it must remember, forget and order them exactly as the Map it replaced.

type Op =
  | { kind: "set"; id: string; at: number }
  | { kind: "delete"; id: string }
  | { kind: "prune"; now: number; windowMs: number };

const ids = fc.constantFrom("m1", "m2", "m3", "m4", "m5");
const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant("set" as const), id: ids, at: fc.integer({ min: 0, max: 1_000 }) }),
  fc.record({ kind: fc.constant("delete" as const), id: ids }),
  fc.record({
    kind: fc.constant("prune" as const),
    now: fc.integer({ min: 0, max: 1_500 }),
    windowMs: fc.integer({ min: 0, max: 600 }),
  }),
);

/** What the gateway did with a Map before: prune from the oldest, stopping at the first inside. */
function pruneMap(map: Map<string, number>, now: number, windowMs: number): void {
  for (const [id, at] of map) {
    if (now - at <= windowMs) break;
    map.delete(id);
  }
}

describe("SeenIds", () => {
  it("remembers, forgets and orders ids as a Map does, whatever the sequence of changes", () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 40 }), (ops) => {
        const seen = new SeenIds();
        const map = new Map<string, number>();
        for (const change of ops) {
          if (change.kind === "set") {
            seen.set(change.id, change.at);
            map.set(change.id, change.at);
          } else if (change.kind === "delete") {
            expect(seen.delete(change.id)).toBe(map.delete(change.id));
          } else {
            seen.prune(change.now, change.windowMs);
            pruneMap(map, change.now, change.windowMs);
          }
          expect([...seen]).toEqual([...map]);
          expect(seen.size).toBe(map.size);
          for (const id of ["m1", "m2", "m3", "m4", "m5"]) expect(seen.has(id)).toBe(map.has(id));
        }
      }),
    );
  });

  it("is built from pairs in their order", () => {
    const seen = SeenIds.from([
      ["a", 1],
      ["b", 2],
      ["a", 3],
    ]);
    expect([...seen]).toEqual([
      ["a", 3],
      ["b", 2],
    ]);
  });
});
