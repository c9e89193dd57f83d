import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { DueIndex } from "../../src/gateway/commitments/due-index.js";

// The due index against a plain sorted model: whatever the schedules, moves and removals, takeDue
// returns what is due, earliest first, each id at most once, and leaves refused ones scheduled.

describe("DueIndex", () => {
  it("agrees with a sorted list over random schedules, moves, removals and takes", () => {
    const op = fc.oneof(
      fc.record({
        kind: fc.constant("schedule" as const),
        id: fc.integer({ min: 0, max: 30 }),
        at: fc.integer({ min: 0, max: 100 }),
      }),
      fc.record({ kind: fc.constant("remove" as const), id: fc.integer({ min: 0, max: 30 }) }),
      fc.record({
        kind: fc.constant("take" as const),
        now: fc.integer({ min: 0, max: 120 }),
        limit: fc.integer({ min: 1, max: 5 }),
        refuseOdd: fc.boolean(),
      }),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 200 }), (ops) => {
        const index = new DueIndex();
        const model = new Map<string, number>();
        for (const step of ops) {
          if (step.kind === "schedule") {
            index.schedule(`c${step.id}`, step.at);
            model.set(`c${step.id}`, step.at);
          } else if (step.kind === "remove") {
            index.remove(`c${step.id}`);
            model.delete(`c${step.id}`);
          } else {
            const accept = (id: string) => !(step.refuseOdd && Number(id.slice(1)) % 2 === 1);
            const taken = index.takeDue(step.now, step.limit, accept);
            const due = [...model]
              .filter(([id, at]) => at <= step.now && accept(id))
              .map(([, at]) => at)
              .sort((a, b) => a - b);
            expect(taken.map((id) => model.get(id))).toEqual(due.slice(0, taken.length));
            expect(taken.length).toBe(Math.min(step.limit, due.length));
            for (const id of taken) model.delete(id);
          }
          expect(index.size).toBe(model.size);
          const earliest = Math.min(...model.values());
          expect(index.nextDueAt()).toBe(model.size ? earliest : undefined);
        }
      }),
    );
  });
});
