/**
 * Queue-mode resolution (docs/architecture.md): inline → session override → per-channel → global → default.
 * Pure: the session machine calls it through its actions, and the ack reports the winning source.
 *
 * @example
 * ```ts
 * resolveQueueSetting({ inline: "follow-up", global: { mode: "steer" } });
 * // { mode: "followup", modeSource: "inline", debounceMs: 500, cap: 20, drop: "summarize" }
 * ```
 */
export const QUEUE_MODES = ["steer", "followup", "collect", "interrupt", "reject", "rollback"] as const;
/** What a message does to a busy session: `steer`, `followup`, `collect`, `interrupt`, `reject` or `rollback`. */
export type QueueMode = (typeof QUEUE_MODES)[number];
export const DROP_POLICIES = ["old", "new", "summarize"] as const;
export type DropPolicy = (typeof DROP_POLICIES)[number];
export type SettingSource = "inline" | "session" | "channel" | "global" | "default";

const ALIASES: Record<string, QueueMode> = {
  steer: "steer",
  steering: "steer",
  queue: "steer", // legacy name of the default
  followup: "followup",
  "follow-up": "followup",
  "follow-ups": "followup",
  followups: "followup",
  "steer-backlog": "followup",
  collect: "collect",
  coalesce: "collect",
  interrupt: "interrupt",
  interrupts: "interrupt",
  abort: "interrupt",
  reject: "reject",
  refuse: "reject",
  rollback: "rollback",
};

/** The canonical mode for a name or alias, or undefined when it is not one. */
export function parseQueueMode(name: unknown): QueueMode | undefined {
  if (typeof name !== "string") return undefined;
  return ALIASES[name.trim().toLowerCase()];
}

export interface QueueSettings {
  mode?: QueueMode;
  debounceMs?: number;
  cap?: number;
  drop?: DropPolicy;
}

export interface ResolvedQueueSetting {
  mode: QueueMode;
  modeSource: SettingSource;
  debounceMs: number;
  cap: number;
  drop: DropPolicy;
  /** `queue.steerAcrossSenders`: another sender's message may join a running turn. */
  steerAcrossSenders?: true;
  /** `queue.collect.maxWaitMs`: a burst runs at most this long after its first message. */
  collectMaxWaitMs?: number;
}

export const QUEUE_DEFAULTS = { mode: "steer", debounceMs: 500, cap: 20, drop: "summarize" } as const;

/** Resolves a message's queue mode and settings: inline, then session, channel, global, default. */
export function resolveQueueSetting(layers: {
  inline?: QueueMode | undefined;
  session?: QueueSettings | null | undefined;
  channel?: QueueSettings | undefined;
  global?: QueueSettings | undefined;
}): ResolvedQueueSetting {
  const ordered: Array<[SettingSource, QueueSettings | undefined | null]> = [
    ["inline", layers.inline ? { mode: layers.inline } : undefined],
    ["session", layers.session],
    ["channel", layers.channel],
    ["global", layers.global],
  ];
  let mode: QueueMode = QUEUE_DEFAULTS.mode;
  let modeSource: SettingSource = "default";
  for (const [source, layer] of ordered) {
    if (layer?.mode) {
      mode = layer.mode;
      modeSource = source;
      break;
    }
  }
  const pick = <K extends "debounceMs" | "cap" | "drop">(key: K): NonNullable<QueueSettings[K]> => {
    for (const [, layer] of ordered) {
      const value = layer?.[key];
      if (value !== undefined) return value as NonNullable<QueueSettings[K]>;
    }
    return QUEUE_DEFAULTS[key] as NonNullable<QueueSettings[K]>;
  };
  return { mode, modeSource, debounceMs: pick("debounceMs"), cap: pick("cap"), drop: pick("drop") };
}
