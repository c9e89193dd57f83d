import { type AnyActorRef, createActor, type InspectionEvent } from "xstate";
import type { TranscriptWriter } from "../../adapters/transcript-writer.js";
import type { GatewayConfig } from "../../config.js";
import { type EmitEvent, forwardedEvent, type TillerEvent } from "../../events.js";
import type { Logger } from "../../logger.js";
import type { RunEmitted } from "../../machines/run.types.js";
import type { SessionActorRef, sessionMachine } from "../../machines/session.machine.js";
import type { SessionInput } from "../../machines/session.types.js";
import type { Clock, TimerHandle } from "../../ports/clock.js";
import { SeenIds } from "./seen-ids.js";
import { SETTLED, type SessionMemory, type SessionPersistence } from "./session-persistence.js";

export interface SessionRegistryDeps {
  config: GatewayConfig;
  clock: Clock;
  logger: Logger;
  writer: TranscriptWriter;
  persistence: SessionPersistence;
  /** The session machine with the gateway's actors provided. */
  machine: typeof sessionMachine;
  inspect?: ((event: InspectionEvent) => void) | undefined;
  emit: EmitEvent;
  /** Publishes a complete event (the machines' emitted events, stamped with their session). */
  publish(event: TillerEvent): void;
  /** The session has nothing running or waiting (a cluster process then gives it up). */
  onIdle?(key: string): void;
}

/**
 * The gateway's sessions: a small memory per key for as long as the process runs, and an actor only
 * while the session is busy or was idle recently. Actors are registered here rather than spawned under
 * one parent, so thousands of sessions never make a parent copy its children map on every spawn.
 * Up to `limits.liveIdleSessions` idle actors stay alive (least recently used retired first), with their
 * context windows cached by the writer, so a returning user's turn starts without rebuilding anything.
 *
 * @example
 * ```ts
 * const registry = new SessionRegistry({ config, clock, logger, writer, persistence, machine, emit, publish });
 * const entry = registry.memory("telegram:42", "telegram");
 * registry.actor("telegram:42", entry).send({ type: "session.stop" });
 * ```
 */
export class SessionRegistry {
  private readonly entries = new Map<string, SessionMemory>();
  /** Idle sessions whose actor is kept alive, least recently used first (a Map keeps insertion order). */
  private readonly liveIdle = new Map<string, SessionMemory>();

  constructor(private readonly deps: SessionRegistryDeps) {}

  get(key: string): SessionMemory | undefined {
    return this.entries.get(key);
  }

  /** Every session key this process has seen, live or not. */
  keys(): IterableIterator<string> {
    return this.entries.keys();
  }

  /** Sessions that have an actor now. */
  *live(): Generator<[string, SessionMemory]> {
    for (const pair of this.entries) if (pair[1].actor) yield pair;
  }

  /** The session's memory, created on first sight. */
  memory(key: string, channel: string): SessionMemory {
    let entry = this.entries.get(key);
    if (!entry) {
      entry = {
        actor: null,
        subscription: null,
        channel,
        override: null,
        seen: new SeenIds(),
        turnSeq: 0,
        savedFrom: null,
        savedEmpty: true,
        saving: SETTLED,
      };
      this.entries.set(key, entry);
    }
    return entry;
  }

  /** The session's actor, started from its memory (and a restored state after a restart) if needed. */
  actor(key: string, entry: SessionMemory, restored?: SessionInput["restored"]): SessionActorRef {
    if (entry.actor) {
      this.liveIdle.delete(key);
      return entry.actor;
    }
    const { clock, emit, persistence, publish } = this.deps;
    this.deps.writer.keepWindow(key, true);
    const actor = createActor(this.deps.machine, {
      input: { key, turnSeq: entry.turnSeq, ...(restored ? { restored } : {}) },
      // Delayed transitions (the collect window) run on the gateway's clock, simulated or not.
      clock: {
        setTimeout: (callback: () => void, ms: number) => clock.setTimeout(callback, ms),
        clearTimeout: (handle: unknown) => clock.clearTimeout(handle as TimerHandle),
      },
      id: `session:${key}`,
      ...(this.deps.inspect ? { inspect: this.deps.inspect } : {}),
    });
    const watched = new WeakSet<AnyActorRef>();
    actor.on("*", (event) => publish(forwardedEvent(event, clock.now(), { session: key })));
    entry.subscription = actor.subscribe({
      next: (snapshot) => {
        const run = snapshot.children.run as AnyActorRef | undefined;
        if (run && !watched.has(run)) {
          watched.add(run);
          const runId = snapshot.context.runId ?? undefined;
          run.on("*", (event: RunEmitted) =>
            publish(forwardedEvent(event, clock.now(), { session: key, runId })),
          );
        }
        persistence.persist(key, entry, snapshot);
        if (snapshot.value === "idle" && snapshot.context.queue.length === 0) {
          this.rest(key, entry);
          this.deps.onIdle?.(key);
        }
      },
      error: (error) => {
        this.deps.logger.error({ session: key, error: String(error) }, "session.crashed");
        emit("session.crashed", { session: key, error: String(error) });
      },
    });
    entry.actor = actor;
    actor.start();
    return actor;
  }

  /** Keeps the session's window cached while it is being looked at, or lets it go if no actor runs. */
  keepWindow(key: string, entry: SessionMemory, keep: boolean): void {
    if (!entry.actor) this.deps.writer.keepWindow(key, keep);
  }

  /** Stops the session's actor (another process ran it meanwhile: the store is the truth again). */
  stop(key: string): void {
    const entry = this.entries.get(key);
    this.liveIdle.delete(key);
    if (entry) this.stopActor(key, entry);
  }

  /** Stops every actor (the gateway is stopping); the memories stay. */
  stopAll(): void {
    this.liveIdle.clear();
    for (const [key, entry] of this.entries) this.stopActor(key, entry);
  }

  /**
   * Resolves once every session's newest state is durable: the state a turn's end (or a stop) left
   * unsaved is saved now, and saves already on their way have landed. `stop()` waits for it before
   * closing the store, else the last save would meet a closed store.
   */
  async settled(): Promise<void> {
    for (const [key, entry] of this.entries) this.deps.persistence.flush(key, entry);
    await Promise.all([...this.entries.values()].map((entry) => entry.saving));
  }

  /** An idle session joins the live-idle set; past the limit the least recently used one retires. */
  private rest(key: string, entry: SessionMemory): void {
    this.liveIdle.delete(key);
    this.liveIdle.set(key, entry);
    while (this.liveIdle.size > this.deps.config.limits.liveIdleSessions) {
      const [oldestKey, oldest] = this.liveIdle.entries().next().value as [string, SessionMemory];
      this.liveIdle.delete(oldestKey);
      this.retire(oldestKey, oldest);
    }
  }

  /** A retired session keeps only its small memory; the actor is stopped (after the current step). */
  private retire(key: string, entry: SessionMemory): void {
    queueMicrotask(() => {
      const actor = entry.actor;
      if (!actor || this.liveIdle.has(key)) return;
      const snapshot = actor.getSnapshot();
      if (snapshot.value !== "idle" || snapshot.context.queue.length > 0) return;
      entry.turnSeq = snapshot.context.turnSeq;
      this.stopActor(key, entry);
    });
  }

  /** Stops the session's actor and lets its cached window go; its memory stays. */
  private stopActor(key: string, entry: SessionMemory): void {
    entry.subscription?.unsubscribe();
    entry.actor?.stop();
    entry.actor = null;
    entry.subscription = null;
    this.deps.persistence.compact(entry);
    this.deps.writer.keepWindow(key, false);
  }
}
