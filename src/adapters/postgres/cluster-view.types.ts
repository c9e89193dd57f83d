/** One workload lane, cluster-wide. */
export interface ClusterLaneView {
  lane: string;
  /** From `lane_capacity`; null for a lane with rows but no configured capacity. */
  capacity: number | null;
  active: number;
  queued: number;
}

/** One member of the cluster. */
export interface ClusterProcessView {
  id: string;
  startedAt: string;
  /** ISO time its membership runs until (renewed by its heartbeat). */
  aliveUntil: string;
  alive: boolean;
  /** Its active lane runs, all lanes. */
  active: number;
}

/** Where a session lives: its owner (`session_owners`) and the process running its active run. */
export interface ClusterSessionView {
  session: string;
  /** The owning process (null when nothing owns it, or ownership is not recorded). */
  owner: string | null;
  ownerLeaseUntil: string | null;
  /** The process running its active lane run, and the run's lane (null when none runs). */
  runningOn: string | null;
  lane: string | null;
}

/** `GET /v1/cluster` on a server that runs on PostgreSQL (docs/http.md). */
export interface ClusterView {
  clustered: true;
  schema: string;
  /** The process that answered. */
  process: string;
  /** The database's time of the reading (ISO). */
  at: string;
  lanes: ClusterLaneView[];
  processes: ClusterProcessView[];
  /** Sessions with an owner or an active run, at most 500, by key. */
  sessions: ClusterSessionView[];
}
