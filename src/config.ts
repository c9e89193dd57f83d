import { checkSync } from "recheck";
import { z } from "zod";
import { ConfigError } from "./errors.js";
import { DROP_POLICIES, parseQueueMode, type QueueMode, type QueueSettings } from "./policy/queue-mode.js";
import { compileCron } from "./policy/schedule-time.js";
import type { StaleDetector } from "./policy/stale-detector.js";
import { DEFAULT_COMPLAINT_PATTERNS } from "./policy/stale-reply.js";

/**
 * Gateway configuration (CONTRACTS.md §2 "Config keys"): parsed once at the edge with zod, so the rest
 * of the code receives typed, defaulted values. User-supplied regular expressions are checked for
 * catastrophic backtracking here, before anything runs.
 *
 * @example
 * ```ts
 * const config = parseConfig({ queue: { mode: "followup" }, lanes: { main: 4 } });
 * config.staleReplyRecheck.maxPasses; // 1
 * ```
 */
const modeSchema = z.string().transform((value, ctx): QueueMode => {
  const mode = parseQueueMode(value);
  if (!mode) {
    ctx.addIssue({
      code: "custom",
      message: `expected one of steer, followup, collect, interrupt (or an alias)`,
    });
    return z.NEVER;
  }
  return mode;
});

const nonNegativeInt = z.number().int().nonnegative();

export const configSchema = z
  .object({
    queue: z
      .object({
        mode: modeSchema.optional(),
        byChannel: z.record(z.string(), modeSchema).default({}),
        // A collect window longer than this would park a session's messages, as `/queue` refuses too.
        debounceMs: nonNegativeInt.max(600_000).optional(),
        cap: z.number().int().positive().optional(),
        drop: z.enum(DROP_POLICIES).optional(),
      })
      .strict()
      .default({ byChannel: {} }),
    staleReplyRecheck: z
      .object({
        enabled: z.boolean().default(true),
        maxPasses: nonNegativeInt.default(1),
        complaintPatterns: z
          .array(z.string().max(500))
          .max(100)
          .default([...DEFAULT_COMPLAINT_PATTERNS]),
        minOverlap: z.number().min(0).max(1).default(0.2),
        /**
         * The gateway author's own detector (a function: only from code, never from a config file);
         * the built-in signals decide when it is absent, throws, times out or returns no verdict.
         */
        detect: z
          .custom<StaleDetector>((value) => typeof value === "function", {
            message: "a function (facts, { signal }) => verdict",
          })
          .optional(),
        /** How long a re-check waits for `detect`, on the gateway's clock. */
        detectTimeoutMs: z.number().int().positive().max(600_000).default(5000),
      })
      .strict()
      .default({
        enabled: true,
        maxPasses: 1,
        complaintPatterns: [...DEFAULT_COMPLAINT_PATTERNS],
        minOverlap: 0.2,
        detectTimeoutMs: 5000,
      }),
    delivery: z
      .object({
        visibleReplies: z.enum(["auto", "message_tool"]).default("auto"),
        /** Send acks as visible messages: for every channel, or per channel name. */
        visibleAcks: z.union([z.boolean(), z.record(z.string(), z.boolean())]).default(false),
        /** A channel send that has not answered by then counts as not delivered. */
        sendTimeoutMs: z.number().int().positive().default(30_000),
      })
      .strict()
      .default({ visibleReplies: "auto", visibleAcks: false, sendTimeoutMs: 30_000 }),
    lanes: z.record(z.string(), nonNegativeInt).default({}),
    laneTimeoutMs: z.number().positive().optional(),
    warnAfterMs: nonNegativeInt.default(2000),
    commitments: z
      .object({ enabled: z.boolean().default(false), maxPerDay: nonNegativeInt.default(3) })
      .strict()
      .default({ enabled: false, maxPerDay: 3 }),
    heartbeat: z.object({ everyMs: z.number().positive().optional() }).strict().default({}),
    /** A waiting lane entry rises one priority level per this many ms waited; 0 turns aging off. */
    laneAgingMs: nonNegativeInt.default(60_000),
    /** Turns that run on the gateway's clock, with the trigger `cron`. */
    schedules: z
      .array(
        z
          .object({
            id: z.string().min(1),
            session: z.string().min(1),
            text: z.string().min(1),
            everyMs: z.number().int().positive().optional(),
            cron: z.string().min(1).optional(),
            at: z.union([z.number().nonnegative(), z.iso.datetime({ offset: true })]).optional(),
            timezone: z.string().min(1).optional(),
            catchUp: z.boolean().default(true),
            channel: z.string().min(1).optional(),
          })
          .strict(),
      )
      .default([]),
    limits: z
      .object({
        maxMessageChars: z.number().int().positive().default(32_000),
        maxSessionKeyChars: z.number().int().positive().default(512),
        dedupeWindowMs: z.number().int().positive().default(600_000),
        maxModelCallsPerTurn: z.number().int().positive().default(25),
        /** A turn that would start with a longer context window first rotates the transcript. */
        maxWindowRecords: z.number().int().positive().default(2000),
        /**
         * Idle sessions whose actor (and cached context window) stays alive, most recent first: their
         * next message starts a turn without rebuilding them. Older idle sessions keep only a few
         * hundred bytes and are rebuilt on demand. 0 stops every actor as soon as it is idle.
         */
        liveIdleSessions: nonNegativeInt.default(1000),
        /**
         * Messages `explain()` can answer for, across sessions: past this, the sessions whose messages
         * were least recently touched are forgotten first (each session keeps its last 500).
         */
        explainMessages: nonNegativeInt.default(20_000),
        /**
         * A tool call that has not settled by then is given up: a cancellable tool is cancelled, any
         * other may still be running, and the model is told its outcome is unknown.
         */
        toolTimeoutMs: z.number().int().positive().default(600_000),
        /** A model call that has not answered by then is aborted and fails its turn (MODEL_TIMEOUT). */
        modelTimeoutMs: z.number().int().positive().default(600_000),
      })
      .strict()
      .default({
        maxMessageChars: 32_000,
        maxSessionKeyChars: 512,
        dedupeWindowMs: 600_000,
        maxModelCallsPerTurn: 25,
        maxWindowRecords: 2000,
        liveIdleSessions: 1000,
        explainMessages: 20_000,
        toolTimeoutMs: 600_000,
        modelTimeoutMs: 600_000,
      }),
  })
  .strict();

