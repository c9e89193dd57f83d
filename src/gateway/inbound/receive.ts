import type { ActorDeps } from "../../actors/deps.js";
import { send } from "../../actors/send.js";
import { type GatewayConfig, queueExtras, queueLayers } from "../../config.js";
import { errorMessage } from "../../errors.js";
import type { EmitEvent } from "../../events.js";
import type { SessionDecision } from "../../machines/session.types.js";
import { admit } from "../../policy/admission.js";
import { ackVisibilityFor, isProblemAck } from "../../policy/delivery.js";
import { isTypedTrigger } from "../../policy/lane-priority.js";
import {
  parseQueueMode,
  type QueueMode,
  type ResolvedQueueSetting,
  resolveQueueSetting,
} from "../../policy/queue-mode.js";
import type { Sender } from "../../policy/sender.js";
import { ACK_REACTIONS, type Channel } from "../../ports/channel.js";
import type { SessionMemory, SessionPersistence } from "../sessions/session-persistence.js";
import type { SessionRegistry } from "../sessions/session-registry.js";
import { applyControl, runViewOf } from "./apply-control.js";
import { type Ack, composeAck, type RunView } from "./compose-ack.js";
import { claimInbound, releaseInbound } from "./shared-dedupe.js";
import { type InboundMessage, pruneSeen, validateInbound } from "./validate-inbound.js";

export interface ReceiveDeps {
  config: GatewayConfig;
  deps: ActorDeps;
  registry: SessionRegistry;
  persistence: SessionPersistence;
  channelNames: readonly string[];
  isDraining(): boolean;
  emit: EmitEvent;
  /**
   * Someone reads `message.received` (a subscriber, a debug log): it is built only then. Nothing inside
   * the gateway reads it (the explain log starts from the turn and the ack). Default: always.
   */
  isObserved?(): boolean;
  /**
   * Claim each accepted id in the store's shared dedupe window (on a store that has one). Off under a
   * cluster inbox, which stores the id with the message in one transaction: a row re-applied by the
   * process that took its session over is the message itself, not a redelivery.
   */
  sharedDedupe: boolean;
}

/**
 * The gateway's `receive()`: validates the message, admits it (policy/admission), hands an accepted
 * one to its session actor, and answers with one truthful ack once the message is durable.
 */
