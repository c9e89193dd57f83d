import type { Priority } from "../policy/lane-priority.js";
import type { LaneTask, LaneWait } from "./event-fields.js";

/** The lane scheduler's events about its tasks. Part of `TillerEventMap` (src/events.ts). */
export interface LaneEventMap {
  // Lanes
  /** A task waits for its session or a slot. */
  "lane.enqueued": LaneTask & { priority: Priority };
  /** A task got its slot and runs. */
  "lane.started": LaneTask & { waitedMs: number };
  /** A task waited longer than `warnAfterMs` (reported again when it starts). */
  "lane.waitExceeded": LaneWait;
  /** A task ended, whatever the outcome. */
  "lane.ended": LaneTask & { status: "done" | "failed" | "timedOut" };
  /**
   * A task ran past its `timeoutMs`: its signal aborted. Without `abortGraceMs` its slot is free now;
   * with it, once the task settles or the grace ran out. Its late result is dropped.
   */
  "lane.timeout": LaneTask & { timeoutMs: number | undefined; abortGraceMs?: number };
  /** A timed-out task did not stop within `abortGraceMs`: its slot was freed anyway; it may still run. */
  "lane.abortGraceExceeded": LaneTask & { timeoutMs: number; abortGraceMs: number };
  /** The result of a task that had timed out arrived and was dropped. */
  "lane.lateResultDropped": LaneTask;
  /** A waiting task's signal aborted: it left the lane without running. */
  "lane.aborted": LaneTask;
  /** `clear(lane)` rejected the lane's waiting tasks. */
  "lane.cleared": { lane: string; count: number };
  /** `setCapacity(lane, n)` changed a lane's capacity. */
  "lane.capacityChanged": { lane: string; capacity: number };
  /** A task was refused because the scheduler drains. */
  "lane.rejected": { lane: string; session?: string | undefined; reason: string };
  /** `drain()` began: `active` tasks still run, `queued` wait (cluster lanes leave it out: their queue is in the database). */
  "lane.draining": { active: number; queued?: number };
  /** `resume()` admits work again. */
  "lane.resumed": Record<never, never>;
  /** Cluster lanes: a run's lease ran out or was taken over; its later writes are refused. */
  "lane.leaseLost": { lane: string; session?: string | undefined; entryId: number; fence: number };
  /** Cluster lanes: a dead process's claim was reaped, so its session can run elsewhere. */
  "lane.reaped": { lane: string; session?: string | undefined; owner: string };
}
