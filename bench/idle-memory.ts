/**
 * (c) of the gateway bench: heap per idle session. Up to 100,000 sessions (BENCH_IDLE_SESSIONS), one
 * message each, the model answering at once; once all are idle, (heapUsed after − before) / sessions
 * after gc(), split into the in-memory store's share and the rest. BENCH_IDLE_BUDGET_S stops the fill
 * early on a slow machine.
 */
import { MemoryStore } from "../src/adapters/memory-store.js";
import { settle } from "../src/adapters/simulated-clock.js";
import { SystemClock } from "../src/adapters/system-clock.js";
import { createGateway, type Gateway } from "../src/gateway/create-gateway.js";
import { silentLogger } from "../src/logger.js";
import type { ModelProvider, ModelReply } from "../src/ports/model.js";
import { ensureGc, envNumber, type Figures, NullChannel, round } from "./bench-support.js";

const IDLE_SESSIONS = envNumber("BENCH_IDLE_SESSIONS", 100_000);
const IDLE_BUDGET_MS = envNumber("BENCH_IDLE_BUDGET_S", 0) * 1000;
const IDLE_BATCH = 100;
const IDLE_WARMUP = 1_000;

class InstantModel implements ModelProvider {
  async complete(): Promise<ModelReply> {
    return { text: "ok", toolCalls: [] };
  }
}

function idleGateway(store: MemoryStore, counter: { turnsEnded: number }): Gateway {
  const gateway = createGateway({
    model: new InstantModel(),
    channels: { bench: new NullChannel() },
    clock: new SystemClock(),
    store,
    logger: silentLogger,
    // Enough slots that no turn waits: waiting is the lane bench's subject.
    config: { lanes: { main: 4 * IDLE_BATCH } },
  });
  gateway.subscribe((event) => {
    if (event.type === "turn.ended") counter.turnsEnded++;
  });
  return gateway;
}

/** One message for each of `count` fresh sessions, in batches; stops at `deadline`. Returns the count. */
async function fillSessions(
  gateway: Gateway,
  prefix: string,
  count: number,
  deadline: number,
): Promise<number> {
  let made = 0;
  while (made < count && performance.now() < deadline) {
    const end = Math.min(count, made + IDLE_BATCH);
    const acks: Array<Promise<unknown>> = [];
    for (let i = made; i < end; i++) {
      acks.push(
        gateway.receive({ session: `${prefix}:${i}`, channel: "bench", text: `hello ${i}`, id: `m${i}` }),
      );
    }
    await Promise.all(acks);
    await settle(() => gateway.isBusy);
    made = end;
  }
  await settle(() => gateway.isBusy);
  return made;
}

export async function benchIdleMemory(): Promise<Figures> {
  const gc = ensureGc();
  // Full collections until the heap stops shrinking: memory released through weak references and
  // finalizers (AbortSignals, stopped actors) takes more than one pass.
  const collect = () => {
    if (!gc) return;
    let previous = Number.POSITIVE_INFINITY;
    for (let pass = 0; pass < 8; pass++) {
      gc();
      const used = process.memoryUsage().heapUsed;
      if (pass >= 2 && used >= previous - 64 * 1024) break;
      previous = used;
    }
  };
  // Warm the code paths on a throwaway gateway, so compiled code is not counted as session memory.
  const warm = idleGateway(new MemoryStore(), { turnsEnded: 0 });
  await fillSessions(warm, "warm", IDLE_WARMUP, Number.POSITIVE_INFINITY);
  await warm.stop();

  const store = new MemoryStore();
  const counter = { turnsEnded: 0 };
  let gateway: Gateway | null = idleGateway(store, counter);
  await gateway.start();
  collect();
  const before = process.memoryUsage().heapUsed;
  const t0 = performance.now();
  const deadline = IDLE_BUDGET_MS > 0 ? t0 + IDLE_BUDGET_MS : Number.POSITIVE_INFINITY;
  const made = await fillSessions(gateway, "idle", IDLE_SESSIONS, deadline);
  const fillMs = performance.now() - t0;
  collect();
  const after = process.memoryUsage().heapUsed;

  const step = Math.max(1, Math.floor(made / 1000));
  let sampled = 0;
  let idle = 0;
  for (let i = 0; i < made; i += step, sampled++) {
    if (gateway.inspectSession(`idle:${i}`)?.state === "idle") idle++;
  }
  // Without the gateway only the store's transcripts stay: their share of the heap.
  const collected = new WeakRef(gateway);
  await gateway.stop();
  gateway = null;
  await settle();
  collect();
  const storeOnly = process.memoryUsage().heapUsed;
  const storedSessions = (await store.sessions()).length; // keeps `store` alive up to here
  const perSession = (after - before) / made;
  const storePerSession = collected.deref() === undefined ? (storeOnly - before) / made : Number.NaN;
  return {
    "idle.sessions": made < IDLE_SESSIONS ? `${made} of ${IDLE_SESSIONS} (fill budget reached)` : made,
    "idle.turnsEnded": counter.turnsEnded,
    "idle.sampledIdle": `${idle}/${sampled}`,
    "idle.storedTranscripts": storedSessions,
    "idle.fillSeconds": round(fillMs / 1000, 1),
    "idle.bytesPerSession": Math.round(perSession),
    "idle.bytesPerSession.target": "<= 2048",
    "idle.bytesPerSession.memoryStore": Number.isNaN(storePerSession)
      ? "n/a (gateway not collected)"
      : Math.round(storePerSession),
    "idle.bytesPerSession.gatewayOnly": Number.isNaN(storePerSession)
      ? "n/a"
      : Math.round(perSession - storePerSession),
    "idle.heapMeasurement": gc ? "after gc()" : "approximate (no gc)",
  };
}
