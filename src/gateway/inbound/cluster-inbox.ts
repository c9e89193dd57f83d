import { KeyedQueue } from "../../adapters/keyed-queue.js";
import { queueLayers } from "../../config.js";
import { parseControl } from "../../policy/control.js";
import { parseQueueMode, resolveQueueSetting } from "../../policy/queue-mode.js";
import type { InboxEntry, InboxMessage } from "../../ports/session-cluster.js";
import { AppliedAcks } from "./applied-acks.js";
import { applyInboxEntry, TRIGGER_MODE } from "./apply-inbox-entry.js";
import type { ClusterInbox, ClusterInboxDeps } from "./cluster-inbox.types.js";
import type { Ack } from "./compose-ack.js";
import { IdleHolds } from "./idle-holds.js";
import {
  checkTrigger,
  type TriggerAck,
  type TriggerExtras,
  type TriggerRequest,
  triggerAckOf,
} from "./trigger.js";
import { type InboundMessage, validateInbound } from "./validate-inbound.js";

export type { ClusterInbox, ClusterInboxDeps } from "./cluster-inbox.types.js";

/**
 * `receive()` for a gateway of several processes (docs/postgres.md): the message is committed to the
 * cluster's inbox first (a duplicate id is a duplicate cluster-wide), then applied by the session's
 * owner as a local message of its mode: here when this process owns the session (or becomes its
 * owner), else by the owner, which is woken and whose ack comes back. An owner that does not answer in
 * time leaves the message queued durably for the session. The machines do not change.
 *
 * Everything a process does for one session (apply, take over, give up) runs one step at a time, in
 * inbox order.
 */
