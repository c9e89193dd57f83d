import { randomBytes } from "node:crypto";
import type { InspectionEvent } from "xstate";
import { checkSchema } from "../../adapters/postgres/connection.js";
import type { PostgresConnectionOptions } from "../../adapters/postgres/connection-options.js";
import { SystemClock } from "../../adapters/system-clock.js";
import { ConfigError } from "../../errors.js";
import type { TillerEvent } from "../../events.js";
import { type Logger, silentLogger } from "../../logger.js";
import type { Clock } from "../../ports/clock.js";
import type { LaneGroupOptions } from "../lane-groups.js";
import { checkCapacity, defaultMainCapacity } from "../run-options.js";

/** Options of {@link createClusterLanes}: the database, the lanes' capacities, leases and aging. */
export interface ClusterLanesOptions extends PostgresConnectionOptions {
  /**
   * Capacity per workload lane, cluster-wide (written at start: give every process the same); other
   * lanes hold 1 at a time.
   * @default { main: max(8, 4 × CPUs) }, as in one process
   */
  capacity?: Record<string, number>;
  /**
   * Capacity groups, cluster-wide: each caps the tasks running at once in its lanes, all lanes and
   * processes together (give every process the same). A lane belongs to at most one group.
   * @default {} (no groups)
   */
  groups?: Record<string, LaneGroupOptions>;
  /** How long a grant holds without renewal. @default 10000 */
  leaseMs?: number;
  /** Renewal interval. @default leaseMs / 3 */
  heartbeatMs?: number;
  /** Poll fallback (reaper, missed wake-ups). @default 500 */
  pollMs?: number;
  /**
   * A waiting task rises one priority level for every `agingMs` it has waited (as in one process), so
   * background work waits a bounded time under any foreground load; 0 turns aging off.
   * @default 60000
   */
  agingMs?: number;
  /**
   * A task of this process that waits longer for its slot is reported (`lane.waitExceeded`), at the
   * first poll after the time is up.
   * @default 2000
   */
  warnAfterMs?: number;
  /** This process's name in the cluster (`[a-z0-9_-]`, ≤ 40). @default a random id */
  processId?: string;
  /** @default a `SystemClock` */
  clock?: Clock;
  /** @default a logger that writes nothing */
  logger?: Logger;
  onEvent?: (event: TillerEvent) => void;
  inspect?: (event: InspectionEvent) => void;
}

const PROCESS_ID = /^[a-z0-9_-]{1,40}$/;

/** The options checked and defaulted once; a bad one is a ConfigError naming its field. */
export function parseClusterOptions(options: ClusterLanesOptions) {
  const schema = checkSchema(options.schema);
  const leaseMs = positive("leaseMs", options.leaseMs ?? 10_000);
  const heartbeatMs = positive("heartbeatMs", options.heartbeatMs ?? Math.floor(leaseMs / 3));
  const pollMs = positive("pollMs", options.pollMs ?? 500);
  const agingMs = nonNegative("agingMs", options.agingMs ?? 60_000);
  const warnAfterMs = nonNegative("warnAfterMs", options.warnAfterMs ?? 2000);
  if (heartbeatMs >= leaseMs)
    throw new ConfigError("heartbeatMs", `less than leaseMs (${leaseMs})`, heartbeatMs);
  const processId = options.processId ?? `p${randomBytes(6).toString("hex")}`;
  if (typeof processId !== "string" || !PROCESS_ID.test(processId))
    throw new ConfigError("processId", "[a-z0-9_-]{1,40}", processId);
  // As in one process: `main` holds every user turn, so it is never left at one slot by default.
  const capacities = new Map<string, number>([["main", defaultMainCapacity()]]);
  for (const [lane, capacity] of Object.entries(options.capacity ?? {}))
    capacities.set(lane, checkCapacity(`capacity.${lane}`, capacity));
  return {
    schema,
    clock: options.clock ?? new SystemClock(),
    logger: options.logger ?? silentLogger,
    leaseMs,
    heartbeatMs,
    pollMs,
    agingMs,
    warnAfterMs,
    processId,
    capacities,
  };
}

function positive(field: string, value: unknown): number {
  if (typeof value !== "number" || !Number.isFinite(value) || value <= 0)
    throw new ConfigError(field, "a finite number of milliseconds > 0", value);
  return value;
}

function nonNegative(field: string, value: unknown): number {
  if (typeof value !== "number" || !Number.isFinite(value) || value < 0)
    throw new ConfigError(field, "a finite number of milliseconds >= 0 (0 turns it off)", value);
  return value;
}