export type GatewayConfig = z.output<typeof configSchema>;
export type GatewayConfigInput = z.input<typeof configSchema>;

/** Parses and validates a config; throws ConfigError naming the field, the expectation and the value. */
export function parseConfig(raw: unknown = {}, fieldPrefix = "config"): GatewayConfig {
  const result = configSchema.safeParse(raw ?? {});
  if (!result.success) throw zodToConfigError(result.error, raw, fieldPrefix);
  const config = result.data;
  config.staleReplyRecheck.complaintPatterns.forEach((pattern, index) => {
    checkPattern(`${fieldPrefix}.staleReplyRecheck.complaintPatterns[${index}]`, pattern);
  });
  checkSchedules(config.schedules, `${fieldPrefix}.schedules`);
  return config;
}

/** The global and per-channel layers of queue settings, for `resolveQueueSetting`. */
export function queueLayers(
  config: GatewayConfig,
  channel: string,
): { global: QueueSettings; channel?: QueueSettings } {
  const { byChannel, ...global } = config.queue;
  const channelMode = byChannel[channel];
  return { global: strip(global), ...(channelMode ? { channel: { mode: channelMode } } : {}) };
}

/** Each schedule has exactly one timing, a valid cron expression and time zone, and a unique id. */
function checkSchedules(schedules: GatewayConfig["schedules"], field: string): void {
  const ids = new Set<string>();
  schedules.forEach((schedule, index) => {
    const at = `${field}[${index}]`;
    const timings = [schedule.everyMs, schedule.cron, schedule.at].filter((value) => value !== undefined);
    if (timings.length !== 1) {
      throw new ConfigError(at, "exactly one of everyMs, cron or at", schedule);
    }
    if (ids.has(schedule.id)) throw new ConfigError(`${at}.id`, "an id no other schedule has", schedule.id);
    ids.add(schedule.id);
    if (schedule.timezone !== undefined) {
      try {
        new Intl.DateTimeFormat("en", { timeZone: schedule.timezone });
      } catch (error) {
        throw new ConfigError(`${at}.timezone`, "an IANA time zone such as Europe/Paris", schedule.timezone, {
          cause: error,
        });
      }
    }
    if (schedule.cron !== undefined) {
      try {
        compileCron(schedule.cron, schedule.timezone);
      } catch (error) {
        throw new ConfigError(
          `${at}.cron`,
          `a five-field cron expression (${error instanceof Error ? error.message : String(error)})`,
          schedule.cron,
          { cause: error },
        );
      }
    }
  });
}

