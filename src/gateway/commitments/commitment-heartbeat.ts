import { type Actor, createActor, type InspectionEvent } from "xstate";
import type { ActorDeps } from "../../actors/deps.js";
import { errorMessage } from "../../errors.js";
import type { commitmentMachine } from "../../machines/commitment.machine.js";
import type { Commitment, CommitmentOutput } from "../../machines/commitment.types.js";
import { retryDelay } from "../../policy/commitment-review.js";
import type { TimerHandle } from "../../ports/clock.js";
import type { CommitmentBook } from "./commitment-book.js";

type ProvidedMachine = typeof commitmentMachine;

export interface HeartbeatSettings {
  everyMs: number;
  maxPerTick: number;
  maxPerDay: number;
  /**
   * Settles a send another process cut off (it died between the send intent and the receipt), once
   * the store lets this process claim it; called on a shared store at every tick.
   */
  settleCutOff?: (id: string) => Promise<void>;
  /** XState inspection of every commitment actor. */
  inspect?: (event: InspectionEvent) => void;
}

/**
 * The commitments' heartbeat: ticks on the gateway's clock every `heartbeat.everyMs` (only when
 * something is due by then: a tick with nothing due is skipped), takes at most `maxPerTick` due
 * commitments from the index, all on one route (the channel of the first one's session; the others wait
 * for a later tick) and none of a session that used its `maxPerDay` sends (it waits until one leaves
 * the rolling 24 h). Each one taken gets an actor of the commitment machine, run inside the session's
 * lane at background priority, so its review never runs beside a user turn of that session; when the
 * actor ends or waits to retry, the outcome is stored and the actor stopped.
 *
 * On a store several processes share (one with `claimCommitment`), every tick first takes in what the
 * others stored (what changed since the last tick, on a store with a change feed), and a review starts
 * only once this process claimed the commitment in the store, so each is reviewed and sent by one
 * process cluster-wide (docs/postgres.md). The claim also counts the session's sends and sends in flight
 * across the cluster against `maxPerDay`: a commitment refused for it waits until the quota frees.
 */
export class CommitmentHeartbeat {
  private timer: TimerHandle | undefined;
  private timerAt = Number.POSITIVE_INFINITY;
  private readonly startedAt: number;
  private stopped = false;
  readonly actors = new Map<string, Actor<ProvidedMachine>>();
  /** Taken at a tick, but another process holds its claim (or the claim failed): nothing to store. */
  private readonly unclaimed = new Set<string>();

  constructor(
    private readonly deps: ActorDeps,
    private readonly book: CommitmentBook,
    private readonly machine: ProvidedMachine,
    private readonly settings: HeartbeatSettings,
  ) {
    this.startedAt = deps.clock.now();
  }

  /** Arms the timer for the first tick at or after the earliest due time (earlier than any armed). */
  arm(): void {
    if (this.stopped) return;
    // On a shared store another process may add or retry one at any time: tick every period.
    const due = this.book.isShared ? this.deps.clock.now() + 1 : this.book.index.nextDueAt();
    if (due === undefined) return;
    const at = this.tickAtOrAfter(Math.max(due, this.deps.clock.now() + 1));
    if (at >= this.timerAt) return;
    if (this.timer) this.deps.clock.clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = this.deps.clock.setTimeout(() => {
      this.timer = undefined;
      this.timerAt = Number.POSITIVE_INFINITY;
      if (!this.book.isShared) {
        this.tick();
        this.arm();
        return;
      }
      // First what the other processes stored since the last tick, then the tick on it.
      void this.book
        .refresh()
        .catch((error: unknown) =>
          this.deps.logger.warn({ error: errorMessage(error) }, "commitment.refreshFailed"),
        )
        .then(() => this.settleCutOffs())
        .then(() => {
          if (this.stopped) return;
          this.tick();
          this.arm();
        });
    }, at - this.deps.clock.now());
  }

