import { availableParallelism } from "node:os";
import { ConfigError } from "../errors.js";
import { PRIORITIES } from "../policy/lane-priority.js";
import type { RunOptions } from "./lane-scheduler.types.js";

// Checks of what callers hand the lane scheduler, before anything is queued.

/** Session lanes are named `session:<key>`; workload lanes may not take that prefix. */
export const SESSION_PREFIX = "session:";

export function checkCapacity(field: string, capacity: unknown): number {
  if (typeof capacity !== "number" || !Number.isInteger(capacity) || capacity < 0) {
    throw new ConfigError(field, "an integer >= 0 (0 pauses the lane)", capacity);
  }
  return capacity;
}

/** Throws a ConfigError unless `laneName` names a workload lane (not empty, not a session lane). */
export function checkWorkloadLane(laneName: string): void {
  if (typeof laneName !== "string" || laneName.length === 0)
    throw new ConfigError("lane", "a non-empty lane name", laneName);
  if (laneName.startsWith(SESSION_PREFIX))
    throw new ConfigError("lane", "a workload lane (session lanes always run one task)", laneName);
}

export function checkRunOptions(options: RunOptions): void {
  if (options === null || typeof options !== "object") {
    throw new ConfigError("options", "an object", options);
  }
  const lane = options.lane;
  if (
    lane !== undefined &&
    (typeof lane !== "string" || lane.length === 0 || lane.startsWith(SESSION_PREFIX))
  ) {
    throw new ConfigError("lane", 'a workload lane name such as "main"', options.lane);
  }
  const priority = options.priority;
  if (priority !== undefined && !PRIORITIES.includes(priority)) {
    throw new ConfigError("priority", `one of ${PRIORITIES.join(", ")}`, options.priority);
  }
  if (options.session !== undefined && typeof options.session !== "string") {
    throw new ConfigError("session", "a string session key", options.session);
  }
  const timeoutMs = options.timeoutMs;
  // Infinity passed `> 0` and reached setTimeout, which fires non-finite delays after 1 ms.
  if (
    timeoutMs !== undefined &&
    !(typeof timeoutMs === "number" && Number.isFinite(timeoutMs) && timeoutMs > 0)
  ) {
    throw new ConfigError("timeoutMs", "a finite number of milliseconds > 0", options.timeoutMs);
  }
  const grace = options.abortGraceMs;
  if (grace !== undefined && !(typeof grace === "number" && Number.isFinite(grace) && grace >= 0)) {
    throw new ConfigError("abortGraceMs", "a finite number of milliseconds >= 0", grace);
  }
  // Checked here, before anything is queued: a non-signal used to throw halfway through enqueueing.
  const signal = options.signal;
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    throw new ConfigError("signal", "an AbortSignal", signal);
  }
}

export function defaultMainCapacity(): number {
  return Math.max(8, 4 * availableParallelism());
}
