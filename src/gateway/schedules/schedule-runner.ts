import { errorMessage } from "../../errors.js";
import type { Logger } from "../../logger.js";
import { firstSlot, nextSlot, type ScheduleSpec, scheduleSignature } from "../../policy/schedule-time.js";
import type { Clock, TimerHandle } from "../../ports/clock.js";
import type { ScheduleState, TranscriptStore } from "../../ports/store.js";
import type { TriggerAck, TriggerRequest } from "../inbound/trigger.js";
import { isMessageStored } from "../sessions/stored-message.js";
import { ScheduleHeap } from "./schedule-heap.js";

/** One schedule as `gateway.schedules.list()` shows it. */
export interface ScheduleView {
  id: string;
  session: string;
  kind: "everyMs" | "cron" | "at";
  /** The expression or interval, as configured. */
  timing: string | number;
  timezone?: string;
  catchUp: boolean;
  nextRunAt: number | null;
  /** The slot that ran last. */
  lastRunAt?: number;
  /**
   * What the last run's trigger said (`started`, `queued`, `dropped`, `duplicate`, `rejected`; `accepted`
   * for a slot a restart found accepted before a crash), and why when the ack gave a reason.
   */
  lastDisposition?: string;
  lastReason?: string;
}

/** The trigger id of a schedule's slot: a repeat of the same slot is a duplicate, never a second turn. */
export function slotMessageId(schedule: string, slot: number): string {
  return `schedule:${schedule}:${slot}`;
}

export interface ScheduleRunnerDeps {
  schedules: readonly ScheduleSpec[];
  clock: Clock;
  store: TranscriptStore;
  logger: Logger;
  trigger(request: TriggerRequest): Promise<TriggerAck>;
  emit(type: string, fields: Record<string, unknown>): void;
}

/**
 * Runs the config's schedules on the gateway's clock. Each schedule's next run time is durable in the
 * store: after a restart a slot that came while the process was down runs once at start (or is skipped
 * with `catchUp: false`), and a slot is never run twice: before its trigger the slot is saved as
 * `pending` (the intent), after it as done; a start that finds an intent without its outcome looks for
 * the slot's message (`schedule:<id>:<slot>`) in the store and either counts it as accepted or triggers
 * it once, whatever the dedupe window. One timer is armed for the earliest slot; a tick takes only the
 * due schedules off a heap.
 *
 * @example
 * ```ts
 * const runner = new ScheduleRunner({ schedules, clock, store, logger, trigger, emit });
 * await runner.start();
 * runner.list(); // [{ id: "digest", nextRunAt: 1767261600000, ... }]
 * ```
 */
export class ScheduleRunner {
  private readonly specs = new Map<string, ScheduleSpec>();
  private readonly states = new Map<string, ScheduleState>();
  private readonly heap = new ScheduleHeap();
  private timer: TimerHandle | null = null;
  private armedFor = Number.POSITIVE_INFINITY;
  private stopped = false;
  /** Slots between their timer and their saved outcome: real store I/O a simulated clock must wait for. */
  private inFlight = 0;

  constructor(private readonly deps: ScheduleRunnerDeps) {
    for (const spec of deps.schedules) this.specs.set(spec.id, spec);
  }

  /** Loads the durable states, runs (or skips) what was missed, and arms the timer. */
  async start(): Promise<void> {
    const stored = (await this.deps.store.loadSchedules?.()) ?? {};
    const now = this.deps.clock.now();
    const missed: Array<[ScheduleSpec, number]> = [];
    const interrupted: Array<[ScheduleSpec, number]> = [];
    for (const spec of this.specs.values()) {
      const saved = stored[spec.id];
      const signature = scheduleSignature(spec);
      let state: ScheduleState;
      let pending: number | undefined;
      if (saved && saved.spec === signature) {
        ({ pending, ...state } = saved);
      } else {
        state = { nextRunAt: firstSlot(spec, now), anchor: now, spec: signature };
        await this.save(spec.id, state);
      }
      this.states.set(spec.id, state);
      // A slot a crash cut off is settled first; settling it arms the schedule's next slot.
      if (pending !== undefined) interrupted.push([spec, pending]);
      else if (state.nextRunAt !== null && state.nextRunAt <= now) missed.push([spec, state.nextRunAt]);
      else if (state.nextRunAt !== null) this.heap.push({ id: spec.id, at: state.nextRunAt });
    }
    for (const [spec, slot] of interrupted) await this.settle(spec, slot, now);
    for (const [spec, slot] of missed) {
      if (spec.catchUp) await this.fire(spec, slot, now, "missed");
      else {
        this.deps.emit("schedule.skipped", { schedule: spec.id, session: spec.session, slot });
        await this.advance(spec, slot, now, {
          disposition: "skipped",
          reason: "missed while down (catchUp: false)",
        });
      }
    }
    this.arm();
  }

  /** True while a slot is being run or saved (its store writes are real I/O, even on a simulated clock). */
  get isBusy(): boolean {
    return this.inFlight > 0;
  }

  /** Draining or stopping: no slot runs until `resume()` (a slot that came meanwhile runs then, once). */
  stop(): void {
    this.stopped = true;
    if (this.timer) this.deps.clock.clearTimeout(this.timer);
    this.timer = null;
    this.armedFor = Number.POSITIVE_INFINITY;
  }

  resume(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.tick();
  }

