import { LaneTimeoutError, LeaseLostError } from "../../errors.js";
import type { Logger } from "../../logger.js";
import type { LaneEntryState } from "../../machines/lane-entry.machine.js";
import type { Clock } from "../../ports/clock.js";
import type { ClusterEntry } from "./cluster-entry.js";
import type { FenceRegistry } from "./fence-registry.js";

export interface GrantedRunsContext {
  clock: Clock;
  fences: FenceRegistry<ClusterEntry>;
  emit(type: string, fields: Record<string, unknown>): void;
  logger: Logger;
  processId: string;
  /**
   * A running entry stopped counting (done, failed, timed out, lease lost): free its row and slot;
   * `clean` when the task ended by itself (its in-flight writes land before the row goes).
   */
  ended(entry: ClusterEntry, clean: boolean): void;
}

/**
 * The tasks this process was granted: runs each inside its fencing token, and ends it once, by its
 * result, its timeout or the loss of its lease (after which a late result is dropped). The same
 * endings as the in-process scheduler's, plus the lease.
 */
export class GrantedRuns {
  constructor(private readonly ctx: GrantedRunsContext) {}

  start(entry: ClusterEntry, generation: number): void {
    const { clock, fences, emit } = this.ctx;
    const fence = entry.fence!;
    entry.state = "running";
    entry.startedInGeneration = generation;
    fences.hold(entry.sessionKey, entry, fence);
    emit("lane.started", {
      lane: entry.lane,
      session: entry.session,
      entryId: entry.id,
      waitedMs: clock.now() - entry.enqueuedAt,
      fence,
    });
    const controller = new AbortController();
    entry.controller = controller;
    if (entry.timeoutMs !== undefined)
      entry.timeoutTimer = clock.setTimeout(() => this.timeOut(entry), entry.timeoutMs);
    let result: unknown;
    try {
      result = entry.task(controller.signal);
    } catch (error) {
      queueMicrotask(() => this.settle(entry, "failed", error));
      return;
    }
    Promise.resolve(result).then(
      (value) => this.settle(entry, "done", value),
      (error: unknown) => this.settle(entry, "failed", error),
    );
  }

  /** The lease is gone (not renewed in time, or reaped): the task must stop, and its writes are refused. */
  loseLease(entry: ClusterEntry): void {
    if (entry.state !== "running") return;
    const { lane, session, id, fence } = entry;
    const error = new LeaseLostError(entry.sessionKey, fence!);
    this.ctx.emit("lane.leaseLost", { lane, session, entryId: id, fence });
    this.ctx.logger.warn({ processId: this.ctx.processId, lane, session, fence }, "lane.leaseLost");
    this.end(entry, "failed");
    entry.controller?.abort(error);
    entry.reject(error);
  }

  private settle(entry: ClusterEntry, outcome: "done" | "failed", value: unknown): void {
    // Timed out and stopped within its grace: it ended by itself, so it unfences and goes cleanly, and
    // its caller learns of the timeout.
    if (entry.state === "running" && entry.stopping) {
      this.ctx.fences.release(entry.sessionKey, entry);
      this.end(entry, "timedOut", true);
      entry.reject(timeoutReason(entry));
      return;
    }
    if (entry.state !== "running") {
      this.ctx.emit("lane.lateResultDropped", {
        lane: entry.lane,
        session: entry.session,
        entryId: entry.id,
      });
      return;
    }
    // Only a run that ended by itself unfences the session: a timed-out or cut-off one stays fenced.
    this.ctx.fences.release(entry.sessionKey, entry);
    this.end(entry, outcome, true);
    if (outcome === "done") entry.resolve(value);
    else entry.reject(value);
  }

  /**
   * The deadline: the task's signal aborts. Without a grace its row goes at once; with one, when the
   * task settles (see settle) or the grace runs out (see abortGraceExceeded), whichever comes first.
   */
  private timeOut(entry: ClusterEntry): void {
    if (entry.state !== "running" || entry.stopping) return;
    const error = new LaneTimeoutError(entry.lane, entry.timeoutMs ?? 0);
    const grace = entry.abortGraceMs;
    this.ctx.emit("lane.timeout", {
      lane: entry.lane,
      session: entry.session,
      entryId: entry.id,
      timeoutMs: entry.timeoutMs,
      ...(grace > 0 ? { abortGraceMs: grace } : {}),
    });
    if (grace > 0) {
      entry.stopping = true;
      entry.timeoutTimer = this.ctx.clock.setTimeout(() => this.abortGraceExceeded(entry), grace);
      entry.controller?.abort(error);
      return;
    }
    this.end(entry, "timedOut");
    entry.controller?.abort(error);
    entry.reject(error);
  }

  /** A timed-out task did not stop within its grace: its row goes anyway (it stays fenced), reported. */
  private abortGraceExceeded(entry: ClusterEntry): void {
    if (entry.state !== "running" || !entry.stopping) return;
    const fields = {
      lane: entry.lane,
      session: entry.session,
      entryId: entry.id,
      timeoutMs: entry.timeoutMs ?? 0,
      abortGraceMs: entry.abortGraceMs,
    };
    this.ctx.emit("lane.abortGraceExceeded", fields);
    this.ctx.logger.warn({ processId: this.ctx.processId, ...fields }, "lane.abortGraceExceeded");
    this.end(entry, "timedOut");
    entry.reject(timeoutReason(entry));
  }

  private end(entry: ClusterEntry, state: LaneEntryState, clean = false): void {
    entry.state = state;
    if (entry.timeoutTimer) this.ctx.clock.clearTimeout(entry.timeoutTimer);
    this.ctx.emit("lane.ended", {
      lane: entry.lane,
      session: entry.session,
      entryId: entry.id,
      status: state,
    });
    this.ctx.ended(entry, clean);
  }
}

/** The LaneTimeoutError the entry's signal was aborted with (a new one if its caller aborted it first). */
function timeoutReason(entry: ClusterEntry): LaneTimeoutError {
  const reason = entry.controller?.signal.reason;
  return reason instanceof LaneTimeoutError ? reason : new LaneTimeoutError(entry.lane, entry.timeoutMs ?? 0);
}
