import { nanoid } from "nanoid";
import type { ActorDeps } from "../../actors/deps.js";
import { type GatewayConfig, queueLayers } from "../../config.js";
import { MessageRejectedError } from "../../errors.js";
import type { Disposition } from "../../machines/session.types.js";
import {
  laneForTurn,
  type Priority,
  priorityForTrigger,
  TRIGGERS,
  type Trigger,
} from "../../policy/lane-priority.js";
import { resolveQueueSetting } from "../../policy/queue-mode.js";
import type { OwnedMessage } from "../../policy/turn-context.js";
import type { SessionPersistence } from "../sessions/session-persistence.js";
import type { SessionRegistry } from "../sessions/session-registry.js";
import { pruneSeen, validateInbound } from "./validate-inbound.js";

/** A turn nobody typed: `gateway.trigger()`'s argument. */
export interface TriggerRequest {
  session: string;
  /** `cron`, `heartbeat`, `manual`, `subagent`, `memory`, ... (not `user`: users send messages). */
  trigger: Trigger;
  /** The task, as the model reads it. */
  text: string;
  /** Names the turn; a second trigger with the same id in the dedupe window is a duplicate. @default a new id */
  id?: string;
  /** The channel its reply goes out on. @default the session's channel, else the gateway's first */
  channel?: string;
}

/** What became of a triggered turn, like a message's ack. */
export interface TriggerAck {
  session: string;
  messageId: string;
  trigger: string;
  lane: string;
  priority: Priority;
  /** `started`, `queued` (behind the session's work), `dropped` (a heartbeat in a busy session), `rejected`, `duplicate`. */
  disposition: Disposition;
  mode: "followup";
  modeSource: "default";
  text: string;
  reason?: string;
  /** Position in the session's queue (1 = next). */
  queuePosition?: number;
}

/** Options a subagent turn carries on top of a request (set by the gateway, not by callers). */
export interface TriggerExtras {
  lane?: string;
  tools?: string[];
}

export interface TriggerDeps {
  config: GatewayConfig;
  deps: ActorDeps;
  registry: SessionRegistry;
  persistence: SessionPersistence;
  channelNames: readonly string[];
  isDraining(): boolean;
  emit(type: string, fields: Record<string, unknown>, at?: number): void;
}

const SELECTABLE = new Set<string>(TRIGGERS.filter((trigger) => trigger !== "user"));

/**
 * The gateway's `trigger()`: starts a turn that nobody typed in a session, in the lane and at the
 * priority its trigger maps to. It never steers into or interrupts the session's work: it starts in an
 * idle session, else waits for its own turn, except a heartbeat, which is dropped when the session is
 * busy. Acknowledged once durable, like a message.
 */
export function createTrigger(
  ctx: TriggerDeps,
): (request: TriggerRequest, extras?: TriggerExtras) => Promise<TriggerAck> {
  const { config, deps, registry, persistence, emit } = ctx;

  return async function trigger(request, extras = {}) {
    const { message, channel, id } = checkTrigger(request, config, ctx.channelNames, (session) =>
      registry.get(session),
    );
    const triggerName = request.trigger;
    const { lane, priority } = triggerBase(request, id, extras);
    const entry = registry.memory(message.session, channel);
    registry.keepWindow(message.session, entry, true);
    await persistence.rememberStoredIds(message.session, entry);
    const now = deps.clock.now();
    emit(
      "message.received",
      { session: message.session, messageId: id, text: message.text, channel, trigger: triggerName },
      now,
    );
    pruneSeen(entry, now, config.limits.dedupeWindowMs);
    const base = { session: message.session, messageId: id, trigger: triggerName, lane, priority };
    const setting = {
      ...resolveQueueSetting({ session: entry.override, ...queueLayers(config, channel) }),
      // A turn nobody typed is always a turn of its own: it never steers, interrupts or joins a burst.
      mode: "followup" as const,
    };

    let ack: TriggerAck;
    if (entry.seen.has(id)) {
      ack = finish(base, "duplicate", "this trigger id was already run");
    } else if (message.text.length > config.limits.maxMessageChars) {
      ack = finish(base, "rejected", `the text is longer than ${config.limits.maxMessageChars} characters`);
    } else if (ctx.isDraining()) {
      ack = finish(base, "rejected", "the gateway is draining");
    } else {
      entry.seen.set(id, now);
      persistence.accepted(entry, id, now);
      const owned: OwnedMessage = {
        id,
        text: message.text,
        channel,
        at: now,
        trigger: triggerName,
        ...(extras.lane ? { lane: extras.lane } : {}),
        ...(extras.tools ? { tools: extras.tools } : {}),
      };
      const actor = registry.actor(message.session, entry);
      actor.send({ type: "session.message", message: owned, setting });
      const snapshot = actor.getSnapshot();
      const decision = snapshot.context.lastDecision;
      const disposition = decision?.messageId === id ? decision.disposition : "rejected";
      if (disposition === "dropped" || disposition === "rejected") persistence.forget(entry, id);
      persistence.flush(message.session, entry);
      await entry.saving;
      ack = finish(
        base,
        disposition,
        decision?.reason,
        disposition === "queued" ? snapshot.context.queue.length : undefined,
      );
    }
    registry.keepWindow(message.session, entry, false);
    emit("message.acked", { ...ack });
    return ack;
  };
}