// The built-in patterns are proven safe by test/config.test.ts, so a process does not start the
// checker (hundreds of milliseconds) unless a user supplies patterns of their own.
const checkedPatterns = new Map<string, string | null>(
  DEFAULT_COMPLAINT_PATTERNS.map((pattern) => [pattern, null]),
);

/** Rejects a pattern that does not compile or that can backtrack catastrophically. */
export function checkPattern(field: string, pattern: string): void {
  try {
    new RegExp(pattern, "i");
  } catch (error) {
    throw new ConfigError(field, "a valid regular expression", pattern, { cause: error });
  }
  let verdict = checkedPatterns.get(pattern);
  if (verdict === undefined) {
    const diagnostics = checkSync(pattern, "i", { timeout: 2000 });
    verdict =
      diagnostics.status === "safe"
        ? null
        : diagnostics.status === "vulnerable"
          ? `vulnerable to catastrophic backtracking (${diagnostics.complexity.summary})`
          : "could not be proven safe from catastrophic backtracking";
    checkedPatterns.set(pattern, verdict);
  }
  if (verdict)
    throw new ConfigError(field, `a regular expression that is safe to match (${verdict})`, pattern);
}

function zodToConfigError(error: z.ZodError, raw: unknown, prefix: string): ConfigError {
  const issue = error.issues[0]!;
  const path = issue.path
    .map((part) => (typeof part === "number" ? `[${part}]` : `.${String(part)}`))
    .join("");
  let received: unknown = raw;
  for (const part of issue.path) {
    received =
      received && typeof received === "object" ? (received as Record<PropertyKey, unknown>)[part] : undefined;
  }
  return new ConfigError(`${prefix}${path}`, expectation(issue), received, { cause: error });
}

/** What the field should have been, in words, from a zod issue. */
export function expectation(issue: z.core.$ZodIssue): string {
  switch (issue.code) {
    case "unrecognized_keys":
      return `no unknown keys (got ${issue.keys.join(", ")})`;
    case "invalid_type":
      return issue.expected === "int"
        ? "an integer"
        : /^[aeiou]/.test(issue.expected)
          ? `an ${issue.expected}`
          : `a ${issue.expected}`;
    case "too_small":
      return `${issue.origin === "array" ? "an array with" : "a value"} ${issue.inclusive === false ? ">" : ">="} ${String(issue.minimum)}${issue.origin === "number" ? "" : ` (${issue.origin})`}`;
    case "too_big":
      return `${issue.origin === "array" ? "an array with" : "a value"} ${issue.inclusive === false ? "<" : "<="} ${String(issue.maximum)}${issue.origin === "number" ? "" : ` (${issue.origin})`}`;
    case "invalid_union":
      // Which alternatives were open, rather than zod's bare "Invalid input".
      return `one of: ${issue.errors.map((branch) => (branch[0] ? expectation(branch[0]) : "?")).join("; or ")}`;
    case "invalid_value":
      return `one of ${issue.values.map((value) => JSON.stringify(value)).join(", ")}`;
    default:
      return issue.message
        .replace(/^Invalid input: /, "")
        .replace(/^expected /, "")
        .replace(/, received .*$/, "");
  }
}

function strip<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}
