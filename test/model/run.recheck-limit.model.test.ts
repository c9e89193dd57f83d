import { describe, expect, it } from "vitest";
import type { RunOutput } from "../../src/machines/run.machine.js";
import { configNamed, findPath } from "../support/run-graph-cases.js";
import { recheckEventsOf, replayPath } from "../support/run-replay.js";

// Both sides of the re-check limit, on paths the run machine's graph produced, replayed on the real
// actor.

describe("run machine: the re-check limit", () => {
  it("re-checks a draft made stale by a steered message once, then ships the next stale draft with recheck.skipped (limit)", async () => {
    const config = configNamed("steering with maxPasses 1");
    const path = findPath(config, [
      { type: "recheck.fired", reason: "newer-message" },
      { type: "recheck.skipped", reason: "limit" },
    ]);
    const replay = await replayPath(config, path);
    expect(recheckEventsOf(replay)).toEqual([
      expect.objectContaining({ type: "recheck.fired", reason: "newer-message", pass: 1 }),
      expect.objectContaining({ type: "recheck.skipped", reason: "limit", signal: "newer-message" }),
    ]);
    const output = replay.snapshot.output as RunOutput;
    expect(output.status).toBe("done");
    expect(output.passes).toBe(1);
    // The message that made the second draft stale was never shown: it is handed back, not lost.
    expect(output.leftover.length).toBeGreaterThan(0);
  });

  it("re-checks a draft that ignores a complaint once, then ships the second with recheck.skipped (limit)", async () => {
    const config = configNamed("a complaint the draft ignores");
    const path = findPath(config, [
      { type: "recheck.fired", reason: "complaint" },
      { type: "recheck.skipped", reason: "limit" },
    ]);
    const replay = await replayPath(config, path);
    expect(recheckEventsOf(replay)).toEqual([
      expect.objectContaining({ type: "recheck.fired", reason: "complaint", pass: 1 }),
      expect.objectContaining({ type: "recheck.skipped", reason: "limit", signal: "complaint" }),
    ]);
    expect(replay.calls.map((call) => call.recheck)).toEqual([false, true]);
  });

  it("re-checks a draft that answers an older message for the low-overlap signal", async () => {
    const config = configNamed("a draft that answers an older message");
    const path = findPath(config, [
      { type: "recheck.fired", reason: "low-overlap" },
      { type: "recheck.skipped", reason: "limit" },
    ]);
    const replay = await replayPath(config, path);
    expect(recheckEventsOf(replay)[0]).toMatchObject({
      type: "recheck.fired",
      reason: "low-overlap",
      pass: 1,
    });
  });

  it("re-checks at most twice with maxPasses 2", async () => {
    const config = configNamed("steering with maxPasses 2");
    const path = findPath(config, [
      { type: "recheck.fired", reason: "newer-message" },
      { type: "recheck.fired", reason: "newer-message" },
      { type: "recheck.skipped", reason: "limit" },
    ]);
    const replay = await replayPath(config, path);
    expect((replay.snapshot.output as RunOutput).passes).toBe(2);
  });

  it("never re-checks with maxPasses 0 and says so with recheck.skipped (limit)", async () => {
    const config = configNamed("steering with maxPasses 0");
    const path = findPath(config, [{ type: "recheck.skipped", reason: "limit" }]);
    const replay = await replayPath(config, path);
    expect(recheckEventsOf(replay)).toEqual([
      expect.objectContaining({ type: "recheck.skipped", reason: "limit" }),
    ]);
    expect(replay.calls.every((call) => !call.recheck)).toBe(true);
  });

  it("never re-checks when disabled and says so with recheck.skipped (disabled)", async () => {
    const config = configNamed("steering with the re-check disabled");
    const path = findPath(config, [{ type: "recheck.skipped", reason: "disabled" }]);
    const replay = await replayPath(config, path);
    expect(recheckEventsOf(replay)).toEqual([
      expect.objectContaining({ type: "recheck.skipped", reason: "disabled", signal: "newer-message" }),
    ]);
    expect((replay.snapshot.output as RunOutput).passes).toBe(0);
  });
});
