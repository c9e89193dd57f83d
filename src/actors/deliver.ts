import { fromPromise } from "xstate";
import { errorMessage } from "../errors.js";
import { type DeliverInput, type DeliverOutput, LANE_TIMEOUT_REASON } from "../machines/session.types.js";
import {
  COULD_NOT_DELIVER_NOTICE,
  FAILED_NOTICE,
  failedNotice,
  markerDeliveryMode,
  TIMED_OUT_NOTICE,
  UNCERTAIN_DELIVERY_NOTICE,
  wantsRecovery,
} from "../policy/delivery.js";
import { RECOVERED, ROLLED_BACK, type TurnItem } from "../policy/turn-context.js";
import { type RecordBody, UNDELIVERED_FINAL } from "../ports/store.js";
import type { SendFailure } from "./channel-send.js";
import { claimedSend } from "./claimed-send.js";
import { deliverRecovery } from "./deliver-recovery.js";
import type { ActorDeps } from "./deps.js";
import { type DurableSend, sendDurably, sendWithOutcome } from "./send.js";
import { untilStored } from "./store-retry.js";

export { send } from "./send.js";

const UNDELIVERED: DeliverOutput = { delivered: false, recovery: null };

/**
 * The end of every turn (docs/architecture.md): stores what the run produced, sends the final, and when a
 * non-empty final did not reach the user, appends the hidden marker and waits for it to be durable
 * before a recovery is handed back to the session. Direct and follow-up turns share this path.
 *
 * A final sent automatically is first stored as a durable intent (`tiller.delivery-intent`, its
 * deliveryId `reply:<record id>`); the assistant record written after the send is its receipt. A crash
 * in between leaves an intent without a receipt, which a restart resends once and never re-runs.
 */
