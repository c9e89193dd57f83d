/**
 * (b) of the gateway bench: receive → first model call. A zero-latency model records
 * `performance.now()` when `complete()` is entered; timed from just before `gateway.receive()` on the
 * system clock, each turn left to finish before the next message. Live sessions, new sessions, live
 * sessions with growing windows, and the floor under all of them (bench/actor-chain-floor.ts), measured
 * in blocks that take turns with the gateway's so that both medians come from the same stretches.
 */

import { settle } from "../src/adapters/simulated-clock.js";
import { SystemClock } from "../src/adapters/system-clock.js";
import { createGateway, type Gateway } from "../src/gateway/create-gateway.js";
import { silentLogger } from "../src/logger.js";
import type { ModelProvider, ModelReply } from "../src/ports/model.js";
import { actorChainFloorSamples } from "./actor-chain-floor.js";
import { cpuMicros, type Figures, median, NullChannel, percentile, round } from "./bench-support.js";

const LATENCY_SESSIONS = 2_000;
const LATENCY_WARMUP = 300;
/** Turns of the floor measured after every this many of the gateway's, and its warm-up each time. */
const FLOOR_BLOCK = 200;
const FLOOR_BLOCK_WARMUP = 50;

/** A zero-latency model that stamps (wall and CPU time) the moment each call enters it. */
class StampingModel implements ModelProvider {
  enteredAt = Number.NaN;
  enteredCpu = Number.NaN;
  private waiter: (() => void) | null = null;

  async complete(): Promise<ModelReply> {
    this.enteredAt = performance.now();
    this.enteredCpu = cpuMicros();
    const waiter = this.waiter;
    this.waiter = null;
    waiter?.();
    return { text: "ok", toolCalls: [] };
  }

  /** Resolves at the next call's entry. */
  nextCall(): Promise<void> {
    return new Promise((resolve) => {
      this.waiter = resolve;
    });
  }
}

/** Times one message's receive → first model call, in µs of wall and CPU time. */
async function timeFirstCall(
  gateway: Gateway,
  model: StampingModel,
  session: string,
  id: string,
): Promise<{ wall: number; cpu: number }> {
  const called = model.nextCall();
  const c0 = cpuMicros();
  const t0 = performance.now();
  const ack = gateway.receive({ session, channel: "bench", text: "hello there", id });
  await called;
  const timing = { wall: (model.enteredAt - t0) * 1000, cpu: model.enteredCpu - c0 };
  await ack;
  // The turn delivers and the session rests before the next message.
  await settle();
  return timing;
}

function firstCallGateway(model: StampingModel): Gateway {
  return createGateway({
    model,
    channels: { bench: new NullChannel() },
    clock: new SystemClock(),
    logger: silentLogger,
  });
}

/**
 * (b1) a live session (it answered recently: its actor and context window are in memory), with a short
 * history (about 10 earlier exchanges): the common case. (b2) the first message of a new session.
 */
export async function benchFirstCall(): Promise<Figures> {
  const model = new StampingModel();
  const gateway = firstCallGateway(model);
  await gateway.start();
  const live: Array<{ wall: number; cpu: number }> = [];
  const fresh: Array<{ wall: number; cpu: number }> = [];
  const floorWall: number[] = [];
  const liveSessions = 200;
  const total = LATENCY_WARMUP + LATENCY_SESSIONS;
  // Interleaved, so both kinds run on equally warm code (one after the other, the second one gained).
  for (let i = 0; i < total; i++) {
    // Sessions take turns, so each keeps a short window (at most 10 exchanges before the bench ends).
    const timing = await timeFirstCall(gateway, model, `live:${i % liveSessions}`, `l${i}`);
    if (i >= LATENCY_WARMUP + liveSessions) live.push(timing);
    const first = await timeFirstCall(gateway, model, `new:${i}`, `n${i}`);
    if (i >= LATENCY_WARMUP) fresh.push(first);
    // The floor takes turns with the gateway in blocks, so that the machine's load in each stretch of
    // the run weighs on both (measured after the gateway, a quiet or busy minute moved the ratio 2x).
    if ((i + 1) % FLOOR_BLOCK === 0 && i >= LATENCY_WARMUP)
      floorWall.push(...(await actorChainFloorSamples(FLOOR_BLOCK, FLOOR_BLOCK_WARMUP)));
  }
  await gateway.stop();
  const wallOf = (timings: typeof live) => timings.map((timing) => timing.wall).sort((a, b) => a - b);
  const cpuOf = (timings: typeof live) => timings.map((timing) => timing.cpu).sort((a, b) => a - b);
  const liveWall = wallOf(live);
  const freshWall = wallOf(fresh);
  floorWall.sort((a, b) => a - b);
  const floor = { median: percentile(floorWall, 50), p95: percentile(floorWall, 95) };
  return {
    "firstCall.liveSession.messages": live.length,
    "firstCall.liveSession.wallUs.median": round(percentile(liveWall, 50), 1),
    "firstCall.liveSession.wallUs.median.target": "< 50",
    "firstCall.liveSession.wallUs.p95": round(percentile(liveWall, 95), 1),
    "firstCall.liveSession.cpuUs.median": round(percentile(cpuOf(live), 50), 1),
    "firstCall.newSession.messages": fresh.length,
    "firstCall.newSession.wallUs.median": round(percentile(freshWall, 50), 1),
    "firstCall.newSession.wallUs.p95": round(percentile(freshWall, 95), 1),
    "firstCall.newSession.cpuUs.median": round(percentile(cpuOf(fresh), 50), 1),
    // The bare actor chain of docs/architecture.md with trivial machines: XState's own cost for it here.
    "firstCall.actorChainFloor.wallUs.median": round(floor.median, 1),
    "firstCall.actorChainFloor.wallUs.p95": round(floor.p95, 1),
    "firstCall.liveSession.aboveFloorUs": round(percentile(liveWall, 50) - floor.median, 1),
    // The figure to compare across runs and machines: both medians come from this run.
    "firstCall.liveSession.timesFloor": round(percentile(liveWall, 50) / floor.median, 2),
    "firstCall.liveSession.timesFloor.target": "<= 1.5",
    ...(await benchWindowScaling()),
  };
}

/**
 * (b3) how the first-call overhead grows with the live session's context window: the run is handed the
 * window as model messages (the model needs all of it), so some cost per record is inherent.
 */
async function benchWindowScaling(): Promise<Figures> {
  const figures: Figures = {};
  // Up to 1,000 records: past `limits.maxWindowRecords` (2,000) a turn rotates the window away.
  for (const exchanges of [10, 100, 500]) {
    const model = new StampingModel();
    const gateway = firstCallGateway(model);
    await gateway.start();
    // One session grows to `exchanges` turns (two records each); the next 200 turns are timed, the
    // window growing by two records each.
    const timings: number[] = [];
    for (let i = 0; i < exchanges + 200; i++) {
      const timing = await timeFirstCall(gateway, model, "scaling", `s${i}`);
      if (i >= exchanges) timings.push(timing.wall);
    }
    await gateway.stop();
    const med = median(timings);
    figures[`firstCall.windowFrom${exchanges * 2}Records.wallUs.median`] = round(med, 1);
  }
  return figures;
}
