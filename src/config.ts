import { checkSync } from "recheck";
import { z } from "zod";
import { ConfigError } from "./errors.js";
import { channelsSchema } from "./policy/channels-config.js";
import { DROP_POLICIES, parseQueueMode, type QueueMode, type QueueSettings } from "./policy/queue-mode.js";
import { compileCron } from "./policy/schedule-time.js";
import type { StaleDetector } from "./policy/stale-detector.js";
import { DEFAULT_COMPLAINT_PATTERNS } from "./policy/stale-reply.js";

/**
 * Gateway configuration: parsed once at the edge with zod, so the rest of the code receives typed,
 * defaulted values. User-supplied regular expressions are checked for catastrophic backtracking here,
 * before anything runs. Every key is documented where the schema declares it, with its `@default`;
 * docs/config.md is generated from those comments (`npm run docs`), so a new key is documented by
 * writing its comment.
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
      message: `expected one of steer, followup, collect, interrupt, reject, rollback (or an alias)`,
    });
    return z.NEVER;
  }
  return mode;
});

const nonNegativeInt = z.number().int().nonnegative();

/** `delivery.visibleAcks` for one channel; the booleans of earlier versions are aliases. */
const ackVisibilityName = z.enum(["problems", "all", "none"]);
const ackAlias = (value: boolean | "problems" | "all" | "none") =>
  value === true ? "all" : value === false ? "none" : value;

