import { describe, expect, it } from "vitest";
import { ConfigError } from "../../src/errors.js";
import { createLaneScheduler } from "../../src/lanes/lane-scheduler.js";
import { laneHarness as harness } from "../support/lanes.js";

// Capacity groups on a simulated clock: several lanes share one budget, each keeps its own capacity.

const background = { background: { capacity: 2, lanes: ["cron", "subagent", "review"] } };

describe("capacity groups", () => {
  it("cap the tasks running in their lanes together, whatever each lane's own capacity", async () => {
    const { lanes, hold, started, flush } = harness({
      capacity: { cron: 2, subagent: 2, review: 2 },
      groups: background,
    });
    hold("cron-1", { lane: "cron" });
    hold("subagent-1", { lane: "subagent" });
    const third = hold("review-1", { lane: "review" });
    const fourth = hold("cron-2", { lane: "cron" });
    await flush();
    expect(started).toEqual(["cron-1", "subagent-1"]);
    expect(lanes.entryState(third.id!)).toBe("waitingForSlot");
    expect(lanes.entryState(fourth.id!)).toBe("waitingForSlot");
    expect(lanes.snapshot().groups).toEqual({
      background: { active: 2, queued: 2, capacity: 2, lanes: ["cron", "subagent", "review"] },
    });
  });

  it("a slot freed in one lane goes to the group's next task by enqueue order, in any of its lanes", async () => {
    const { hold, started, flush } = harness({ capacity: { cron: 2, subagent: 2 }, groups: background });
    const first = hold("cron-1", { lane: "cron" });
    hold("cron-2", { lane: "cron" });
    hold("subagent-1", { lane: "subagent" });
    hold("cron-3", { lane: "cron" });
    await flush();
    first.gate.resolve("done");
    await flush();
    // subagent-1 was enqueued before cron-3: it takes the group's freed slot though cron's was freed.
    expect(started).toEqual(["cron-1", "cron-2", "subagent-1"]);
  });

  it("priority comes first across the group's lanes, then enqueue order", async () => {
    const { hold, started, flush } = harness({ capacity: { cron: 3, subagent: 3 }, groups: background });
    const blockers = [hold("a", { lane: "cron" }), hold("b", { lane: "cron" })];
    hold("late-background", { lane: "cron", priority: "background" });
    hold("foreground", { lane: "subagent", priority: "foreground" });
    await flush();
    blockers[0]!.gate.resolve("done");
    await flush();
    expect(started).toEqual(["a", "b", "foreground"]);
  });

  it("each lane keeps its own capacity inside the group", async () => {
    const { hold, started, flush } = harness({ capacity: { cron: 1, subagent: 2 }, groups: background });
    hold("cron-1", { lane: "cron" });
    hold("cron-2", { lane: "cron" });
    hold("subagent-1", { lane: "subagent" });
    await flush();
    // The group has room for two: cron-2 waits for cron's one slot, so subagent-1 passes it.
    expect(started).toEqual(["cron-1", "subagent-1"]);
  });

  it("lanes outside every group are not limited by it", async () => {
    const { hold, started, flush } = harness({ capacity: { main: 2, cron: 2 }, groups: background });
    hold("cron-1", { lane: "cron" });
    hold("cron-2", { lane: "cron" });
    hold("cron-3", { lane: "cron" });
    hold("main-1");
    hold("main-2");
    await flush();
    expect(started).toEqual(["cron-1", "cron-2", "main-1", "main-2"]);
  });

  it("setCapacity on a member lane starts its waiting tasks only as far as the group allows", async () => {
    const { lanes, hold, started, flush } = harness({ capacity: { cron: 0 }, groups: background });
    for (const name of ["c1", "c2", "c3"]) hold(name, { lane: "cron" });
    await flush();
    expect(started).toEqual([]);
    lanes.setCapacity("cron", 5);
    await flush();
    expect(started).toEqual(["c1", "c2"]);
    expect(lanes.snapshot().groups?.background).toMatchObject({ active: 2, queued: 1 });
  });

  it("sessions still run one task at a time, and a task waiting for its session holds no group slot", async () => {
    const { hold, started, flush, lanes } = harness({
      capacity: { cron: 2, subagent: 2 },
      groups: background,
    });
    const a1 = hold("A-1", { lane: "cron", session: "A" });
    hold("A-2", { lane: "subagent", session: "A" });
    hold("B-1", { lane: "subagent", session: "B" });
    await flush();
    expect(started).toEqual(["A-1", "B-1"]);
    expect(lanes.snapshot().groups?.background?.active).toBe(2);
    a1.gate.resolve("done");
    await flush();
    expect(started).toEqual(["A-1", "B-1", "A-2"]);
  });

  it("a long-wait report says when the group's budget, not the lane, is what is full", async () => {
    const { hold, flush, clock, ofType } = harness({
      capacity: { cron: 2, subagent: 2 },
      groups: background,
      warnAfterMs: 500,
    });
    hold("cron-1", { lane: "cron" });
    hold("cron-2", { lane: "cron" });
    hold("subagent-1", { lane: "subagent", session: "s" });
    await flush();
    await clock.advance(500);
    expect(ofType("lane.waitExceeded")).toMatchObject([
      {
        lane: "subagent",
        waitingFor: "slot",
        activeNow: 0,
        group: { name: "background", capacity: 2, activeNow: 2 },
      },
    ]);
  });

  it("the snapshot shows every group, with lanes never used yet", () => {
    const lanes = createLaneScheduler({ groups: background });
    expect(lanes.snapshot().groups).toEqual({
      background: { active: 0, queued: 0, capacity: 2, lanes: ["cron", "subagent", "review"] },
    });
    expect(createLaneScheduler().snapshot().groups).toBeUndefined();
  });

  describe("bad groups are refused with a ConfigError naming the field", () => {
    const cases: Array<[string, unknown, string]> = [
      ["not an object", [], "groups"],
      ["a group that is not an object", { g: 3 }, "groups.g"],
      ["capacity 0", { g: { capacity: 0, lanes: ["cron"] } }, "groups.g.capacity"],
      ["a negative capacity", { g: { capacity: -1, lanes: ["cron"] } }, "groups.g.capacity"],
      ["a fractional capacity", { g: { capacity: 1.5, lanes: ["cron"] } }, "groups.g.capacity"],
      ["no lanes", { g: { capacity: 1, lanes: [] } }, "groups.g.lanes"],
      ["a session lane", { g: { capacity: 1, lanes: ["session:A"] } }, "groups.g.lanes"],
      ["a lane listed twice", { g: { capacity: 1, lanes: ["cron", "cron"] } }, "groups.g.lanes"],
      [
        "a lane in two groups",
        { g: { capacity: 1, lanes: ["cron"] }, h: { capacity: 1, lanes: ["cron"] } },
        "groups.h.lanes",
      ],
      ["an unknown field", { g: { capacity: 1, lanes: ["cron"], max: 2 } }, "groups.g.max"],
    ];
    for (const [what, groups, field] of cases) {
      it(what, () => {
        let error: unknown;
        try {
          createLaneScheduler({ groups: groups as never });
        } catch (caught) {
          error = caught;
        }
        expect(error).toBeInstanceOf(ConfigError);
        expect(error).toMatchObject({ code: "CONFIG_INVALID", field });
      });
    }
  });
});
