import { describe, expect, it } from "vitest";
import { createActor } from "xstate";
import { type AbortableWork, fromAbortablePromise } from "../../src/actors/abortable-promise.js";

/** Starts an actor whose work waits until `finish` is called, handing back what the work was given. */
function started() {
  let given: AbortableWork<{ n: number }> | undefined;
  let finish: (value: string) => void = () => {};
  const logic = fromAbortablePromise<string, { n: number }>((args) => {
    given = args;
    return new Promise<string>((resolve) => {
      finish = resolve;
    });
  });
  const actor = createActor(logic, { input: { n: 1 } }).start();
  return { actor, work: given!, finish: (value: string) => finish(value) };
}

describe("fromAbortablePromise", () => {
  it("ends as fromPromise does: done with the work's output, its input given once", async () => {
    const { actor, work, finish } = started();
    expect(work.input).toEqual({ n: 1 });
    finish("ok");
    await new Promise((resolve) => setImmediate(resolve));
    expect(actor.getSnapshot()).toMatchObject({ status: "done", output: "ok" });
  });

  it("ends in error with the work's rejection", async () => {
    const actor = createActor(
      fromAbortablePromise<string, undefined>(async () => {
        throw new Error("no");
      }),
    );
    const failed = new Promise((resolve) => actor.subscribe({ error: resolve }));
    actor.start();
    expect(await failed).toEqual(new Error("no"));
  });

  it("aborts both signals with one AbortError when the actor stops, the work's first", () => {
    const { actor, work } = started();
    const turn = work.stopped();
    const order: string[] = [];
    work.signal.addEventListener("abort", () => order.push("work"));
    turn.addEventListener("abort", () => order.push("turn"));
    actor.stop();
    expect(order).toEqual(["work", "turn"]);
    expect((turn.reason as DOMException).name).toBe("AbortError");
    expect(work.signal.reason).toBe(turn.reason);
  });

  it("aborts the work alone on abort(), and makes the actor's signal aborted when asked after a stop", () => {
    const { actor, work } = started();
    const deadline = new Error("deadline");
    work.abort(deadline);
    expect(work.signal.reason).toBe(deadline);
    expect(work.stopped().aborted).toBe(false);

    const other = started();
    other.actor.stop();
    expect(other.work.stopped().aborted).toBe(true);
    expect(other.work.stopped()).toBe(other.work.stopped());
    actor.stop();
  });

  it("leaves a released work's signal alone on a stop, and aborts nothing once the work settled", async () => {
    const released = started();
    const turn = released.work.stopped();
    released.work.release();
    released.actor.stop();
    expect(released.work.signal.aborted).toBe(false);
    expect(turn.aborted).toBe(true);

    const settled = started();
    settled.finish("ok");
    await new Promise((resolve) => setImmediate(resolve));
    settled.actor.stop();
    expect(settled.work.signal.aborted).toBe(false);
    expect(settled.work.stopped().aborted).toBe(false);
  });
});