export const configSchema = z
  .object({
    /** How messages that arrive while a turn runs are routed. */
    queue: z
      .object({
        /**
         * How a message that arrives while a turn runs is handled: `steer`, `followup`, `collect`,
         * `interrupt`, `rollback` (an interrupt whose cut-off turn later model calls never see) or
         * `reject` (a busy session refuses it), or an alias. Resolved inline → session (`/queue`) →
         * channel → this → default.
         * @default "steer"
         */
        mode: modeSchema.optional(),
        /**
         * The queue mode per channel name, between a session's `/queue` setting and `queue.mode`.
         * @default {}
         */
        byChannel: z.record(z.string(), modeSchema).default({}),
        /**
         * The quiet window of `collect` mode: a burst becomes one turn this long after its last message.
         * At most 600000 (as `/queue` refuses too: a longer window would park a session's messages).
         * @default 500
         */
        debounceMs: nonNegativeInt.max(600_000).optional(),
        /**
         * Messages a session's queue holds before the drop policy applies.
         * @default 20
         */
        cap: z.number().int().positive().optional(),
        /**
         * What the cap drops: `old` (the oldest), `new` (the newcomer), `summarize` (the oldest, leaving
         * a one-line summary for the next turn).
         * @default "summarize"
         */
        drop: z.enum(DROP_POLICIES).optional(),
        /**
         * Let another sender's message join a running turn (its authority then narrows).
         * @default false
         */
        steerAcrossSenders: z.boolean().optional(),
        /** Bounds of `collect` mode. */
        collect: z
          .object({
            /**
             * A burst is handed over at most this long after its first message, however long messages
             * keep coming (the quiet window alone would wait for the user to stop). It does not cut a
             * running turn short: a burst that began during a turn runs when that turn ends.
             * @default none (only the quiet window)
             */
            maxWaitMs: z.number().int().positive().max(3_600_000).optional(),
          })
          .strict()
          .optional(),
        /**
         * How many steering messages held back for a running turn one model call gets: `all` of them,
         * or `one-at-a-time` (the oldest; the next call gets the next, and the tool batch is skipped
         * only while one is held).
         * @default "all"
         */
        steering: z.enum(["all", "one-at-a-time"]).default("all"),
      })
      .strict()
      .default({ byChannel: {}, steering: "all" }),
    /** The finalize-time check that a draft answers the newest user message. */
    staleReplyRecheck: z
      .object({
        /**
         * Re-check a final draft against the newest user message before it is delivered.
         * @default true
         */
        enabled: z.boolean().default(true),
        /**
         * Re-drafts one turn may make; the count resets only with a new turn.
         * @default 1
         */
        maxPasses: nonNegativeInt.default(1),
        /**
         * Regular expressions (case-insensitive) of complaints such as "you didn't answer my question";
         * each is checked for catastrophic backtracking when the config loads.
         * @default the 8 built-in patterns (`DEFAULT_COMPLAINT_PATTERNS`)
         */
        complaintPatterns: z
          .array(z.string().max(500))
          .max(100)
          .default([...DEFAULT_COMPLAINT_PATTERNS]),
        /**
         * The share of content tokens a draft must have in common with the newest user message before
         * the `low-overlap` signal can fire (0 to 1).
         * @default 0.2
         */
        minOverlap: z.number().min(0).max(1).default(0.2),
        /**
         * The gateway author's own detector (a function: only from code, never from a config file);
         * the built-in signals decide when it is absent, throws, times out or returns no verdict.
         * @default undefined (the built-in signals)
         */
        detect: z
          .custom<StaleDetector>((value) => typeof value === "function", {
            message: "a function (facts, { signal }) => verdict",
          })
          .optional(),
        /**
         * How long a re-check waits for `detect`, on the gateway's clock.
         * @default 5000
         */
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
    /** What every model call is given, whichever provider answers it. */
    model: z
      .object({
        /**
         * The system prompt: sent first in every model call, as the provider's own system prompt. It is
         * not part of the transcript, so no window limit or rotation ever drops it.
         * @default none
         */
        instructions: z.string().max(200_000).optional(),
        /**
         * Sampling temperature (0 to 2); a provider with a narrower range is given what it accepts.
         * @default the provider's
         */
        temperature: z.number().min(0).max(2).optional(),
        /**
         * The longest reply one model call may produce, in tokens.
         * @default the provider's
         */
        maxOutputTokens: z.number().int().positive().optional(),
        /**
         * How long a model call may wait for the provider to start answering, and the longest silence
         * inside its stream; past it the call fails with `MODEL_TIMEOUT` (retried while nothing arrived).
         * The whole call stays bounded by `limits.modelTimeoutMs`.
         * @default the provider's (120000 for the built-in ones)
         */
        timeoutMs: z.number().int().positive().max(3_600_000).optional(),
      })
      .strict()
      .default({}),
    /** How finals reach the user. */
    delivery: z
      .object({
        /**
         * `auto`: the gateway sends each final; `message_tool`: a final is private unless the model
         * sent it with the built-in `message` tool.
         * @default "auto"
         */
        visibleReplies: z.enum(["auto", "message_tool"]).default("auto"),
        /**
         * Which acks are sent as visible messages on channels other than `web` (whose page shows every
         * ack): `problems` sends each ack of a message that will never be answered (rejected, dropped by
         * `/stop`, a cap or `/new`) and each control command's ack; `all` every ack; `none` no ack.
         * One value for every channel, or one per channel name (channels not named take `problems`).
         * `true` and `false` are accepted for `all` and `none`.
         * @default "problems"
         */
        visibleAcks: z
          .union([
            ackVisibilityName,
            z.boolean(),
            z.record(z.string(), z.union([ackVisibilityName, z.boolean()])),
          ])
          .transform((value) =>
            typeof value === "object"
              ? Object.fromEntries(Object.entries(value).map(([name, each]) => [name, ackAlias(each)]))
              : ackAlias(value),
          )
          .default("problems"),
        /**
         * When a channel send has not answered by then, its abort signal fires and Tiller waits for it
         * to settle: a receipt that comes later still counts as delivered, never followed by a resend.
         * @default 30000
         */
        sendTimeoutMs: z.number().int().positive().default(30_000),
        /**
         * How long after the abort a send is still waited for. A channel that has not settled by then
         * has an unknown outcome: it is resent only if the channel's `reconcile` says it was not
         * delivered.
         * @default 60000
         */
        sendAbortGraceMs: nonNegativeInt.default(60_000),
        /**
         * Streaming previews on channels that can edit: `edit` sends the first streamed text once and
         * edits it as the model streams, at most every `minIntervalMs`; the final replaces it. `off`
         * sends only the final.
         */
        streaming: z
          .object({
            /**
             * `edit`: previews edited as the model streams (channels with `edit`); `off`: the final only.
             * @default "off"
             */
            mode: z.enum(["off", "edit"]).default("off"),
            /**
             * The shortest time between two edits of a preview.
             * @default 1000
             */
            minIntervalMs: nonNegativeInt.default(1000),
          })
          .strict()
          .default({ mode: "off", minIntervalMs: 1000 }),
        /**
         * Put a reaction on each inbound message for its ack (on channels that can react), instead of
         * sending acks of messages that will be answered as messages.
         * @default false
         */
        ackReactions: z.boolean().default(false),
      })
      .strict()
      .default({
        visibleReplies: "auto",
        visibleAcks: "problems",
        sendTimeoutMs: 30_000,
        sendAbortGraceMs: 60_000,
        streaming: { mode: "off", minIntervalMs: 1000 },
        ackReactions: false,
      }),
    /**
     * The `web` channel of `tiller serve` (its deliveries stream, docs/http.md); `createGateway`
     * ignores it, and a delivery log built in code takes `{ keep }` instead.
     */
    web: z
      .object({
        /**
         * Deliveries kept per session for the deliveries stream: the newest this many are replayed,
         * older ones are pruned from the store (docs/store.md). It must be larger than the deliveries
         * a session can make between a send and its resend after a crash (a few), or that resend is
         * stored, and shown, again.
         * @default 1000
         */
        keepDeliveries: z.number().int().positive().default(1000),
      })
      .strict()
      .default({ keepDeliveries: 1000 }),
    /**
     * The chat platforms `tiller serve` answers on: `telegram` and `slack` (docs/channels.md).
     * @default {}
     */
    channels: channelsSchema.default({}),
    /**
     * Capacity per workload lane (`main`, `cron`, `cron-nested`, `subagent`, any name); 0 pauses a lane,
     * but not `main`: every user turn runs in it, so `main: 0` would accept messages that never run.
     * @default { main: max(8, 4 × CPUs) }
     */
    lanes: z
      .record(z.string(), nonNegativeInt)
      .refine((lanes) => lanes.main !== 0, {
        message:
          "a capacity >= 1 for main (every user turn runs in it; 0 would accept messages that never run)",
        path: ["main"],
      })
      .default({}),
    /**
     * A turn that holds its lane slot longer is aborted; the user is told it ran out of time.
     * @default none (no lane timeout)
     */
    laneTimeoutMs: z.number().positive().optional(),
    /**
     * A task that waits longer for its lane is reported (`lane.waitExceeded`).
     * @default 2000
     */
    warnAfterMs: nonNegativeInt.default(2000),
    /** Inferred follow-ups (scheduling and review). */
    commitments: z
      .object({
        /**
         * Schedule and review inferred follow-ups.
         * @default false
         */
        enabled: z.boolean().default(false),
        /**
         * Follow-ups sent per session per rolling 24 hours.
         * @default 3
         */
        maxPerDay: nonNegativeInt.default(3),
        // Optional, with their defaults applied by the gateway's commitments (docs/commitments.md).
        /**
         * Reviews started per heartbeat tick.
         * @default 3
         */
        maxPerTick: z.number().int().positive().max(1000).optional(),
        /**
         * A pending commitment expires this long after its latest time.
         * @default 259200000 (72 h)
         */
        expireAfterMs: z.number().int().positive().optional(),
        /**
         * A review that has not decided by then counts as unclear.
         * @default 120000
         */
        reviewTimeoutMs: z.number().int().positive().optional(),
        /**
         * Model calls one review may make (read-only tools in between).
         * @default 4
         */
        maxReviewCalls: z.number().int().positive().max(20).optional(),
      })
      .strict()
      .default({ enabled: false, maxPerDay: 3 }),
    /** The clock tick that looks for due work. */
    heartbeat: z
      .object({
        /**
         * How often due commitments are looked for.
         * @default none (no heartbeat)
         */
        everyMs: z.number().positive().optional(),
      })
      .strict()
      .default({}),
    /**
     * A waiting lane entry rises one priority level per this many ms waited; 0 turns aging off.
     * @default 60000
     */
    laneAgingMs: nonNegativeInt.default(60_000),
    /**
     * Turns that run on the gateway's clock, with the trigger `cron`.
     * @default []
     */
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
    /** Bounds that keep one user or one adapter from holding the gateway. */
    limits: z
      .object({
        /**
         * The longest inbound text accepted; a longer one is rejected (`MESSAGE_REJECTED`).
         * @default 32000
         */
        maxMessageChars: z.number().int().positive().default(32_000),
        /**
         * The longest session key accepted (`SESSION_KEY_INVALID` past it).
         * @default 512
         */
        maxSessionKeyChars: z.number().int().positive().default(512),
        /**
         * How long a message id is remembered, so a redelivery is acked `duplicate`.
         * @default 600000
         */
        dedupeWindowMs: z.number().int().positive().default(600_000),
        /**
         * Model calls one turn may make; a model that keeps asking for tools fails the turn
         * (`MODEL_CALL_LIMIT`).
         * @default 25
         */
        maxModelCallsPerTurn: z.number().int().positive().default(25),
        /**
         * A turn that would start with a longer context window first rotates the transcript.
         * @default 2000
         */
        maxWindowRecords: z.number().int().positive().default(2000),
        /**
         * Idle sessions whose actor (and cached context window) stays alive, most recent first: their
         * next message starts a turn without rebuilding them. Older idle sessions keep only a few
         * hundred bytes and are rebuilt on demand. 0 stops every actor as soon as it is idle.
         * @default 1000
         */
        liveIdleSessions: nonNegativeInt.default(1000),
        /**
         * Messages `explain()` can answer for, across sessions: past this, the sessions whose messages
         * were least recently touched are forgotten first (each session keeps its last 500).
         * @default 20000
         */
        explainMessages: nonNegativeInt.default(20_000),
        /**
         * A tool call that has not settled by then is given up: a cancellable tool is cancelled, any
         * other may still be running, and the model is told its outcome is unknown.
         * @default 600000
         */
        toolTimeoutMs: z.number().int().positive().default(600_000),
        /**
         * A model call that has not answered by then is aborted and fails its turn (`MODEL_TIMEOUT`).
         * @default 600000
         */
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

/** The parsed configuration: every key present, defaults filled in. */
export type GatewayConfig = z.output<typeof configSchema>;
/** The configuration a user writes: every key optional (see docs/config.md for keys and defaults). */
export type GatewayConfigInput = z.input<typeof configSchema>;

/** The global queue settings every message carries beside its resolved mode. */
export function queueExtras(config: GatewayConfig): { steerAcrossSenders?: true; collectMaxWaitMs?: number } {
  const maxWaitMs = config.queue.collect?.maxWaitMs;
  return {
    ...(config.queue.steerAcrossSenders ? { steerAcrossSenders: true as const } : {}),
    ...(maxWaitMs !== undefined ? { collectMaxWaitMs: maxWaitMs } : {}),
  };
}

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
  const {
    byChannel,
    steerAcrossSenders: _across,
    collect: _collect,
    steering: _steering,
    ...global
  } = config.queue;
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

/** Every problem of a config at once, each naming its field; the first one is the error's own field. */
function zodToConfigError(error: z.ZodError, raw: unknown, prefix: string): ConfigError {
  const all = error.issues.map((issue) => issueToConfigError(issue, raw, prefix));
  const first = all[0]!;
  if (all.length === 1) return first;
  const combined = new ConfigError(first.field, "", undefined, { cause: error });
  combined.message = `${all.length} problems: ${all.map((problem) => problem.message).join("; ")}`;
  combined.problems = all.map((problem) => ({ field: problem.field, message: problem.message }));
  return combined;
}

function issueToConfigError(issue: z.core.$ZodIssue, raw: unknown, prefix: string): ConfigError {
  const path = issue.path
    .map((part) => (typeof part === "number" ? `[${part}]` : `.${String(part)}`))
    .join("");
  let received: unknown = raw;
  for (const part of issue.path) {
    received =
      received && typeof received === "object" ? (received as Record<PropertyKey, unknown>)[part] : undefined;
  }
  return new ConfigError(`${prefix}${path}`, expectation(issue), received);
}

/** What the field should have been, in words, from a zod issue. */
export function expectation(issue: z.core.$ZodIssue): string {
  switch (issue.code) {
    case "custom":
      return issue.message.replace(/^expected /, "");
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
