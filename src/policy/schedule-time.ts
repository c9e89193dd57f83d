import { Cron } from "croner";

/** A schedule from config (`schedules[]`): exactly one of `everyMs`, `cron`, `at`. */
export interface ScheduleSpec {
  id: string;
  session: string;
  text: string;
  everyMs?: number | undefined;
  /** A five-field cron expression (minute hour day-of-month month day-of-week). */
  cron?: string | undefined;
  /** One run at this time: ms on the gateway clock, or an ISO 8601 time. */
  at?: number | string | undefined;
  /** IANA time zone the cron expression is read in. @default UTC */
  timezone?: string | undefined;
  /** A run missed while the process was down runs once at start (`false`: it is skipped). @default true */
  catchUp: boolean;
  /** The channel its replies go out on. @default the session's */
  channel?: string | undefined;
}

const crons = new WeakMap<ScheduleSpec, Cron>();

/** The timing a stored state was computed for: a schedule whose timing changed starts afresh. */
export function scheduleSignature(spec: ScheduleSpec): string {
  return JSON.stringify({ everyMs: spec.everyMs, cron: spec.cron, at: spec.at, timezone: spec.timezone });
}

/**
 * The first slot strictly after `after`: an `everyMs` schedule's slots are `anchor + k·everyMs`
 * (k ≥ 1, so the first is one interval after creation), a cron expression's come from croner in the
 * schedule's time zone, and `at` has one slot; null when none is left.
 *
 * @example
 * ```ts
 * nextSlot({ id: "d", session: "s", text: "t", everyMs: 1000, catchUp: true }, 2500, 0); // 3000
 * nextSlot({ id: "c", session: "s", text: "t", cron: "0 * * * *", catchUp: true }, 0, 0); // 3600000
 * ```
 */
export function nextSlot(spec: ScheduleSpec, after: number, anchor: number): number | null {
  if (spec.everyMs !== undefined) {
    const k = after < anchor ? 1 : Math.floor((after - anchor) / spec.everyMs) + 1;
    return anchor + k * spec.everyMs;
  }
  if (spec.cron !== undefined) {
    let cron = crons.get(spec);
    if (!cron) {
      cron = compileCron(spec.cron, spec.timezone);
      crons.set(spec, cron);
    }
    return cron.nextRun(new Date(after))?.getTime() ?? null;
  }
  const at = atTime(spec.at);
  return at !== null && at > after ? at : null;
}

/**
 * The first slot of a schedule created at `now`, strictly after it (a schedule never runs the instant
 * it is created); an `at` already past counts as missed.
 */
export function firstSlot(spec: ScheduleSpec, now: number): number | null {
  if (spec.at !== undefined) return atTime(spec.at);
  return nextSlot(spec, now, now);
}

/** The one slot of an `at` schedule, in ms. */
export function atTime(at: number | string | undefined): number | null {
  if (at === undefined) return null;
  return typeof at === "number" ? at : Date.parse(at);
}

/** A paused croner job: only its pattern is used, never its timers. Throws on a bad expression. */
export function compileCron(expression: string, timezone?: string): Cron {
  const fields = expression.trim().split(/\s+/);
  if (fields.length !== 5) {
    throw new Error(`expected five fields (minute hour day month weekday), got ${fields.length}`);
  }
  return new Cron(expression, { paused: true, ...(timezone ? { timezone } : {}) });
}