export function createReceive(
  ctx: ReceiveDeps,
): (inbound: InboundMessage, arrivedAt?: number) => Promise<Ack> {
  const { config, deps, registry, persistence, emit } = ctx;

  /**
   * Shows the ack on the message's channel as `delivery.visibleAcks` and `delivery.ackReactions` say:
   * a reaction where the channel has them, a visible message for every problem (by default), never
   * blocking the ack itself.
   */
  function showAck(session: string, channelName: string, ack: Ack, inbound: InboundMessage): void {
    const visibility = ackVisibilityFor(config.delivery.visibleAcks, channelName);
    const { channel } = deps.channelFor(session, channelName);
    const reaction = ACK_REACTIONS[ack.disposition];
    const reacted = config.delivery.ackReactions && channel.react !== undefined && reaction !== undefined;
    if (reacted) void react(channel, session, inbound.replyTo ?? inbound.id, reaction);
    const problem = isProblemAck(ack);
    if (visibility === "none" || (!problem && (visibility === "problems" || reacted))) return;
    void send(deps, session, ack.text, "ack", {
      deliveryId: `ack:${session}:${ack.messageId}`,
      via: channelName,
      replyTo: inbound.replyTo,
      thread: inbound.thread,
    });
  }

  async function react(channel: Channel, session: string, messageId: string, reaction: string) {
    try {
      await channel.react?.(session, messageId, reaction);
    } catch (error) {
      deps.logger.warn({ session, messageId, error: errorMessage(error) }, "ack.reactionFailed");
    }
  }

  function finishAck(
    session: string,
    entry: SessionMemory,
    decision: SessionDecision,
    inbound: InboundMessage,
    runBefore?: RunView,
    sender?: Sender,
    busyWith?: string,
  ): Ack {
    const snapshot = entry.actor?.getSnapshot();
    const run =
      decision.disposition === "interrupted"
        ? runBefore
        : decision.disposition === "steered"
          ? runViewOf(entry.actor)
          : undefined;
    const position =
      snapshot && decision.disposition === "queued" ? snapshot.context.queue.length : undefined;
    const composed = composeAck(session, decision, run, position);
    // The save was retried and still failed: the ack must not promise what a restart would not keep.
    const stored = entry.notDurable?.has(decision.messageId)
      ? {
          ...composed,
          durable: false as const,
          text: `${composed.text} It could not be stored safely, so if I restart before answering, please send it again.`,
        }
      : composed;
    // A person writing while scheduled work runs learns what the session is busy with.
    const ack =
      busyWith && decision.disposition !== "rejected" && decision.disposition !== "duplicate"
        ? { ...stored, busyWith, text: `${stored.text} (The session is busy with a scheduled task.)` }
        : stored;
    emit("message.acked", { ...ack, session, ...(sender ? { sender } : {}) });
    showAck(session, entry.channel, ack, inbound);
    return ack;
  }

  /**
   * Without an inline mode or a session override, a message's queue setting depends on its channel
   * alone: resolved once per channel rather than once per message (it is only read, never changed).
   */
  const byChannel = new Map<string, ResolvedQueueSetting>();
  function settingFor(
    channel: string,
    inline: QueueMode | undefined,
    override: SessionMemory["override"],
  ): ResolvedQueueSetting {
    const plain = inline === undefined && !override;
    const known = plain ? byChannel.get(channel) : undefined;
    if (known) return known;
    const setting = {
      ...resolveQueueSetting({ inline, session: override, ...queueLayers(config, channel) }),
      ...queueExtras(config),
    };
    if (plain) byChannel.set(channel, setting);
    return setting;
  }

  return async function receive(inbound: InboundMessage, arrivedAt?: number): Promise<Ack> {
    const message = validateInbound(inbound, config, ctx.channelNames);
    const entry = registry.memory(message.session, message.channel);
    entry.channel = message.channel;
    // The window read for duplicate detection is the one the session's first turn starts from.
    registry.keepWindow(message.session, entry, true);
    await persistence.rememberStoredIds(message.session, entry);
    const now = deps.clock.now();
    const inline = message.mode === undefined ? undefined : parseQueueMode(message.mode);
    const setting = settingFor(message.channel, inline, entry.override);
    // An edit that reuses the id it edits (as platforms do) gets an id of its own, so it is no duplicate.
    const id =
      message.editOf !== undefined && message.id === message.editOf
        ? `${message.id}~edit@${now}`
        : message.id;
    // Stamped with the arrival time the record keeps (`arrivedAt`), not a second reading of the clock.
    if (ctx.isObserved?.() ?? true)
      emit(
        "message.received",
        {
          session: message.session,
          messageId: id,
          text: message.text,
          channel: message.channel,
          ...(message.sender ? { sender: message.sender } : {}),
          ...(message.editOf !== undefined ? { editOf: message.editOf } : {}),
        },
        arrivedAt ?? now,
      );
    const owned = {
      id,
      text: message.text,
      channel: message.channel,
      // A message forwarded by another process of a cluster arrived there, before the owner applies it.
      at: arrivedAt ?? now,
      ...(message.sender ? { sender: message.sender } : {}),
      ...(message.replyTo ? { replyTo: message.replyTo } : {}),
      ...(message.thread ? { thread: message.thread } : {}),
      ...(message.editOf !== undefined ? { editOf: message.editOf } : {}),
    };

    pruneSeen(entry, now, config.limits.dedupeWindowMs);
    const admission = admit({
      text: message.text,
      alreadySeen: entry.seen.has(id),
      maxMessageChars: config.limits.maxMessageChars,
      ...(message.mode !== undefined && inline === undefined ? { unknownInlineMode: message.mode } : {}),
      draining: ctx.isDraining(),
    });

    let decision: SessionDecision;
    let runBefore: RunView | undefined;
    let busyWith: string | undefined;
    switch (admission.kind) {
      case "duplicate":
        decision = { messageId: id, disposition: "duplicate", setting };
        break;
      case "rejected":
        decision = { messageId: id, disposition: "rejected", setting, reason: admission.reason };
        break;
      case "control": {
        entry.seen.set(id, now);
        persistence.accepted(entry, id, now);
        const ack = applyControl({
          session: message.session,
          entry,
          messageId: owned.id,
          control: admission.control,
          setting,
          sender: message.sender,
          actor: () => registry.actor(message.session, entry),
        });
        registry.keepWindow(message.session, entry, false);
        // Saved before the ack, like a message: a session override outlives a restart, and so does the
        // control's id (a redelivered `/new` after a restart must not reset the session again).
        persistence.persist(message.session, entry, entry.actor?.getSnapshot());
        persistence.flush(message.session, entry);
        await entry.saving;
        emit("message.acked", {
          ...ack,
          session: message.session,
          ...(message.sender ? { sender: message.sender } : {}),
        });
        showAck(message.session, entry.channel, ack, message);
        return ack;
      }
      case "accept": {
        entry.seen.set(id, now);
        persistence.accepted(entry, id, now);
        // Several processes on one store: one that accepted this id already makes it a duplicate here.
        const store = deps.writer.store;
        if (
          ctx.sharedDedupe &&
          store.claimMessageId &&
          !(await claimInbound(store, deps.logger, entry, message, now, config.limits.dedupeWindowMs))
        ) {
          decision = { messageId: id, disposition: "duplicate", setting };
          break;
        }
        const actor = registry.actor(message.session, entry);
        // What the run was doing when the message arrived: an interrupt changes it at once.
        runBefore = runViewOf(actor);
        busyWith = backgroundTrigger(actor.getSnapshot());
        actor.send({ type: "session.message", message: owned, setting });
        decision = actor.getSnapshot().context.lastDecision ?? {
          messageId: id,
          disposition: "rejected",
          setting,
        };
        // Acknowledged means durable: the message is in the saved state (or the transcript) first.
        persistence.flush(message.session, entry);
        await entry.saving;
        break;
      }
    }
    // A message the session turned away (a full queue) may be sent again and must not be a duplicate.
    if (
      decision.disposition === "rejected" &&
      persistence.forget(entry, id) &&
      admission.kind === "accept" &&
      ctx.sharedDedupe
    )
      await releaseInbound(deps.writer.store, deps.logger, message);
    // Nothing runs for it (a duplicate, a rejection): a session without an actor keeps no window.
    registry.keepWindow(message.session, entry, false);
    return finishAck(message.session, entry, decision, message, runBefore, message.sender, busyWith);
  };
}

/** The trigger of the background turn the session is in (a schedule's, a heartbeat's), if any. */
function backgroundTrigger(snapshot: {
  value: unknown;
  context: { pending: { trigger?: string } | null };
}): string | undefined {
  const inTurn = typeof snapshot.value === "object" && snapshot.value !== null && "turn" in snapshot.value;
  const trigger = inTurn ? snapshot.context.pending?.trigger : undefined;
  return trigger && !isTypedTrigger(trigger) ? trigger : undefined;
}