  list(): ScheduleView[] {
    return [...this.specs.values()].map((spec) => {
      const state = this.states.get(spec.id);
      const kind = spec.everyMs !== undefined ? "everyMs" : spec.cron !== undefined ? "cron" : "at";
      return {
        id: spec.id,
        session: spec.session,
        kind,
        timing: spec.everyMs ?? spec.cron ?? spec.at ?? "",
        ...(spec.timezone ? { timezone: spec.timezone } : {}),
        catchUp: spec.catchUp,
        nextRunAt: state?.nextRunAt ?? null,
        ...(state?.lastRunAt !== undefined ? { lastRunAt: state.lastRunAt } : {}),
        ...(state?.lastDisposition ? { lastDisposition: state.lastDisposition } : {}),
        ...(state?.lastReason ? { lastReason: state.lastReason } : {}),
      };
    });
  }

  /** One timer, for the earliest slot only: ten thousand schedules cost one timer. */
  private arm(): void {
    if (this.stopped) return;
    const first = this.heap.peek();
    if (!first) return;
    if (this.timer && first.at >= this.armedFor) return;
    if (this.timer) this.deps.clock.clearTimeout(this.timer);
    this.armedFor = first.at;
    this.timer = this.deps.clock.setTimeout(
      () => {
        this.timer = null;
        this.armedFor = Number.POSITIVE_INFINITY;
        this.tick();
      },
      Math.max(0, first.at - this.deps.clock.now()),
    );
  }

  /** Takes every due schedule off the heap and runs it; the rest are not looked at. */
  private tick(): void {
    const now = this.deps.clock.now();
    for (let top = this.heap.peek(); top && top.at <= now; top = this.heap.peek()) {
      this.heap.pop();
      const spec = this.specs.get(top.id);
      if (spec) void this.fire(spec, top.at, now, "due");
    }
    this.arm();
  }

  /**
   * A slot whose intent was saved but not its outcome (the process died in between): when the store
   * holds its message, the trigger was accepted and its turn resumes on its own, so the slot only
   * advances; otherwise the trigger never got through and runs now, once.
   */
  private async settle(spec: ScheduleSpec, slot: number, now: number): Promise<void> {
    const messageId = slotMessageId(spec.id, slot);
    let stored = false;
    try {
      stored = await isMessageStored(this.deps.store, spec.session, messageId);
    } catch (error) {
      // Unreadable: triggering again is safe within the dedupe window and runs the slot at least once.
      this.deps.logger.warn({ schedule: spec.id, error: errorMessage(error) }, "schedule.settleFailed");
    }
    if (!stored) return this.fire(spec, slot, now, "interrupted");
    this.deps.emit("schedule.recovered", { schedule: spec.id, session: spec.session, slot, messageId });
    await this.advance(spec, slot, now, { disposition: "accepted" });
  }

  private async fire(
    spec: ScheduleSpec,
    slot: number,
    now: number,
    why: "due" | "missed" | "interrupted",
  ): Promise<void> {
    this.inFlight += 1;
    try {
      await this.runSlot(spec, slot, now, why);
    } finally {
      this.inFlight -= 1;
    }
  }

  private async runSlot(
    spec: ScheduleSpec,
    slot: number,
    now: number,
    why: "due" | "missed" | "interrupted",
  ): Promise<void> {
    let outcome: { disposition: string; reason?: string };
    const current = this.states.get(spec.id);
    // The intent, durable before the trigger: a crash after this line leaves a slot the next start settles.
    if (current) await this.save(spec.id, { ...current, pending: slot });
    try {
      const ack = await this.deps.trigger({
        session: spec.session,
        trigger: "cron",
        text: spec.text,
        id: slotMessageId(spec.id, slot),
        ...(spec.channel ? { channel: spec.channel } : {}),
      });
      const disposition = ack.disposition;
      outcome = { disposition, ...(ack.reason ? { reason: ack.reason } : {}) };
      this.deps.emit("schedule.ran", {
        schedule: spec.id,
        session: spec.session,
        slot,
        why,
        disposition,
        messageId: ack.messageId,
      });
    } catch (error) {
      outcome = { disposition: "rejected", reason: errorMessage(error) };
      this.deps.logger.warn({ schedule: spec.id, error: errorMessage(error) }, "schedule.failed");
      this.deps.emit("schedule.failed", {
        schedule: spec.id,
        session: spec.session,
        slot,
        error: errorMessage(error),
      });
    }
    await this.advance(spec, slot, now, outcome);
  }

  /** Saves the next slot after this one (after `now`: missed slots run once, not once each). */
  private async advance(
    spec: ScheduleSpec,
    slot: number,
    now: number,
    outcome?: { disposition: string; reason?: string },
  ): Promise<void> {
    const previous = this.states.get(spec.id);
    const anchor = previous?.anchor ?? now;
    const next = nextSlot(spec, Math.max(slot, now), anchor);
    const state: ScheduleState = {
      nextRunAt: next,
      lastRunAt: slot,
      anchor,
      spec: scheduleSignature(spec),
      ...(outcome ? { lastDisposition: outcome.disposition } : {}),
      ...(outcome?.reason ? { lastReason: outcome.reason } : {}),
    };
    this.states.set(spec.id, state);
    if (next !== null) {
      this.heap.push({ id: spec.id, at: next });
      this.arm();
    }
    await this.save(spec.id, state);
  }

  private async save(id: string, state: ScheduleState): Promise<void> {
    try {
      await this.deps.store.saveSchedule?.(id, state);
    } catch (error) {
      this.deps.logger.error({ schedule: id, error: errorMessage(error) }, "schedule.saveFailed");
      this.deps.emit("schedule.saveFailed", { schedule: id, error: errorMessage(error) });
    }
  }
}