export function createDeliver(deps: ActorDeps) {
  return fromPromise<DeliverOutput, DeliverInput>(async ({ input, signal }) => {
    const { output, session } = input;
    const threading = threadingOf(output.journal);
    const notice = (text: string, why: string) =>
      sendDurably(deps, session, text, "notice", {
        deliveryId: `notice:${why}:${session}:${turnKey(input)}`,
        fallbackId: `notice:${why}:${session}:${turnKey(input)}`,
        runId: output.runId,
        via: output.channel,
        ...threading,
        signal,
      });
    // The turn's records, held and tried again while the store cannot be reached (a database restarting):
    // the reply waits for them rather than being given up for the could-not-finish notice.
    const held = (op: string, write: () => Promise<unknown>) =>
      untilStored(deps, { session, op }, write, signal);
    try {
      await held("journal", () =>
        deps.writer.appendJournal(
          session,
          output.runId,
          output.persisted,
          output.journal.slice(output.persisted),
        ),
      );
      await held("journal", () => deps.writer.append(session, closingResults(input)));
      // Durable before the next turn is prepared, so no later model call sees the rolled-back turn.
      if (input.rolledBack)
        await held("rollback", () => deps.writer.append(session, [rollbackMarker(input)]));
    } catch (error) {
      if (output.trigger === "subagent") return finishSubagent(deps, input, "failed", errorMessage(error));
      // What the turn did could not be stored: the user still learns that this reply failed.
      deps.logger.error({ session, runId: output.runId, error: errorMessage(error) }, "turn.storeFailed");
      deps.emit("turn.storeFailed", { session, runId: output.runId, error: errorMessage(error) });
      if (!signal.aborted) await notice(FAILED_NOTICE, "failed");
      return UNDELIVERED;
    } finally {
      deps.writer.endJournal(output.runId);
    }
    // The session left this turn meanwhile (`/new`): nothing more of it may reach the new conversation.
    if (signal.aborted && output.trigger !== "subagent") return UNDELIVERED;
    if (output.trigger === "subagent")
      return finishSubagent(deps, input, output.status, output.error?.message);

    if (input.kind === "recovery") return deliverRecovery(deps, input, output.messageSends);
    if (output.status === "aborted") {
      if (output.abortReason === LANE_TIMEOUT_REASON) await notice(TIMED_OUT_NOTICE, "timeout");
      return UNDELIVERED;
    }
    if (output.status === "failed") {
      deps.logger.warn({ session, runId: output.runId, error: output.error }, "turn.failed");
      await notice(failedNotice(output.error), "failed");
      return UNDELIVERED;
    }
    if (output.final.trim().length === 0) {
      deps.emit("final.silent", { session, runId: output.runId });
      return { delivered: false, recovery: null };
    }

    const visibleReplies = deps.config.delivery.visibleReplies;
    let delivered = false;
    let messageId: string | undefined;
    let deliveryId: string | undefined;
    let failure: SendFailure | undefined;
    let parts: Record<string, string> | undefined;
    if (visibleReplies === "auto") {
      const preview = await deps.previews?.take(output.runId);
      // Named after the messages it answers, so every send of this answer is one delivery: a retried
      // intent whose first write did land, and a run of the turn by a process that took the session
      // over, claim and dedupe under the same id. A turn that answers no message: its intent's id.
      const answers = (input.messageIds ?? []).length > 0 ? `reply:${session}:${turnKey(input)}` : undefined;
      ({ deliveryId, messageId, failure, parts } = await sendDurably(deps, session, output.final, "reply", {
        ...(preview ? { editOf: preview.messageId } : {}),
        ...(answers ? { deliveryId: answers } : {}),
        fallbackId: `reply:${session}:${turnKey(input)}`,
        runId: output.runId,
        via: output.channel,
        final: true,
        receipt: false,
        ...threading,
        signal,
      }));
      delivered = messageId !== undefined;
    } else delivered = output.messageSends > 0;
    if (signal.aborted) {
      // `/new` came while the reply was on its way: it belongs to no conversation now, but the user has it.
      if (delivered)
        deps.emit("final.delivered", {
          session,
          runId: output.runId,
          stored: false,
          ...(messageId ? { messageId } : {}),
        });
      return { delivered, recovery: null };
    }

    let final: { seq: number } | undefined;
    try {
      // The final's record is its send's receipt: held and retried while the store cannot be reached.
      [final] = await untilStored(
        deps,
        { session, op: "final" },
        () =>
          deps.writer.append(session, [
            {
              role: "assistant",
              text: output.final,
              runId: output.runId,
              delivered,
              ...(messageId ? { deliveryMessageId: messageId } : {}),
              ...(deliveryId ? { deliveryId } : {}),
            },
          ]),
        signal,
      );
    } catch (error) {
      // The user has the reply (or not) whatever the disk says; the operator learns the history lacks it.
      deps.logger.error({ session, runId: output.runId, error: errorMessage(error) }, "final.storeFailed");
      const storeFailure = { session, runId: output.runId, delivered, error: errorMessage(error) };
      deps.emit("store.failed", { op: "final", ...storeFailure });
      deps.emit("final.storeFailed", storeFailure);
      if (delivered)
        deps.emit("final.delivered", { session, runId: output.runId, ...(messageId ? { messageId } : {}) });
      // A reply the channel did not take, whose record is refused too (the lease ran out while the
      // store was away): no marker means no recovery turn, so it is resent or told here, never left
      // silent. A turn that left this process is resumed, from its intent, where its session went.
      else if (visibleReplies === "auto" && deliveryId && !signal.aborted)
        return resendUnrecorded(deps, input, { deliveryId, failure, parts, threading }, notice, signal);
      return { delivered, recovery: null };
    }
    if (delivered) {
      deps.emit("final.delivered", {
        session,
        runId: output.runId,
        ...(messageId ? { messageId } : {}),
        ...(deliveryId ? { deliveryId } : {}),
      });
      return { delivered: true, recovery: null };
    }

    const deliveryMode = markerDeliveryMode(visibleReplies);
    deps.emit("final.undelivered", {
      session,
      runId: output.runId,
      reason:
        visibleReplies === "auto" ? "the channel did not commit the send" : "the message tool was not used",
    });
    try {
      await deps.writer.append(session, [
        {
          role: "custom",
          customType: UNDELIVERED_FINAL,
          display: false,
          details: {
            deliveryMode,
            delivered: false,
            finalSeq: final?.seq ?? 0,
            finalTextLength: output.final.length,
          },
        },
      ]);
    } catch (error) {
      // Without a durable marker no recovery may be queued (invariant 6): the user gets the notice.
      deps.logger.error({ session, runId: output.runId, error: errorMessage(error) }, "marker.storeFailed");
      deps.emit("marker.storeFailed", { session, runId: output.runId, error: errorMessage(error) });
      const sent = await notice(COULD_NOT_DELIVER_NOTICE, "undelivered");
      deps.emit("notice.sent", { session, runId: output.runId, delivered: sent.messageId !== undefined });
      return UNDELIVERED;
    }
    deps.emit("marker.appended", { session, runId: output.runId, finalSeq: final?.seq ?? 0 });
    if (failure === "permanent" || failure === "unknown") {
      // Never resent: refused for good, or it may be on the platform already. The user is told either
      // way, even when this record cannot be stored.
      await deps.writer
        .append(session, [
          {
            role: "custom",
            customType: RECOVERED,
            display: false,
            details: { strandedRunId: output.runId, recovered: false, outcome: failure },
          },
        ])
        .catch((error: unknown) =>
          deps.logger.error(
            { session, runId: output.runId, error: errorMessage(error) },
            "recovered.storeFailed",
          ),
        );
      const sent = await notice(
        failure === "permanent" ? COULD_NOT_DELIVER_NOTICE : UNCERTAIN_DELIVERY_NOTICE,
        "undelivered",
      );
      deps.emit("notice.sent", { session, runId: output.runId, delivered: sent.messageId !== undefined });
      return UNDELIVERED;
    }
    // In `auto` mode any final the channel failed to take is resent once; a private `message_tool`
    // final earns a recovery turn only when it is substantive.
    if (!wantsRecovery(output.final, visibleReplies)) return { delivered: false, recovery: null };
    deps.emit("recovery.queued", { session, runId: output.runId, deliveryMode });
    return {
      delivered: false,
      recovery: {
        kind: "recovery",
        text: output.final,
        strandedRunId: output.runId,
        deliveryMode,
        ...(deliveryId ? { deliveryId } : {}),
        ...threading,
        ...(parts && Object.keys(parts).length > 0 ? { parts } : {}),
      },
    };
  });
}

