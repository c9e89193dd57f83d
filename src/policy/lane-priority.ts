/**
 * Which lane and priority a piece of work gets, from what triggered it. Pure, so the gateway, cron
 * integrations and tests agree on one mapping.
 *
 * @example
 * ```ts
 * priorityForTrigger("user");                         // "foreground"
 * priorityForTrigger("user", { restartRecovery: true }); // "background"
 * laneForNested("cron");                              // "cron-nested"
 * laneForTrigger("cron");                             // "cron"
 * ```
 */
export const PRIORITIES = ["foreground", "normal", "background"] as const;
/** A task's priority in its workload lane: `foreground`, `normal` or `background`. */
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

/** The priority a turn gets from what started it: a user's message runs before scheduled and resumed work. */
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

/** Triggers a gateway can start a turn for (`gateway.trigger`, scenario inbound `trigger`). */
export const TRIGGERS = [
  "user",
  "manual",
  "cron",
  "heartbeat",
  "memory",
  "overflow",
  "subagent",
  "recovery",
  "commitment",
] as const;

/** The workload lane a turn of this trigger runs in: scheduled work and subagents have lanes of their own. */
export function laneForTrigger(trigger: Trigger): string {
  if (trigger === "cron") return "cron";
  if (trigger === "subagent") return "subagent";
  return "main";
}

/** The workload lane a turn runs in: its own when set (a nested subagent's), else its trigger's. */
export function laneForTurn(turn: { trigger?: string; lane?: string }): string {
  return turn.lane ?? laneForTrigger(turn.trigger ?? "user");
}

/** The lane a turn nested inside a turn of `parentLane` runs in (a subagent started by a tool). */
export function laneForChild(parentLane: string): string {
  const nested = laneForNested(parentLane);
  return nested === parentLane ? "subagent" : nested;
}

/** Whether a person is waiting on this turn (user and manual); the others are background work. */
export function isTypedTrigger(trigger: Trigger | undefined): boolean {
  return trigger === undefined || FOREGROUND.has(trigger);
}