/**
 * A trigger request checked as `trigger()` checks it (a typed error naming the field), with its id (a
 * new one when it has none) and the channel its reply goes out on.
 */
export function checkTrigger(
  request: TriggerRequest,
  config: GatewayConfig,
  channelNames: readonly string[],
  known: (session: string) => { channel?: string | undefined } | undefined,
): { message: ReturnType<typeof validateInbound>; channel: string; id: string } {
  if (request === null || typeof request !== "object") {
    throw new MessageRejectedError("trigger", `expected an object, received ${typeof request}`);
  }
  if (typeof request.trigger !== "string" || !SELECTABLE.has(request.trigger)) {
    throw new MessageRejectedError(
      "trigger",
      `expected one of ${[...SELECTABLE].join(", ")}, received ${JSON.stringify(request.trigger)}`,
    );
  }
  const channel =
    request.channel ?? (typeof request.session === "string" ? known(request.session)?.channel : undefined);
  const id = request.id ?? `${request.trigger}:${nanoid(10)}`;
  const message = validateInbound(
    { session: request.session, channel: channel ?? channelNames[0] ?? "", text: request.text, id },
    config,
    channelNames,
  );
  return { message, channel: message.channel, id };
}

function triggerBase(request: TriggerRequest, id: string, extras: TriggerExtras = {}) {
  const turn = { trigger: request.trigger, ...(extras.lane ? { lane: extras.lane } : {}) };
  return {
    session: request.session,
    messageId: id,
    trigger: request.trigger,
    lane: laneForTurn(turn),
    priority: priorityForTrigger(request.trigger),
  };
}

/** The ack of a triggered turn that did not run here: a duplicate, or one stored for another process. */
export function triggerAckOf(
  request: TriggerRequest,
  id: string,
  disposition: Disposition,
  reason?: string,
): TriggerAck {
  return finish(triggerBase(request, id), disposition, reason);
}

function finish(
  base: Pick<TriggerAck, "session" | "messageId" | "trigger" | "lane" | "priority">,
  disposition: Disposition,
  reason?: string,
  queuePosition?: number,
): TriggerAck {
  return {
    ...base,
    disposition,
    mode: "followup",
    modeSource: "default",
    text: triggerAckText(base.trigger, disposition, reason),
    ...(reason ? { reason } : {}),
    ...(queuePosition ? { queuePosition } : {}),
  };
}

function triggerAckText(trigger: string, disposition: Disposition, reason?: string): string {
  switch (disposition) {
    case "started":
      return `Started a ${trigger} turn.`;
    case "queued":
      return `Queued: the session is busy; this ${trigger} turn runs after the work ahead of it.`;
    case "dropped":
      return `Dropped this ${trigger} turn: ${reason ?? "the session is busy"}.`;
    case "duplicate":
      return `Already triggered (${trigger}); it is not run again.`;
    default:
      return `Not run: ${reason ?? "rejected"}.`;
  }
}
