import type { DetectorName } from "../policy/stale-detector.js";
import type { RecheckFigures } from "../policy/stale-reply.js";

/** Fields of an event about one session. */
export interface InSession {
  /** The session key (`telegram:42`). */
  session: string;
}

/** Fields of an event inside a turn. */
export interface InTurn extends InSession {
  /** The turn's run id, unique across restarts. */
  runId: string;
}

/** Fields of a lane scheduler event about one task. */
export interface LaneTask {
  /** The workload lane (`main`, `cron`, ...). */
  lane: string;
  /** The session the task belongs to, when it has one. */
  session?: string;
  /** The scheduler's id for the task, unique in its process. */
  entryId: number;
}

/** Where a waiting (or starting) task stands. */
export interface LaneWait extends LaneTask {
  waitedMs: number;
  /** `session`: behind the session's running task; `slot`: behind the lane's capacity. */
  waitingFor: "session" | "slot";
  /** True on the report made as the task starts. */
  starting: boolean;
  queueAhead: number;
  activeAhead: number;
  activeNow: number;
  queueBehind: number;
  /**
   * The capacity group of the task's lane, when its budget is full: the task waits for the group, not
   * (only) for its lane. Its name, its budget, and how many tasks of its lanes run now.
   */
  group?: { name: string; capacity: number; activeNow: number };
}

/** Identifies one model call of a turn. */
export interface ModelCall extends InTurn {
  /** 1-based model call within the turn. */
  call: number;
  /** This call is a stale-reply re-check. */
  recheck: boolean;
  /** This call belongs to a stranded-reply recovery turn. */
  recovery: boolean;
  /** This call is a commitment review. */
  review: boolean;
}

/** A tool call of a turn. */
export interface ToolCallFields {
  callId: string;
  name: string;
  args: unknown;
}

/** Fields of an event about one commitment. */
export interface InCommitment extends InSession {
  id: string;
}

/** Who decided a re-check verdict, and the figures it was decided on. */
export interface RecheckDecision {
  /** `built-in` signals, or the gateway's own `staleReplyRecheck.detect`. */
  detector: DetectorName;
  /** The gateway's detector failed and the built-in signals decided instead. */
  fallback: boolean;
  /** The overlaps, the matched complaint pattern and the thresholds behind the verdict. */
  figures: RecheckFigures;
}

/** What a durable write that failed was for. */
export type StoreOp = "turn" | "final" | "marker" | "state";