/**
 * The one resend of a reply that did not reach the user and whose stranded final could not be stored
 * (so no recovery turn can be queued): under the same deliveryId, unless the channel refused it for
 * good or may have it already; the could-not-deliver (or did-not-confirm) notice if it still fails.
 */
async function resendUnrecorded(
  deps: ActorDeps,
  input: DeliverInput,
  sent: {
    deliveryId: string;
    failure?: SendFailure | undefined;
    parts?: Record<string, string> | undefined;
    threading: { replyTo?: string; thread?: string };
  },
  notice: (text: string, why: string) => Promise<DurableSend>,
  signal: AbortSignal,
): Promise<DeliverOutput> {
  const { session, output } = input;
  if (sent.failure !== "permanent" && sent.failure !== "unknown") {
    const { deliveryId, threading, parts } = sent;
    const again = await claimedSend(
      deps,
      { session, deliveryId, kind: "recovery", runId: output.runId, via: output.channel, signal },
      () =>
        sendWithOutcome(deps, session, output.final, "recovery", {
          deliveryId,
          runId: output.runId,
          via: output.channel,
          ...threading,
          ...(parts ? { parts } : {}),
        }),
    );
    if (again.messageId) {
      deps.emit("final.delivered", {
        session,
        runId: output.runId,
        messageId: again.messageId,
        deliveryId: sent.deliveryId,
      });
      return { delivered: true, recovery: null };
    }
  }
  const told = await notice(
    sent.failure === "unknown" ? UNCERTAIN_DELIVERY_NOTICE : COULD_NOT_DELIVER_NOTICE,
    "undelivered",
  );
  deps.emit("notice.sent", { session, runId: output.runId, delivered: told.messageId !== undefined });
  return UNDELIVERED;
}

/**
 * The threading of a turn's answer: the `replyTo` and `thread` of the newest user message it answers
 * that carries them.
 */
export function threadingOf(journal: readonly TurnItem[]): { replyTo?: string; thread?: string } {
  for (let index = journal.length - 1; index >= 0; index--) {
    const item = journal[index];
    if (item?.role !== "user" || (!item.replyTo && !item.thread)) continue;
    return {
      ...(item.replyTo ? { replyTo: item.replyTo } : {}),
      ...(item.thread ? { thread: item.thread } : {}),
    };
  }
  return {};
}

/** What a turn's notices are named after: the messages it owned (stable across a re-run). */
export function turnKey(input: DeliverInput): string {
  if (input.recovery) return `recovery:${input.recovery.deliveryId ?? input.recovery.strandedRunId}`;
  const ids = input.messageIds ?? [];
  return ids.length > 0 ? ids.join(",") : `run:${input.output.runId}`;
}

/**
 * A subagent's final goes back to the tool that started it, never to a channel: it is stored (not
 * delivered) in the child's transcript and handed over through `subagent.finished`.
 */
async function finishSubagent(
  deps: ActorDeps,
  input: DeliverInput,
  status: string,
  error?: string,
): Promise<DeliverOutput> {
  const { output, session } = input;
  if (status === "done" && output.final.trim()) {
    try {
      await deps.writer.append(session, [
        { role: "assistant", text: output.final, runId: output.runId, delivered: false },
      ]);
    } catch (storeError) {
      deps.emit("final.storeFailed", { session, runId: output.runId, error: errorMessage(storeError) });
    }
  }
  deps.emit("subagent.finished", {
    session,
    runId: output.runId,
    status,
    final: status === "done" ? output.final : "",
    ...(error ? { error } : {}),
  });
  return UNDELIVERED;
}

/**
 * A turn that ended early closes every tool call left without a result, so the next model call never
 * sees a dangling call.
 */
function closingResults(input: DeliverInput): RecordBody[] {
  const { output } = input;
  const rest: RecordBody[] = [];
  if (output.status === "done") return rest;
  const open = new Map<string, string>();
  for (const item of output.journal) {
    if (item.role === "toolCall") open.set(item.callId, item.name);
    if (item.role === "toolResult") open.delete(item.callId);
  }
  for (const callId of open.keys()) {
    rest.push({
      role: "toolResult",
      callId,
      status: "cancelled",
      result: `cut off: the turn ${output.status === "aborted" ? "was interrupted" : "failed"} before this call finished`,
      runId: output.runId,
    });
  }
  return rest;
}

/** The hidden record that takes a rolled-back turn out of every later model context. */
function rollbackMarker(input: DeliverInput): RecordBody {
  return {
    role: "custom",
    customType: ROLLED_BACK,
    display: false,
    details: { runId: input.output.runId, messageIds: input.messageIds ?? [] },
  };
}
