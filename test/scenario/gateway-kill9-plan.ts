import { mulberry32 } from "../support/random.js";

/** The workload of the whole-gateway kill -9 harness: the same for every process, from the seed. */
export interface PlannedMessage {
  session: string;
  id: string;
  text: string;
  mode: "followup" | "steer" | "collect" | "interrupt";
}

export const PLAN_SESSIONS = 100;
const MODES = ["followup", "steer", "collect", "interrupt"] as const;

export function gatewayKillPlan(seed: number, sessions = PLAN_SESSIONS): PlannedMessage[] {
  const random = mulberry32(seed);
  const plan: PlannedMessage[] = [];
  for (let s = 0; s < sessions; s++) {
    const session = `web:k${s}`;
    const mode = MODES[s % MODES.length]!;
    const count = 1 + Math.floor(random() * 3);
    for (let i = 0; i < count; i++) {
      const roll = random();
      const what = roll < 0.3 ? "please look it up" : roll < 0.5 ? "write the file" : "a plain question";
      plan.push({ session, id: `s${s}m${i}`, text: `${what} (s${s}m${i})`, mode });
    }
  }
  // Interleave sessions, as many users writing at once would.
  return plan.sort((a, b) => a.id.length - b.id.length || hash(a.id, seed) - hash(b.id, seed));
}

function hash(text: string, seed: number): number {
  let h = seed >>> 0;
  for (const char of text) h = Math.imul(h ^ char.charCodeAt(0), 16_777_619) >>> 0;
  return h;
}
