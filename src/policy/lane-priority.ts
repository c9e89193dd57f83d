/**
 * Which lane and priority a piece of work gets, from what triggered it. Pure, so the gateway, cron
 * integrations and tests agree on one mapping.
 *
 * @example
 * ```ts
 * priorityForTrigger("user");                         // "foreground"
 * priorityForTrigger("user", { restartRecovery: true }); // "background"
 * laneForNested("cron");                              // "cron-nested"
 * ```
 */
export const PRIORITIES = ["foreground", "normal", "background"] as const;
export type Priority = (typeof PRIORITIES)[number];

export type Trigger =
  | "user"
  | "manual"
  | "cron"
  | "heartbeat"
  | "memory"
  | "overflow"
  | "subagent"
  | "recovery"
  | "commitment"
  | (string & {});

const FOREGROUND = new Set<string>(["user", "manual"]);
const BACKGROUND = new Set<string>(["cron", "heartbeat", "memory", "overflow"]);

export function priorityForTrigger(
  trigger: Trigger,
  origin: { restartRecovery?: boolean; interSession?: boolean } = {},
): Priority {
  // Work resumed after a restart or sent by another session must never starve live users.
  if (origin.restartRecovery || origin.interSession) return "background";
  if (FOREGROUND.has(trigger)) return "foreground";
  if (BACKGROUND.has(trigger)) return "background";
  return "normal";
}

/** Nested work runs in a sibling lane, so an outer job holding the last slot cannot deadlock its inner one. */
export function laneForNested(lane: string): string {
  return lane === "cron" ? "cron-nested" : lane;
}

export function priorityLevel(priority: Priority): 0 | 1 | 2 {
  return priority === "foreground" ? 0 : priority === "normal" ? 1 : 2;
}
