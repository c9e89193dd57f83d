import { describe, expect, it } from "vitest";
import { createLaneScheduler } from "../../src/lanes/lane-scheduler.js";
import { WAIT_SIGNAL } from "../../src/lanes/wait-signal.js";

// The signal a caller makes only when its task has to wait (the session's lane slot asks this way).

describe("a waiting task's signal made on demand", () => {
  it("is not asked for when the task starts at once, and takes the task back once it has to wait", async () => {
    const lanes = createLaneScheduler({ capacity: { main: 1 } });
    let release: () => void = () => {};
    const asked: string[] = [];
    const first = lanes.run(
      {
        session: "A",
        [WAIT_SIGNAL]: () => {
          asked.push("first");
          return new AbortController().signal;
        },
      } as Parameters<typeof lanes.run>[0],
      () => new Promise<void>((resolve) => (release = resolve)),
    );
    const waiting = new AbortController();
    let ran = false;
    const second = lanes.run(
      {
        session: "B",
        [WAIT_SIGNAL]: () => {
          asked.push("second");
          return waiting.signal;
        },
      } as Parameters<typeof lanes.run>[0],
      () => {
        ran = true;
      },
    );
    expect(asked).toEqual(["second"]);
    expect(lanes.queuedCount).toBe(1);
    waiting.abort(new Error("left"));
    await expect(second).rejects.toThrow("left");
    expect(lanes.queuedCount).toBe(0);
    release();
    await first;
    expect(ran).toBe(false);
  });
});
