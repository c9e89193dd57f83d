import type { DeliverInput, DeliverOutput } from "../machines/session.types.js";
import {
  COULD_NOT_DELIVER_NOTICE,
  markerDeliveryMode,
  UNCERTAIN_DELIVERY_NOTICE,
} from "../policy/delivery.js";
import { RECOVERED } from "../policy/turn-context.js";
import { UNDELIVERED_FINAL } from "../ports/store.js";
import type { SendFailure } from "./channel-send.js";
import { claimedSend } from "./claimed-send.js";
import type { ActorDeps } from "./deps.js";
import { sendDurably, sendWithOutcome, writeReceipt } from "./send.js";

/**
 * The end of a recovery turn: the one resend of a stranded final (`automatic`: the same text under the
 * same deliveryId), the end of a `message_tool` recovery turn, or the resend of a send a crash left
 * without a receipt. Each writes its durable outcome, so it never happens twice; a recovery that
 * strands too ends in one short "could not deliver" notice.
 */
export async function deliverRecovery(
  deps: ActorDeps,
  input: DeliverInput,
  messageSends: number,
): Promise<DeliverOutput> {
  const { session, output, recovery } = input;
  const strandedRunId = recovery?.strandedRunId ?? "";
  if (recovery?.intent) return resendIntent(deps, input);
  let messageId: string | undefined;
  let recovered = false;
  let deliveryId: string | undefined;
  let failure: SendFailure | undefined;
  if (recovery?.deliveryMode === "automatic") {
    ({ deliveryId, messageId, failure } = await sendDurably(deps, session, recovery.text, "recovery", {
      ...(recovery.deliveryId ? { deliveryId: recovery.deliveryId } : {}),
      fallbackId: `recovery:${session}:${strandedRunId}`,
      runId: output.runId,
      receipt: false,
      replyTo: recovery.replyTo,
      thread: recovery.thread,
      parts: recovery.parts,
    }));
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
  // Durable proof that this stranded final had its one recovery, whatever the outcome (and the receipt
  // of the resend's intent).
  await deps.writer.append(session, [
    {
      role: "custom",
      customType: RECOVERED,
      display: false,
      details: {
        strandedRunId,
        recovered,
        ...(messageId ? { messageId } : {}),
        ...(deliveryId ? { deliveryId } : {}),
      },
    },
  ]);
  if (recovered) {
    deps.emit("recovery.delivered", { session, runId: output.runId, strandedRunId });
    return { delivered: true, recovery: null };
  }
  deps.emit("recovery.failed", { session, runId: output.runId, strandedRunId });
  await couldNotDeliver(deps, input, failure);
  return { delivered: false, recovery: null };
}

/** A send whose intent a crash left without a receipt: once more, as it was, under the same id. */
async function resendIntent(deps: ActorDeps, input: DeliverInput): Promise<DeliverOutput> {
  const { session, output } = input;
  const recovery = input.recovery!;
  const intent = recovery.intent!;
  const deliveryId = recovery.deliveryId ?? "";
  const strandedRunId = recovery.strandedRunId;
  // Under this process's claim: a send the session's previous owner still has in flight is waited
  // for, and one it completed is not sent again.
  const { messageId, failure } = await claimedSend(
    deps,
    { session, deliveryId, kind: intent.kind, runId: strandedRunId || output.runId },
    () =>
      sendWithOutcome(deps, session, recovery.text, intent.kind, {
        deliveryId,
        runId: strandedRunId || output.runId,
        replyTo: recovery.replyTo,
        thread: recovery.thread,
        // Parts whose receipts are durable were delivered before the crash: only the others go out.
        parts: recovery.parts,
        onPart: (partId, partMessageId) => writeReceipt(deps, session, partId, partMessageId),
      }),
  );
  const delivered = messageId !== undefined;
  deps.emit("delivery.resent", { session, runId: output.runId, deliveryId, kind: intent.kind, delivered });
  if (intent.final) {
    // The assistant record is the final's receipt: the conversation holds the reply from now on.
    const [final] = await deps.writer.append(session, [
      {
        role: "assistant",
        text: recovery.text,
        runId: strandedRunId,
        delivered,
        deliveryId,
        ...(messageId ? { deliveryMessageId: messageId } : {}),
      },
    ]);
    if (delivered) {
      deps.emit("final.delivered", { session, runId: strandedRunId, messageId, deliveryId, resent: true });
      return { delivered: true, recovery: null };
    }
    deps.emit("final.undelivered", {
      session,
      runId: strandedRunId,
      reason: "the channel did not commit the resend after a restart",
    });
    await deps.writer.append(session, [
      {
        role: "custom",
        customType: UNDELIVERED_FINAL,
        display: false,
        details: {
          deliveryMode: markerDeliveryMode(deps.config.delivery.visibleReplies),
          delivered: false,
          finalSeq: final?.seq ?? 0,
          finalTextLength: recovery.text.length,
        },
      },
      // The resend was this final's one recovery: none is queued after it.
      { role: "custom", customType: RECOVERED, display: false, details: { strandedRunId, recovered: false } },
    ]);
    deps.emit("marker.appended", { session, runId: strandedRunId, finalSeq: final?.seq ?? 0 });
    await couldNotDeliver(deps, input, failure);
    return { delivered: false, recovery: null };
  }
  if (intent.kind === "recovery") {
    await deps.writer.append(session, [
      {
        role: "custom",
        customType: RECOVERED,
        display: false,
        details: { strandedRunId, recovered: delivered, deliveryId, ...(messageId ? { messageId } : {}) },
      },
    ]);
    if (delivered) {
      deps.emit("recovery.delivered", { session, runId: output.runId, strandedRunId });
      return { delivered: true, recovery: null };
    }
    deps.emit("recovery.failed", { session, runId: output.runId, strandedRunId });
    await couldNotDeliver(deps, input, failure);
    return { delivered: false, recovery: null };
  }
  await writeReceipt(deps, session, deliveryId, messageId, failure);
  return { delivered, recovery: null };
}

async function couldNotDeliver(deps: ActorDeps, input: DeliverInput, failure?: SendFailure): Promise<void> {
  const { session, output, recovery } = input;
  const id = `notice:undelivered:${session}:recovery:${recovery?.deliveryId ?? recovery?.strandedRunId ?? output.runId}`;
  const text = failure === "unknown" ? UNCERTAIN_DELIVERY_NOTICE : COULD_NOT_DELIVER_NOTICE;
  const { messageId } = await sendDurably(deps, session, text, "notice", {
    deliveryId: id,
    fallbackId: id,
    runId: output.runId,
    replyTo: recovery?.replyTo,
    thread: recovery?.thread,
  });
  deps.emit("notice.sent", { session, runId: output.runId, delivered: messageId !== undefined });
}
