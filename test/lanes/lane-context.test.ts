import { AsyncLocalStorage } from "node:async_hooks";
import { describe, expect, it } from "vitest";
import { createLaneScheduler } from "../../src/lanes/lane-scheduler.js";
import { deferred } from "../support/deferred.js";

// A queued task runs in the async context of the call that enqueued it: a trace, a request id or a log
// context of one session never leaks into another session's turn through the slot it inherits.

describe("lane tasks keep their enqueuer's async context", () => {
  it("two sessions, one slot: the waiting task sees its own context, not the one that freed the slot", async () => {
    const storage = new AsyncLocalStorage<string>();
    const lanes = createLaneScheduler({ capacity: { main: 1 } });
    const gate = deferred<void>();
    const seen: Array<[string, string | undefined]> = [];
    const a = storage.run("request-A", () =>
      lanes.run({ session: "A" }, async () => {
        seen.push(["A", storage.getStore()]);
        await gate.promise;
        seen.push(["A after await", storage.getStore()]);
      }),
    );
    const b = storage.run("request-B", () =>
      lanes.run({ session: "B" }, async () => {
        seen.push(["B", storage.getStore()]);
      }),
    );
    // A third task of session A waits behind its own session, not the slot.
    const a2 = storage.run("request-A2", () =>
      lanes.run({ session: "A" }, () => {
        seen.push(["A2", storage.getStore()]);
      }),
    );
    expect(seen).toEqual([["A", "request-A"]]);
    storage.run("someone else", () => gate.resolve());
    await Promise.all([a, b, a2]);
    expect(seen).toEqual([
      ["A", "request-A"],
      ["A after await", "request-A"],
      ["B", "request-B"],
      ["A2", "request-A2"],
    ]);
  });

  it("a task that starts at once runs in its caller's context, and the caller's await resumes there", async () => {
    const storage = new AsyncLocalStorage<string>();
    const lanes = createLaneScheduler({ capacity: { main: 1 } });
    const result = await storage.run("caller", async () => {
      const inside = await lanes.run({ session: "A" }, () => storage.getStore());
      return [inside, storage.getStore()];
    });
    expect(result).toEqual(["caller", "caller"]);
  });

  it("a task enqueued from inside a task that is starting keeps its own context, whether it starts at once or waits", async () => {
    const storage = new AsyncLocalStorage<string>();
    const lanes = createLaneScheduler({ capacity: { main: 2 } });
    const gate = deferred<void>();
    const seen: Array<[string, string | undefined]> = [];
    let inner: Promise<void> | undefined;
    let waiting: Promise<void> | undefined;
    const outer = storage.run("outer", () =>
      lanes.run({}, async () => {
        seen.push(["outer", storage.getStore()]);
        // Enqueued while the outer task starts within its own call: this one takes the second slot at once.
        inner = storage.run("inner", () =>
          lanes.run({}, async () => {
            seen.push(["inner", storage.getStore()]);
            await gate.promise;
          }),
        );
        // No slot left: it waits, and is started later by whichever task frees one.
        waiting = storage.run("waiting", () =>
          lanes.run({}, () => {
            seen.push(["waiting", storage.getStore()]);
          }),
        );
        seen.push(["outer after", storage.getStore()]);
        await gate.promise;
      }),
    );
    expect(seen).toEqual([
      ["outer", "outer"],
      ["inner", "inner"],
      ["outer after", "outer"],
    ]);
    storage.run("someone else", () => gate.resolve());
    await Promise.all([outer, inner, waiting]);
    expect(seen.at(-1)).toEqual(["waiting", "waiting"]);
  });
});
