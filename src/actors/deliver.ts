import { fromPromise } from "xstate";
import { type DeliveryKind, isCommitted } from "../adapters/channel.js";
import { DeadlineError, withDeadline } from "../adapters/clock.js";
import { type RecordBody, UNDELIVERED_FINAL } from "../adapters/store.js";
import { errorMessage } from "../errors.js";
import type { DeliverInput, DeliverOutput } from "../machines/session.types.js";
import { LANE_TIMEOUT_REASON } from "../machines/session.types.js";
import {
  COULD_NOT_DELIVER_NOTICE,
  FAILED_NOTICE,
  failedNotice,
  isSubstantive,
  markerDeliveryMode,
  TIMED_OUT_NOTICE,
} from "../policy/delivery.js";
import { RECOVERED } from "../policy/turn-context.js";
import type { ActorDeps } from "./deps.js";

const UNDELIVERED: DeliverOutput = { delivered: false, recovery: null };

/**
 * The end of every turn (DESIGN.md §4): stores what the run produced, sends the final, and when a
 * non-empty final did not reach the user, appends the hidden marker and waits for it to be durable
 * before a recovery is handed back to the session. Direct and follow-up turns share this path.
 */
export function createDeliver(deps: ActorDeps) {
  return fromPromise<DeliverOutput, DeliverInput>(async ({ input, signal }) => {
    const { output, session } = input;
    const facts = deps.runFacts.get(output.runId);
    deps.runFacts.delete(output.runId);
    try {
      await deps.writer.appendJournal(
        session,
        output.runId,
        output.persisted,
        output.journal.slice(output.persisted),
      );
      await deps.writer.append(session, closingResults(input));
    } catch (error) {
      if (facts?.trigger === "subagent") return finishSubagent(deps, input, "failed", errorMessage(error));
      // What the turn did could not be stored: the user still learns that this reply failed.
      deps.logger.error({ session, runId: output.runId, error: errorMessage(error) }, "turn.storeFailed");
      deps.emit("turn.storeFailed", { session, runId: output.runId, error: errorMessage(error) });
      if (!signal.aborted) await send(deps, session, FAILED_NOTICE, "notice", output.runId, facts?.channel);
      return UNDELIVERED;
    } finally {
      deps.writer.endJournal(output.runId);
    }
    // The session left this turn meanwhile (`/new`): nothing more of it may reach the new conversation.
    if (signal.aborted && facts?.trigger !== "subagent") return UNDELIVERED;
    if (facts?.trigger === "subagent")
      return finishSubagent(deps, input, output.status, output.error?.message);

    if (input.kind === "recovery") return deliverRecovery(deps, input, facts?.messageSends ?? 0);
    if (output.status === "aborted") {
      if (output.abortReason === LANE_TIMEOUT_REASON)
        await send(deps, session, TIMED_OUT_NOTICE, "notice", output.runId, facts?.channel);
      return UNDELIVERED;
    }
    if (output.status === "failed") {
      deps.logger.warn({ session, runId: output.runId, error: output.error }, "turn.failed");
      await send(deps, session, failedNotice(output.error), "notice", output.runId, facts?.channel);
      return UNDELIVERED;
    }
    if (output.final.trim().length === 0) {
      deps.emit("final.silent", { session, runId: output.runId });
      return { delivered: false, recovery: null };
    }

    const visibleReplies = deps.config.delivery.visibleReplies;
    let delivered = false;
    let messageId: string | undefined;
    if (visibleReplies === "auto") {
      messageId = await send(deps, session, output.final, "reply", output.runId, facts?.channel);
      delivered = messageId !== undefined;
    } else delivered = (facts?.messageSends ?? 0) > 0;
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
      [final] = await deps.writer.append(session, [
        {
          role: "assistant",
          text: output.final,
          runId: output.runId,
          delivered,
          ...(messageId ? { deliveryMessageId: messageId } : {}),
        },
      ]);
    } catch (error) {
      // The user has the reply (or not) whatever the disk says; the operator learns the history lacks it.
      deps.logger.error({ session, runId: output.runId, error: errorMessage(error) }, "final.storeFailed");
      deps.emit("final.storeFailed", { session, runId: output.runId, delivered, error: errorMessage(error) });
      if (delivered)
        deps.emit("final.delivered", { session, runId: output.runId, ...(messageId ? { messageId } : {}) });
      return { delivered, recovery: null };
    }
    if (delivered) {
      deps.emit("final.delivered", { session, runId: output.runId, ...(messageId ? { messageId } : {}) });
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
      const noticeId = await send(
        deps,
        session,
        COULD_NOT_DELIVER_NOTICE,
        "notice",
        output.runId,
        facts?.channel,
      );
      deps.emit("notice.sent", { session, runId: output.runId, delivered: noticeId !== undefined });
      return UNDELIVERED;
    }
    deps.emit("marker.appended", { session, runId: output.runId, finalSeq: final?.seq ?? 0 });
    if (!isSubstantive(output.final)) return { delivered: false, recovery: null };
    deps.emit("recovery.queued", { session, runId: output.runId, deliveryMode });
    return {
      delivered: false,
      recovery: { kind: "recovery", text: output.final, strandedRunId: output.runId, deliveryMode },
    };
  });
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

