import { z } from "zod";
import { checkPattern } from "./config/check-pattern.js";
import { commitmentsSchema } from "./config/commitments-config.js";
import { deliverySchema } from "./config/delivery-config.js";
import { laneGroupsSchema } from "./config/lane-groups-config.js";
import { limitsSchema } from "./config/limits-config.js";
import { modelSchema } from "./config/model-config.js";
import { nonNegativeInt } from "./config/non-negative-int.js";
import { queueSchema } from "./config/queue-config.js";
import { staleReplyRecheckSchema } from "./config/recheck-config.js";
import { zodToConfigError } from "./config/zod-to-config-error.js";
import { ConfigError } from "./errors.js";
import { channelsSchema } from "./policy/channels-config.js";
import type { QueueSettings } from "./policy/queue-mode.js";
import { compileCron } from "./policy/schedule-time.js";

export { checkPattern } from "./config/check-pattern.js";
export { expectation } from "./config/zod-to-config-error.js";

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
export const configSchema = z
  .object({
    /** How messages that arrive while a turn runs are routed. */
    queue: queueSchema,
    /** The finalize-time check that a draft answers the newest user message. */
    staleReplyRecheck: staleReplyRecheckSchema,
    /** What every model call is given, whichever provider answers it. */
    model: modelSchema,
    /** How finals reach the user. */
    delivery: deliverySchema,
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
     * After `laneTimeoutMs`, how long an aborted turn may take to stop before its lane slot is freed
     * anyway (reported as `lane.abortGraceExceeded`). Until then the session's next turn waits, so it
     * never overlaps a turn that is still stopping; 0 frees the slot at the timeout.
     * @default 0
     */
    laneAbortGraceMs: nonNegativeInt.default(0),
    /**
     * Capacity groups: `{ <name>: { capacity, lanes: [lane...] } }`. A group caps the turns running at
     * once in its lanes, all lanes together (each lane keeps its own capacity), so cron, subagent and
     * other background work stay under one limit. A lane belongs to at most one group. On PostgreSQL
     * the cap holds across processes (give every process the same groups).
     * @default {}
     */
    laneGroups: laneGroupsSchema.default({}),
    /**
     * A task that waits longer for its lane is reported (`lane.waitExceeded`).
     * @default 2000
     */
    warnAfterMs: nonNegativeInt.default(2000),
    /** Inferred follow-ups (scheduling and review). */
    commitments: commitmentsSchema,
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
    limits: limitsSchema,
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

function strip<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}
