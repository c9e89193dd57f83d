import type { FenceSource } from "../../adapters/postgres/fences.js";
import type { LaneScheduler } from "../lane-scheduler.types.js";

/** Cluster lanes: the lane scheduler's interface, plus what a process of a cluster needs. */
export interface ClusterLanes extends LaneScheduler, FenceSource {
  readonly processId: string;
  /** Runs the reaper now (it also runs on every poll); returns how many rows it dropped. */
  reap(): Promise<number>;
  /** Rejects waiting tasks, leaves the cluster (its rows go) and closes the connections. */
  close(): Promise<void>;
}