async function deliverRecovery(
  deps: ActorDeps,
  input: DeliverInput,
  messageSends: number,
): Promise<DeliverOutput> {
  const { session, output, recovery } = input;
  let messageId: string | undefined;
  let recovered = false;
  if (recovery?.deliveryMode === "automatic") {
    messageId = await send(deps, session, recovery.text, "recovery", output.runId);
    recovered = messageId !== undefined;
  } else {
    recovered = messageSends > 0;
    if (output.final.trim()) {
      // The recovery turn's own closing words are private; they never earn a second marker.
      await deps.writer.append(session, [
        { role: "assistant", text: output.final, runId: output.runId, delivered: false },
      ]);
    }
  }
  // Durable proof that this stranded final had its one recovery, whatever the outcome.
  await deps.writer.append(session, [
    {
      role: "custom",
      customType: RECOVERED,
      display: false,
      details: {
        strandedRunId: recovery?.strandedRunId ?? "",
        recovered,
        ...(messageId ? { messageId } : {}),
      },
    },
  ]);
  if (recovered) {
    deps.emit("recovery.delivered", { session, runId: output.runId, strandedRunId: recovery?.strandedRunId });
    return { delivered: true, recovery: null };
  }
  deps.emit("recovery.failed", { session, runId: output.runId, strandedRunId: recovery?.strandedRunId });
  const noticeId = await send(deps, session, COULD_NOT_DELIVER_NOTICE, "notice", output.runId);
  deps.emit("notice.sent", { session, runId: output.runId, delivered: noticeId !== undefined });
  return { delivered: false, recovery: null };
}

/**
 * Sends through the session's channel (or `via`, the channel of the turn the text belongs to); the
 * messageId of a committed receipt, else undefined.
 */
export async function send(
  deps: ActorDeps,
  session: string,
  text: string,
  kind: DeliveryKind,
  runId?: string,
  via?: string,
): Promise<string | undefined> {
  const { channel } = deps.channelFor(session, via);
  try {
    const receipt = await withDeadline(
      deps.clock,
      channel.send({ session, text, kind, ...(runId ? { runId } : {}) }),
      deps.config.delivery.sendTimeoutMs,
    );
    if (isCommitted(receipt)) return receipt.messageId;
    deps.emit("delivery.failed", { session, runId, kind, reason: "receipt without messageId" });
  } catch (error) {
    deps.emit("delivery.failed", {
      session,
      runId,
      kind,
      reason:
        error instanceof DeadlineError
          ? `the channel did not answer within ${error.ms} ms`
          : errorMessage(error),
    });
  }
  return undefined;
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
