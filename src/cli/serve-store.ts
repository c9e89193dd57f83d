import { FileDeliveryLog } from "../adapters/jsonl/file-delivery-log.js";
import { JsonlStore } from "../adapters/jsonl/jsonl-store.js";
import { type ClusterSessions, createClusterSessions } from "../adapters/postgres/cluster-sessions.js";
import { PostgresDeliveryLog } from "../adapters/postgres/postgres-delivery-log.js";
import { PostgresStore } from "../adapters/postgres/postgres-store.js";
import { errorMessage } from "../errors.js";
import { type ClusterLanes, createClusterLanes } from "../lanes/cluster/cluster-lanes.js";
import type { Logger } from "../logger.js";
import type { DeliveryLog } from "../ports/delivery-log.js";
import type { TranscriptStore } from "../ports/store.js";
import { UsageError } from "./serve-setup.js";

export interface ServeStoreChoice {
  /** `--store DIR`: the JSONL store and the web channel's deliveries (on PostgreSQL, both are there). */
  storeDir: string;
  /** `--postgres URL` or `TILLER_DATABASE_URL`: several processes on one PostgreSQL. */
  postgresUrl: string | undefined;
  /** `--schema NAME` (default `tiller`): the cluster's tables. */
  schema: string | undefined;
  /** Lane capacities (the config's `lanes`), cluster-wide on PostgreSQL. */
  capacity: Record<string, number>;
  /** Capacity groups (the config's `laneGroups`), cluster-wide on PostgreSQL. */
  groups?: Record<string, { capacity: number; lanes: string[] }>;
  /** The config's `laneAgingMs` and `warnAfterMs`, for the cluster lanes on PostgreSQL. */
  agingMs?: number;
  warnAfterMs?: number;
  /** `--lease MS`: how long a process's runs and sessions hold without renewal, on PostgreSQL. */
  leaseMs?: number | undefined;
  /** Applied messages stay this long in the inbox for cluster-wide dedupe (the config's window). */
  dedupeWindowMs?: number;
  /** Deliveries kept per session for the deliveries stream (the config's `web.keepDeliveries`). */
  keepDeliveries?: number;
  /** Where the cluster's background steps (renewals, reaping, retries) report what failed. */
  logger?: Logger;
}

/**
 * Connections one `tiller serve --postgres` process opens at most, per adapter (plus one LISTEN
 * connection each for the lanes, the sessions and the deliveries: 20 in all). Three processes then
 * fit well inside PostgreSQL's default `max_connections` (100) with room for other clients; a pool
 * that is busy queues its statements instead of opening more connections, and a connection refused
 * because the server is full is asked for again.
 */
export const SERVE_POOLS = { lanes: 4, sessions: 4, store: 6, deliveries: 3 } as const;

export interface ServeStore {
  store: TranscriptStore;
  /** The cluster lanes on PostgreSQL; undefined on the JSONL store (the gateway's in-process lanes). */
  lanes: ClusterLanes | undefined;
  /** Session ownership and the inbox on PostgreSQL (closed with the lanes). */
  cluster: ClusterSessions | undefined;
  /** The web channel's deliveries: files in `--store DIR`, or on PostgreSQL one table for the cluster. */
  deliveries: DeliveryLog;
  /** What the startup banner says about the store. */
  description: string;
}

/**
 * The store `tiller serve` runs on: the JSONL store in `--store DIR`, or with a PostgreSQL URL the
 * PostgreSQL store and the cluster lanes, so several `tiller serve` processes on one database (and
 * schema) share the lane capacity, one run per session and the transcripts.
 */
export async function openServeStore(choice: ServeStoreChoice): Promise<ServeStore> {
  const { storeDir, postgresUrl, schema, capacity } = choice;
  const keep = choice.keepDeliveries !== undefined ? { keep: choice.keepDeliveries } : {};
  if (postgresUrl === undefined) {
    try {
      const store = await JsonlStore.openDir({ dir: storeDir });
      return {
        store,
        lanes: undefined,
        cluster: undefined,
        deliveries: new FileDeliveryLog(storeDir, keep),
        description: storeDir,
      };
    } catch (error) {
      throw new UsageError(`--store ${storeDir}: ${errorMessage(error)}`);
    }
  }
  const where = `--postgres ${redact(postgresUrl)}`;
  let lanes: ClusterLanes;
  try {
    lanes = await createClusterLanes({
      url: postgresUrl,
      capacity,
      ...(choice.groups ? { groups: choice.groups } : {}),
      poolSize: SERVE_POOLS.lanes,
      ...(choice.logger ? { logger: choice.logger } : {}),
      ...(schema !== undefined ? { schema } : {}),
      ...(choice.leaseMs !== undefined ? { leaseMs: choice.leaseMs } : {}),
      ...(choice.agingMs !== undefined ? { agingMs: choice.agingMs } : {}),
      ...(choice.warnAfterMs !== undefined ? { warnAfterMs: choice.warnAfterMs } : {}),
    });
  } catch (error) {
    throw new UsageError(`${where}: ${errorMessage(error)}`);
  }
  let cluster: ClusterSessions;
  try {
    cluster = await createClusterSessions({
      url: postgresUrl,
      processId: lanes.processId,
      poolSize: SERVE_POOLS.sessions,
      ...(choice.logger ? { logger: choice.logger } : {}),
      ...(schema !== undefined ? { schema } : {}),
      ...(choice.leaseMs !== undefined ? { leaseMs: choice.leaseMs } : {}),
      ...(choice.dedupeWindowMs !== undefined ? { dedupeWindowMs: choice.dedupeWindowMs } : {}),
    });
  } catch (error) {
    await lanes.close();
    throw new UsageError(`${where}: ${errorMessage(error)}`);
  }
  let store: PostgresStore | undefined;
  try {
    store = await PostgresStore.connect({
      url: postgresUrl,
      // A run's writes carry its lane token; the state saves between turns, the session's ownership.
      fences: {
        fenceFor: (session) => lanes.fenceFor(session),
        using: (session, write) => lanes.using?.(session, write),
        ownerFenceFor: (session) => cluster.ownershipFence(session),
      },
      processId: lanes.processId,
      // A claim of a send outlives its process by one lease, as the session's ownership does.
      ...(choice.leaseMs !== undefined ? { deliveryLeaseMs: choice.leaseMs } : {}),
      applicationName: `tiller ${lanes.processId}`,
      poolSize: SERVE_POOLS.store,
      ...(schema !== undefined ? { schema } : {}),
    });
    // Every process streams every session's deliveries, wherever its turn ran.
    const deliveries = await PostgresDeliveryLog.connect({
      url: postgresUrl,
      applicationName: `tiller ${lanes.processId}`,
      poolSize: SERVE_POOLS.deliveries,
      ...(schema !== undefined ? { schema } : {}),
      ...keep,
    });
    return {
      store,
      lanes,
      cluster,
      deliveries,
      description: `PostgreSQL ${redact(postgresUrl)}, schema ${store.schema}, process ${lanes.processId}`,
    };
  } catch (error) {
    await store?.close().catch(() => undefined);
    await cluster.close();
    await lanes.close();
    throw new UsageError(`${where}: ${errorMessage(error)}`);
  }
}

/** The URL without its password, fit for a banner or an error line. */
function redact(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = "***";
    return parsed.toString();
  } catch {
    return "(not a URL)";
  }
}
