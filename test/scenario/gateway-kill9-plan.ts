import { mulberry32 } from "../support/random.js";

/** The workload of the whole-gateway kill -9 harness: the same in every process, from the seed. */
export interface PlannedMessage {
  session: string;
  id: string;
  text: string;
  mode: "followup" | "steer" | "collect" | "interrupt";
}

export const PLAN_SESSIONS = 100;
const MODES = ["followup", "steer", "collect", "interrupt"] as const;

/** The session's queue mode: each of the 100 sessions keeps one, a quarter in each mode. */
export function modeOf(session: number): PlannedMessage["mode"] {
  return MODES[session % MODES.length]!;
}

/**
 * The messages process `k` sends: a few sessions of the 100 get one to three messages each, so every
 * process has turns, tools and sends in flight when it is killed. The final process (k = -1) only
 * resumes.
 */
export function batchOf(seed: number, k: number): PlannedMessage[] {
  if (k < 0) return [];
  const random = mulberry32(seed * 1_000 + k);
  const plan: PlannedMessage[] = [];
  for (let n = 0; n < 6; n++) {
    const s = Math.floor(random() * PLAN_SESSIONS);
    const count = 1 + Math.floor(random() * 3);
    for (let i = 0; i < count; i++) {
      const id = `p${k}s${s}m${i}`;
      const roll = random();
      const what = roll < 0.3 ? "please look it up" : roll < 0.5 ? "write the file" : "a plain question";
      plan.push({ session: `web:k${s}`, id, text: `${what} (${id})`, mode: modeOf(s) });
    }
  }
  return plan;
}
