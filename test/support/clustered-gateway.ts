import { afterEach } from "vitest";
import { LoopbackChannel } from "../../src/adapters/channels/loopback-channel.js";
import { createClusterSessions } from "../../src/adapters/postgres/cluster-sessions.js";
import { PostgresStore } from "../../src/adapters/postgres/postgres-store.js";
import { SystemClock } from "../../src/adapters/system-clock.js";
import { createGateway } from "../../src/gateway/create-gateway.js";
import { silentLogger } from "../../src/logger.js";
import type { Channel } from "../../src/ports/channel.js";
import type { ModelProvider } from "../../src/ports/model.js";
import type { ToolDefinition } from "../../src/ports/tool.js";
import type { TestSchema } from "./postgres.js";

export interface ClusteredGatewayOptions {
  model: (clock: SystemClock) => ModelProvider;
  tools?: ToolDefinition[];
  /** The ownership's lease, renewal, poll and ack wait (ms); the lease is the claims' of sends too. */
  timing: { leaseMs: number; heartbeatMs: number; pollMs: number; ackWaitMs: number; idleHoldMs?: number };
  /** The `web` channel, wrapped around the loopback one the test reads (a send held in flight, say). */
  channel?: (web: LoopbackChannel) => Channel;
}

/**
 * In-process gateways wired as `tiller serve --postgres` wires one (PostgresStore + session ownership
 * and inbox) on the suite's schema, on the system clock; each stopped after its test.
 */
export function useClusteredGateways(db: TestSchema) {
  const cleanup: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const close of cleanup.splice(0).reverse()) await close();
  });
  return async function clusteredGateway(processId: string, options: ClusteredGatewayOptions) {
    const clock = new SystemClock();
    const web = new LoopbackChannel();
    const cluster = await createClusterSessions({
      url: db.url,
      schema: db.schema,
      processId,
      ...options.timing,
    });
    // State saves between turns carry the session's ownership token, as `tiller serve` wires them.
    const store = await PostgresStore.connect({
      url: db.url,
      schema: db.schema,
      processId,
      deliveryLeaseMs: options.timing.leaseMs,
      fences: { fenceFor: () => undefined, ownerFenceFor: (session) => cluster.ownershipFence(session) },
    });
    const gateway = createGateway({
      model: options.model(clock),
      tools: options.tools ?? [],
      channels: { web: options.channel ? options.channel(web) : web },
      store,
      cluster,
      clock,
      logger: silentLogger,
    });
    // stop() closes the store too.
    cleanup.push(
      () => cluster.close(),
      () => gateway.stop(),
    );
    return { gateway, web, clock, cluster, store };
  };
}
