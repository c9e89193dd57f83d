import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { besideRecorded, creepOf, loadRecorded, record } from "../../bench/recorded-figures.js";

// The bench's guard against creep: figures beside the recorded ones, and a loud line for a watched
// figure that got more than 20% worse.

describe("recorded bench figures", () => {
  it("calls out the first call or the idle heap only when more than 20% worse", () => {
    const recorded = { "firstCall.liveSession.timesFloor": 2, "idle.bytesPerSession": 2000 };
    expect(
      creepOf({ "firstCall.liveSession.timesFloor": 2.39, "idle.bytesPerSession": 2399 }, recorded),
    ).toEqual([]);
    const worse = creepOf(
      { "firstCall.liveSession.timesFloor": 2.5, "idle.bytesPerSession": 2500 },
      recorded,
    );
    expect(worse).toHaveLength(2);
    expect(worse[0]).toContain("firstCall.liveSession.timesFloor is 2.5, was 2 (25%");
    expect(worse[1]).toContain("idle.bytesPerSession is 2500, was 2000 (25%");
    // Better is never creep, and nothing recorded means nothing to compare.
    expect(creepOf({ "firstCall.liveSession.timesFloor": 1, "idle.bytesPerSession": 100 }, recorded)).toEqual(
      [],
    );
    expect(creepOf({ "idle.bytesPerSession": 9999 }, undefined)).toEqual([]);
  });

  it("shows a figure beside its recorded value with the change", () => {
    expect(besideRecorded(120, 100)).toBe("  (was 100, +20%)");
    expect(besideRecorded(80, 100)).toBe("  (was 100, -20%)");
    expect(besideRecorded("after gc()", 100)).toBe("");
    expect(besideRecorded(5, undefined)).toBe("");
  });

  it("records only the numeric figures of the benches that ran, keeping the others", async () => {
    const dir = await mkdtemp(join(tmpdir(), "tiller-recorded-"));
    try {
      const path = join(dir, "recorded-figures.json");
      const run = { recordedAt: "t1", node: "v20", loadAverage: "1.0 1.0 1.0" };
      record(path, undefined, run, { lanes: { "a.us": 1, "a.note": "text" }, gateway: { "b.us": 2 } });
      record(path, loadRecorded(path), { ...run, recordedAt: "t2" }, { lanes: { "a.us": 3 } });
      const saved = JSON.parse(await readFile(path, "utf8"));
      expect(saved).toEqual({
        ...run,
        recordedAt: "t2",
        benches: { lanes: { "a.us": 3 }, gateway: { "b.us": 2 } },
      });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
