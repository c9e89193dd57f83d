import { describe, expect, it } from "vitest";
import { SystemClock } from "../../../src/adapters/system-clock.js";
import type { TillerEventOf } from "../../../src/events.js";
import type { ClusterLanes } from "../../../src/lanes/cluster/cluster-lanes.js";
import type { RunOptions } from "../../../src/lanes/lane-scheduler.types.js";
import { sleep } from "../../../src/ports/clock.js";
import { holdSlot, useClusterLanes } from "../../support/cluster-lanes-suite.js";
import { usePostgresSchema } from "../../support/postgres.js";

// Priority aging and the long-wait report across the cluster: a background task that waited long
// enough overtakes foreground work that arrived after it, whichever process enqueued either, and a
// task kept waiting is reported (lane.waitExceeded) as in one process.

const db = usePostgresSchema("aging");
const clock = new SystemClock();
const lanes = useClusterLanes(db);

/** The lanes' `lane.waitExceeded` events, as they come. */
function waitReports(scheduler: ClusterLanes): Array<TillerEventOf<"lane.waitExceeded">> {
  const events: Array<TillerEventOf<"lane.waitExceeded">> = [];
  scheduler.observe?.((event) => {
    if (event.type === "lane.waitExceeded") events.push(event);
  });
  return events;
}

/**
 * One slot, held on process A; a background task waits `waitMs` on A, then process B enqueues a
 * foreground and a normal task; the slot is freed. Returns the order the three ran in.
 */
async function orderAfterWait(agingMs: number, waitMs: number): Promise<string[]> {
  const a = await lanes({ main: 1 }, { agingMs });
  const b = await lanes({ main: 1 }, { agingMs });
  const order: string[] = [];
  const task = (name: string) => async () => {
    order.push(name);
  };
  const held = await holdSlot(a, "web:holder");
  const background = a.run({ session: "web:bg", priority: "background" }, task("background"));
  // The wait counts from the row's enqueue time in the database, which is what aging reads.
  await queuedRows(1);
  await sleep(clock, waitMs);
  const later: Array<[string, RunOptions["priority"]]> = [
    ["foreground", "foreground"],
    ["normal", "normal"],
  ];
  const others = later.map(([name, priority]) => b.run({ session: `web:${name}`, priority }, task(name)));
  // Both rows are in the database before the slot frees (B's enqueue is batched per tick).
  await queuedRows(3);
  held.release();
  await Promise.all([held.done, background, ...others]);
  return order;
}

/** Resolves once `n` rows wait in the database. */
async function queuedRows(n: number): Promise<void> {
  for (;;) {
    const { rows } = await db.pool.query(
      `SELECT count(*)::int AS n FROM ${db.schema}.lane_runs WHERE state = 'queued'`,
    );
    if (rows[0].n === n) return;
    await sleep(clock, 20);
  }
}

describe("cluster lanes: priority aging", () => {
  it("keeps priorities strict with aging off: background waits behind later foreground and normal work", async () => {
    expect(await orderAfterWait(0, 1000)).toEqual(["foreground", "normal", "background"]);
  }, 20_000);

  it("raises a waiting task one level per agingMs: after one period background goes before later normal work", async () => {
    // Waited just over one period: normal level now (until 2 periods), still behind foreground. The
    // period is long so that the claim, however late on a loaded machine, comes before the second.
    expect(await orderAfterWait(2000, 2100)).toEqual(["foreground", "background", "normal"]);
  }, 20_000);

  it("after two periods a background task is foreground and goes before foreground work that came later", async () => {
    expect(await orderAfterWait(400, 1000)).toEqual(["background", "foreground", "normal"]);
  }, 20_000);
});

describe("cluster lanes: long waits", () => {
  it("reports a task kept waiting for its slot, then again as it starts", async () => {
    const a = await lanes({ main: 1 }, { warnAfterMs: 200 });
    const events = waitReports(a);
    const b = await lanes({ main: 1 });
    const held = await holdSlot(b, "web:1");
    const waiting = a.run({ session: "web:2" }, async () => {});
    const behind = a.run({ session: "web:3" }, async () => {});
    for (let i = 0; i < 400 && events.length < 2; i++) await sleep(clock, 50);
    expect(
      events.map((e) => [e.session, e.waitingFor, e.starting, e.queueAhead, e.queueBehind, e.activeNow]),
    ).toEqual([
      ["web:2", "slot", false, 0, 1, 1],
      ["web:3", "slot", false, 1, 0, 1],
    ]);
    expect(events[0]!.waitedMs).toBeGreaterThanOrEqual(200);
    held.release();
    await Promise.all([held.done, waiting, behind]);
    expect(events.slice(2).map((e) => [e.session, e.starting])).toEqual([
      ["web:2", true],
      ["web:3", true],
    ]);
  }, 20_000);

  it("says a task waits for its session when another task of the session runs", async () => {
    const a = await lanes({ main: 1 }, { warnAfterMs: 150 });
    const events = waitReports(a);
    const first = await holdSlot(a, "web:1");
    const second = a.run({ session: "web:1" }, async () => {});
    for (let i = 0; i < 400 && events.length < 1; i++) await sleep(clock, 50);
    expect(events[0]).toMatchObject({
      session: "web:1",
      waitingFor: "session",
      starting: false,
      activeAhead: 1,
    });
    first.release();
    await Promise.all([first.done, second]);
  }, 20_000);

  it("refuses a negative agingMs or warnAfterMs, naming the field", async () => {
    await expect(lanes({ main: 1 }, { agingMs: -1 })).rejects.toMatchObject({ field: "agingMs" });
    await expect(lanes({ main: 1 }, { warnAfterMs: Number.NaN })).rejects.toMatchObject({
      field: "warnAfterMs",
    });
  });
});