  /** Sends cut off on another process (or on this one before a restart), none of them running here. */
  private async settleCutOffs(): Promise<void> {
    const settle = this.settings.settleCutOff;
    if (!settle) return;
    for (const id of [...this.book.sending]) {
      if (this.stopped) return;
      if (this.actors.has(id)) continue;
      await settle(id).catch((error: unknown) =>
        this.deps.logger.warn({ id, error: errorMessage(error) }, "commitment.settleFailed"),
      );
    }
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) this.deps.clock.clearTimeout(this.timer);
    for (const actor of this.actors.values()) actor.stop();
    this.actors.clear();
  }

  /** One tick: takes what is due and starts each in its session's lane. Returns the ids taken. */
  tick(): string[] {
    const now = this.deps.clock.now();
    const postponed: Array<[string, number]> = [];
    let route: string | undefined;
    const taken = this.book.index.takeDue(now, this.settings.maxPerTick, (id) => {
      const commitment = this.book.get(id);
      if (commitment?.status !== "pending" || this.actors.has(id)) return false;
      if (this.book.sentInWindow(commitment.session, now) >= this.settings.maxPerDay) {
        postponed.push([id, this.book.quotaFreesAt(commitment.session, now)]);
        return false;
      }
      const channel = this.deps.channelFor(commitment.session).name;
      route ??= channel;
      return channel === route;
    });
    for (const [id, at] of postponed) this.book.index.schedule(id, at);
    this.deps.emit("heartbeat.ticked", { due: taken.length, pending: this.book.index.size });
    for (const id of taken) this.start(this.book.get(id)!);
    return taken;
  }

  /** Where the next tick would fall for a commitment due at `at`. */
  private tickAtOrAfter(at: number): number {
    const every = this.settings.everyMs;
    return this.startedAt + Math.ceil((at - this.startedAt) / every) * every;
  }

  private start(commitment: Commitment): void {
    const { session, id } = commitment;
    const actor = createActor(this.machine, {
      input: {
        commitment,
        now: this.deps.clock.now(),
        maxPerDay: this.settings.maxPerDay,
        sentInWindow: this.book.sentInWindow(session, this.deps.clock.now()),
      },
      ...(this.settings.inspect ? { inspect: this.settings.inspect } : {}),
    });
    this.actors.set(id, actor);
    actor.on("*", (event) => this.deps.emit(event.type, { ...event, session }));
    const ended = new Promise<void>((resolve) => {
      actor.subscribe({
        next: (snapshot) => {
          if (snapshot.status === "done" || snapshot.matches("waitingToRetry")) resolve();
        },
        error: () => resolve(),
        complete: () => resolve(),
      });
    });
    this.deps.lanes
      .run({ session, lane: "main", priority: "background" }, async () => {
        // Dismissed while it waited for the lane: nothing to review.
        if (this.stopped || this.book.get(id)?.status !== "pending") return;
        // Several processes on one store: only the one that claims it reviews it (once cluster-wide).
        if (
          this.book.isShared &&
          (!(await this.claimed(id)) || this.stopped || this.book.get(id)?.status !== "pending")
        )
          return;
        if (await this.dismissedAsDuplicate(id)) return;
        actor.start();
        actor.send({
          type: "commitment.due",
          now: this.deps.clock.now(),
          sentInWindow: this.book.sentInWindow(session, this.deps.clock.now()),
        });
        await ended;
      })
      .then(
        () => this.settle(actor, id),
        (error: unknown) => {
          // The lane refused (draining, cleared): it stays pending for the next tick.
          this.deps.emit("commitment.deferred", { session, id, reason: errorMessage(error) });
          this.finish(id, actor);
          if (this.book.get(id)?.status === "pending") this.book.index.schedule(id, this.deps.clock.now());
          this.arm();
        },
      );
  }

  /** A duplicate of another commitment of its dedupeKey (`book.duplicateOf`) is dismissed, never reviewed. */
  private async dismissedAsDuplicate(id: string): Promise<boolean> {
    const original = this.book.duplicateOf(id);
    if (!original) return false;
    const now = this.deps.clock.now();
    const dismissed = await this.book.update(id, (current) =>
      current?.status === "pending" && !current.sending
        ? { ...current, status: "dismissed", dismissedWhy: "duplicate", updatedAt: now, endedAt: now }
        : undefined,
    );
    if (dismissed.status !== "dismissed") return false;
    this.deps.emit("commitment.dismissed", {
      session: dismissed.session,
      id,
      why: "duplicate",
      duplicateOf: original.id,
    });
    return true;
  }

  private async claimed(id: string): Promise<boolean> {
    try {
      const now = this.deps.clock.now();
      // One past its window only expires (nothing is sent): no quota to wait for.
      const expired = now >= (this.book.get(id)?.expiresAt ?? Number.POSITIVE_INFINITY);
      const claim = await this.book.claim(id, now, expired ? undefined : this.settings.maxPerDay);
      if (claim.claimed) return true;
      const commitment = this.book.get(id);
      if (claim.quotaFreesAt !== undefined && commitment?.status === "pending") {
        // Other processes sent (or are sending) the session's daily follow-ups: wait for the quota.
        this.book.index.schedule(id, Math.max(now, claim.quotaFreesAt));
        this.deps.emit("commitment.deferred", {
          session: commitment.session,
          id,
          reason: "maxPerDay reached across the cluster (sent and in flight)",
        });
      }
    } catch (error) {
      this.deps.logger.warn({ id, error: errorMessage(error) }, "commitment.claimFailed");
      // Not adopted from the store: try it again at the next tick.
      if (this.book.get(id)?.status === "pending") this.book.index.schedule(id, this.deps.clock.now());
    }
    this.unclaimed.add(id);
    return false;
  }

  private async settle(actor: Actor<ProvidedMachine>, id: string): Promise<void> {
    // Not ours to review: memory holds the stored version (due again when the claimer leaves it).
    if (this.unclaimed.delete(id)) {
      this.finish(id, actor);
      this.arm();
      return;
    }
    // Stopping (the gateway stops): whatever was under way stays pending in the store, to be
    // reviewed again at the next start; nothing is written after the store may have closed.
    if (this.stopped) {
      this.finish(id, actor);
      return;
    }
    const snapshot = actor.getSnapshot();
    const now = this.deps.clock.now();
    const context = snapshot.context;
    const output = (snapshot.output ?? {
      retry: context.retry,
      classification: context.classification,
      why: context.why,
      text: context.text,
    }) as CommitmentOutput;
    const state = snapshot.matches("waitingToRetry") ? "waitingToRetry" : String(snapshot.value);
    try {
      await this.book.update(id, (current) => {
        if (current?.status !== "pending") return undefined;
        const classification = output.classification ?? current.classification;
        const base = { ...current, updatedAt: now, ...(classification ? { classification } : {}) };
        if (state === "dismissed")
          return { ...base, status: "dismissed", dismissedWhy: output.why, endedAt: now };
        if (state === "expired") return { ...base, status: "expired", endedAt: now };
        if (state === "sent") return undefined; // stored by the send itself
        // Not started, or cut off on its way: due again at the next tick, no attempt counted.
        if (state !== "waitingToRetry") return { ...base, dueAt: now };
        return this.retried(base, output.retry, now);
      });
    } catch (error) {
      // Not stored: it is still pending in the store, so the next start reviews it again.
      this.deps.logger.error({ id, error: errorMessage(error) }, "commitment.storeFailed");
      this.deps.emit("commitment.storeFailed", { id, error: errorMessage(error) });
      const current = this.book.get(id);
      if (current?.status === "pending") this.book.index.schedule(id, now + this.settings.everyMs);
    }
    this.finish(id, actor);
    this.arm();
  }

  private retried(commitment: Commitment, retry: CommitmentOutput["retry"], now: number): Commitment {
    if (retry === "nextTick") return { ...commitment, dueAt: now };
    if (retry === "quota")
      return {
        ...commitment,
        dueAt: Math.min(Math.max(now, this.book.quotaFreesAt(commitment.session, now)), commitment.expiresAt),
      };
    const attempts = commitment.attempts + 1;
    const dueAt = Math.min(now + retryDelay(attempts, this.settings.everyMs), commitment.expiresAt);
    return { ...commitment, attempts, dueAt };
  }

  private finish(id: string, actor: Actor<ProvidedMachine>): void {
    actor.stop();
    if (this.actors.get(id) === actor) this.actors.delete(id);
  }
}