export function createClusterInbox(deps: ClusterInboxDeps): ClusterInbox {
  const { cluster, config, emit } = deps;
  const steps = new KeyedQueue();
  // Messages of one session are committed to the inbox in the order receive() was called here, so
  // the inbox (and every owner that applies it) keeps this process's order.
  const accepts = new KeyedQueue();
  const unsubscribe: Array<() => void> = [];
  /** Inbox ids of the subagent tasks this process started, whose tools wait for them here. */
  const children = new Set<string>();
  const serial = <T>(session: string, work: () => Promise<T>) => steps.run(session, work);
  /** Acks of rows this process received and applied, until its receive() takes them. */
  const appliedHere = new AppliedAcks();
  /** Per session, the rows this process accepted whose own apply step has not ended yet. */
  const applying = new Map<string, Set<string>>();
  /** Apply steps that failed so far: a row accepted behind one may no longer be applied as it is. */
  let applyFailures = 0;

  /**
   * Applies the session's waiting messages in order (`only`: that one, known to be the only one);
   * returns the acks by inbox id.
   */
  async function drainNow(session: string, only?: InboxEntry): Promise<Map<string, Ack | TriggerAck>> {
    const acks = new Map<string, Ack | TriggerAck>();
    // A draining process applies nothing more: its sessions go to whoever takes them when it stops.
    if (deps.isDraining()) return acks;
    const waiting = only ? [only] : await cluster.waiting(session);
    // Rows wait for this process, so it owns the session again: what it forgot comes from the store.
    if (waiting.length > 0 && forgotten.has(session)) await adopt(session);
    for (const entry of waiting) {
      // Lost meanwhile: the rest waits in the inbox for the session's new owner.
      if (forgotten.has(session)) break;
      // Applied by an earlier attempt whose state could not be stored: not applied twice.
      const ack = unrecorded.get(entry.id) ?? (await applyOne(entry));
      if (forgotten.has(session)) {
        // Lost while it was applied: what it started here goes, and the row waits for the new owner.
        deps.forgetLive(session);
        throw new Error(`session ${session}: its ownership was lost while a message was applied`);
      }
      if ((ack as Ack).durable === false) {
        // The row is marked applied only once the state holding the message is durable; until then
        // it stays in the inbox (a process that takes the session over applies it).
        unrecorded.set(entry.id, ack);
        await deps.settle(session);
      }
      unrecorded.delete(entry.id);
      acks.set(entry.id, ack);
      // A message the session turned away may be sent again: only the receiver here can say so.
      if (ack.disposition === "rejected" && entry.receivedBy === cluster.processId)
        await cluster.forget(entry.id);
      else {
        await cluster.applied(entry, ack);
        if (entry.receivedBy === cluster.processId) appliedHere.remember(entry.id, ack);
      }
    }
    return acks;
  }

  const applyOne = (entry: InboxEntry) => applyInboxEntry(entry, deps, children);

  const holds = new IdleHolds(cluster.idleHoldMs ?? 0);

  /**
   * Gives the session up once nothing runs here and its state is durable (and, with a hold, once it
   * has been idle that long: `held`); applies late arrivals.
   */
  async function releaseIfIdle(session: string, held = false): Promise<void> {
    holds.cancel(session);
    if (holds.holdMs > 0 && !held) {
      if (stopped || deps.isDraining() || !deps.isIdle(session) || forgotten.has(session)) return;
      holds.hold(session, () => step(session, "giving a session up", () => releaseIfIdle(session, true)));
      return;
    }
    for (;;) {
      // A draining process keeps its sessions until it stops (stopping gives them all up).
      if (deps.isDraining() || !deps.isIdle(session)) return;
      await deps.settle(session);
      if (!deps.isIdle(session)) return;
      if (await cluster.release(session)) {
        // Another process may run it next: its state here is no longer the truth.
        forgotten.add(session);
        return;
      }
      // Messages arrived meanwhile: apply them first. None for this process: it no longer owns it.
      if ((await drainNow(session)).size === 0) return;
    }
  }

  /** Acks of rows applied here whose state was not durable yet, by inbox id. */
  const unrecorded = new Map<string, Ack | TriggerAck>();
  /** Sessions taken over here whose adoption has not completed yet (it failed: tried again). */
  const toAdopt = new Set<string>();
  /**
   * Sessions whose live state here may be behind the store (ownership lost or given up): adopted
   * before anything is applied to one again, else a blank session's save would overwrite the stored
   * turn and queue (those messages acked and never answered).
   */
  const forgotten = new Set<string>();
  async function adopt(session: string): Promise<void> {
    forgotten.delete(session);
    // Applied to the live state that went, never made durable: applied again to the adopted one.
    for (const [id, ack] of unrecorded) if (ack.session === session) unrecorded.delete(id);
    await deps.adopt(session);
    if (!forgotten.has(session)) return;
    // Lost again while the store was read: what was adopted goes too (tried again if still owned).
    deps.forgetLive(session);
    throw new Error(`session ${session}: its ownership was lost while it was adopted`);
  }
  /** Sessions with a step that failed (the database was away), tried again after a backoff. */
  const retrying = new Map<string, number>();
  let stopped = false;

  function wake(session: string, adopted: boolean, polled = false): void {
    // The poll finds rows still being applied here: their steps apply them, and a row from elsewhere
    // is read back by the next accept behind it, or found by the next poll.
    if (polled && !adopted && applying.has(session)) return;
    if (adopted) toAdopt.add(session);
    step(session, "applying waiting messages", async () => {
      if (deps.isDraining()) return;
      if (toAdopt.has(session)) {
        await adopt(session);
        toAdopt.delete(session);
      }
      await drainNow(session);
      await releaseIfIdle(session);
      retrying.delete(session);
    });
  }

  /** Runs a step of the session's in order; one that fails is logged and tried again later. */
  function step(session: string, what: string, work: () => Promise<void>): void {
    serial(session, work).catch((error: unknown) => {
      deps.logger.warn({ session, error: String(error) }, `cluster: ${what} failed`);
      retryLater(session);
    });
  }

  /**
   * A failed step (adopt, apply, give up) is tried again with backoff until it goes through: an owned
   * session is never left adopted halfway, or owned with nothing running (renewed for good).
   */
  function retryLater(session: string): void {
    if (stopped) return;
    const attempt = (retrying.get(session) ?? 0) + 1;
    retrying.set(session, attempt);
    const timer = setTimeout(() => wake(session, false), Math.min(100 * 2 ** attempt, 5000));
    timer.unref?.();
  }

  async function receive(inbound: InboundMessage): Promise<Ack> {
    // A draining process turns messages away as one process does (nothing reaches the inbox).
    if (deps.isDraining()) return deps.local(inbound);
    const message = validateInbound(inbound, config, deps.channelNames);
    const session = message.session;
    const isControl = parseControl(message.text) !== undefined;
    const arrivedAt = deps.now();
    const accepted: InboxMessage = {
      session,
      messageId: message.id,
      mode: isControl ? "control" : (message.mode ?? "default"),
      body: { ...message, arrivedAt },
    };
    const acceptedAt = Date.now();
    let failuresAtAccept = 0;
    // Older rows still waiting that are all this process's own, each applied by its own step before
    // this one's: the row may be applied as accepted, as one alone is (unless one of those fails).
    let behindOwn = false;
    const acceptance = await accepts.run(session, async () => {
      const answer = await cluster.accept(accepted);
      if (answer.kind !== "local") return answer;
      failuresAtAccept = applyFailures;
      const mine = applying.get(session) ?? new Set<string>();
      behindOwn = answer.older?.every((id) => mine.has(id)) === true;
      applying.set(session, mine.add(answer.id));
      return answer;
    });
    const inline = message.mode === undefined ? undefined : parseQueueMode(message.mode);
    const setting = resolveQueueSetting({ inline, ...queueLayers(config, message.channel) });
    const base = { session, messageId: message.id, mode: setting.mode, modeSource: setting.modeSource };
    if (acceptance.kind === "duplicate") {
      const ack: Ack = {
        ...base,
        disposition: "duplicate",
        text: "Already received this message; it is not run again.",
      };
      emit("message.acked", { ...ack, ...(message.sender ? { sender: message.sender } : {}) });
      return ack;
    }
    if (acceptance.kind === "remote") {
      const { owner, id } = acceptance;
      const answer = await cluster.awaitAck(id, cluster.ackWaitMs);
      // Taken over and applied here meanwhile: its ack came from the inbox too.
      appliedHere.take(id);
      emit("message.forwarded", { session, messageId: message.id, owner, confirmed: answer !== undefined });
      if (answer) {
        const owned = answer.ack as Ack;
        if (owned.disposition === "rejected") await cluster.forget(id);
        // The owner it was sent to, or a process that took the session over meanwhile (maybe this one).
        // The owner is in `owner` for clients; the person reading the text has no use for a process id.
        if (answer.by === cluster.processId) return owned;
        return { ...owned, owner: answer.by };
      }
      return {
        ...base,
        disposition: "queued",
        waitsFor: "own-turn",
        owner,
        text:
          "Stored: this session is busy elsewhere and has not confirmed yet; " +
          "your message waits for it and is answered once.",
      };
    }
    // Alone in the inbox, or behind its own: applied as it is (as the inbox holds it, JSON), unless
    // that took long or a step before it failed.
    const only =
      acceptance.alone || behindOwn
        ? { ...accepted, body: JSON.parse(JSON.stringify(accepted.body)), id: acceptance.id }
        : undefined;
    const fresh = () => Date.now() - acceptedAt < cluster.ackWaitMs && applyFailures === failuresAtAccept;
    let ack: Ack | undefined;
    try {
      ack = (await applyHere(
        session,
        acceptance,
        only && { ...only, receivedBy: cluster.processId },
        fresh,
      )) as Ack | undefined;
    } finally {
      const mine = applying.get(session);
      mine?.delete(acceptance.id);
      if (mine?.size === 0) applying.delete(session);
    }
    if (ack) return ack;
    // Nothing applied it (this process drains): it waits in the inbox for the next owner.
    return {
      ...base,
      disposition: "queued",
      waitsFor: "own-turn",
      text: "Stored: it waits for this session and is answered once, by the process that takes it next.",
    };
  }

  /** Applies what waits for a session this process owns (now); the ack of row `id`, once applied. */
  async function applyHere(
    session: string,
    acceptance: { id: string; adopted: boolean },
    only?: InboxEntry,
    fresh?: () => boolean,
  ): Promise<Ack | TriggerAck | undefined> {
    const acks = await serial(session, async () => {
      try {
        // Owned here now: adopted by the acceptance, or owned all along by the store's account while
        // this process forgot its live state (ownership lost, or given up and taken back meanwhile).
        const kept = !acceptance.adopted && !forgotten.has(session);
        if (!kept) await adopt(session);
        // The row as accepted: not read back, when nothing may have changed since (the session kept
        // here, the row not applied by an earlier step, the lease taken by the accept still young).
        const direct = kept && only && fresh?.() && !appliedHere.has(only.id) ? only : undefined;
        // Applied already by an earlier step (which drained the rows behind it): nothing to read. Rows
        // that came since have steps of their own.
        const applied = kept && appliedHere.has(acceptance.id) ? new Map() : await drainNow(session, direct);
        await releaseIfIdle(session);
        return applied;
      } catch (error) {
        // Counted before the next step of the session starts: a row accepted behind this one is read
        // back with whatever this step left waiting, in order.
        applyFailures++;
        throw error;
      }
    });
    // Applied by a step that ran first (an earlier message's, a wake-up): its ack is kept here, else
    // (applied by another process that took the session meanwhile) it is in the inbox.
    const here = appliedHere.take(acceptance.id);
    return (
      acks.get(acceptance.id) ?? here ?? ((await cluster.awaitAck(acceptance.id, 0))?.ack as Ack | undefined)
    );
  }

  /** `trigger()`; with `child`, a subagent's task (see `startChild`). */
  async function trigger(request: TriggerRequest, child?: TriggerExtras): Promise<TriggerAck> {
    // A draining process turns it away as one process does; a malformed request is refused before
    // anything is stored.
    if (deps.isDraining()) return deps.localTrigger(request, child);
    const { message, id } = checkTrigger(request, config, deps.channelNames, () => undefined);
    const session = message.session;
    const acceptance = await accepts.run(session, async () => {
      const accepted = await cluster.accept({
        session,
        messageId: id,
        mode: TRIGGER_MODE,
        body: { ...request, id, ...(child ? { extras: child } : {}) },
      });
      if (child && accepted.kind === "local") children.add(accepted.id);
      return accepted;
    });
    if (acceptance.kind === "duplicate")
      return triggerAckOf(request, id, "duplicate", "this trigger id was already run");
    if (child && acceptance.kind === "remote") {
      // A child runs beside its parent's tool or not at all (its final could not come back here).
      await cluster.forget(acceptance.id);
      return triggerAckOf(request, id, "rejected", `its session is owned by process ${acceptance.owner}`);
    }
    if (acceptance.kind === "remote") {
      const answer = await cluster.awaitAck(acceptance.id, cluster.ackWaitMs);
      appliedHere.take(acceptance.id);
      emit("message.forwarded", {
        session,
        messageId: id,
        owner: acceptance.owner,
        confirmed: answer !== undefined,
      });
      if (answer) {
        const owned = answer.ack as TriggerAck;
        if (owned.disposition === "rejected") await cluster.forget(acceptance.id);
        return owned;
      }
      return {
        ...triggerAckOf(request, id, "queued"),
        text: `Stored: the session is busy on process ${acceptance.owner}; this ${request.trigger} turn waits for it there and runs once.`,
      };
    }
    const ack = (await applyHere(session, acceptance)) as TriggerAck | undefined;
    if (!ack && child) {
      // Not applied (this process drains): nobody else may run it.
      children.delete(acceptance.id);
      await cluster.forget(acceptance.id);
      return triggerAckOf(request, id, "rejected", "the gateway is draining");
    }
    return (
      ack ?? {
        ...triggerAckOf(request, id, "queued"),
        text: `Stored: this ${request.trigger} turn waits for the process that takes the session next.`,
      }
    );
  }

  return {
    receive,
    trigger: (request) => trigger(request),
    startChild: (request, extras) => trigger(request, extras),
    idle(session) {
      step(session, "giving a session up", () => releaseIfIdle(session));
    },
    start() {
      if (unsubscribe.length > 0) return;
      unsubscribe.push(cluster.onWake(wake));
      const lost = cluster.onLost?.((session) => {
        // At once, not after the session's step in progress (which may wait for the store): until
        // its live state goes, it would go on running turns another process now runs too.
        forgotten.add(session);
        deps.forgetLive(session);
        emit("session.lost", { session });
      });
      if (lost) unsubscribe.push(lost);
    },
    stop() {
      stopped = true;
      for (const off of unsubscribe.splice(0)) off();
      holds.clear();
    },
  };
}
