/**
 * The soak bench (bench/soak.ts): sessions and messages through the real gateway and JSONL store on the
 * simulated clock, with random modes, tool durations, controls and redeliveries. Prints messages lost,
 * answered twice and reordered (targets 0), and the heap: before, right after the run, and after a GC
 * once everything is closed (target: within 10 MB of the baseline). The default is 200 sessions and
 * 2,000 messages (seconds); BENCH_SOAK_FULL=1 runs 10,000 sessions and 100,000 messages (minutes).
 */
import type { Figures } from "./bench-support.js";
import { envNumber } from "./bench-support.js";
import { soakWithHeap } from "./soak.js";

export async function benchSoak(): Promise<Figures> {
  const full = process.env.BENCH_SOAK_FULL === "1";
  const sessions = envNumber("BENCH_SOAK_SESSIONS", full ? 10_000 : 200);
  const messages = envNumber("BENCH_SOAK_MESSAGES", full ? 100_000 : 2_000);
  const figures = await soakWithHeap({ sessions, messages });
  const retained = Math.round((figures.heapAfterGcMb - figures.heapBeforeMb) * 10) / 10;
  return {
    "soak.sessions": figures.sessions,
    "soak.messages": figures.messages,
    "soak.acked": figures.acked,
    "soak.lost": figures.lost,
    "soak.lost.target": "<= 0",
    "soak.answeredTwice": figures.answeredTwice,
    "soak.answeredTwice.target": "<= 0",
    "soak.reordered": figures.reordered,
    "soak.reordered.target": "<= 0",
    "soak.duplicatesAcked": figures.duplicatesAcked,
    "soak.wallMs": figures.wallMs,
    "soak.heapBeforeMb": figures.heapBeforeMb,
    "soak.heapAfterRunMb": figures.heapAfterRunMb,
    "soak.heapAfterGcMb": figures.heapAfterGcMb,
    "soak.heapRetainedMb": retained,
    "soak.heapRetainedMb.target": "<= 10",
  };
}
