import { fromPromise } from "xstate";
import { errorMessage } from "../errors.js";
import type { Commitment, SendInput, SendOutput } from "../machines/commitment.types.js";
import { CHECK_IN_RUN_PREFIX } from "../policy/commitment-review.js";
import { send } from "./deliver.js";
import type { ActorDeps } from "./deps.js";
import { untilStored } from "./store-retry.js";

/** The part of the commitment book a send writes through: the daily count and ordered updates. */
export interface CommitmentLedger {
  sentInWindow(session: string, now: number): number;
  /** An older commitment of the same session and dedupe key that is pending, being sent or sent. */
  duplicateOf(id: string): Commitment | undefined;
  update(
    id: string,
    change: (current: Commitment | undefined) => Commitment | undefined,
  ): Promise<Commitment>;
}

export interface SendGate {
  /** Whether a message arrived for the session since the review decided. */
  arrivedSinceDecision(id: string, session: string): boolean;
  maxPerDay: number;
}

/**
 * Sends a reviewed follow-up at most once (docs/commitments.md): a durable `sending` intent is written before
 * the channel is called and the outcome after it, so a crash in between leaves the intent, which a
 * restart settles as sent with an unknown receipt and never sends again. A committed receipt makes the
 * commitment `sent` and appends the text to the transcript as an assistant record; a failed send
 * clears the intent and leaves it pending for the next tick. A message that arrived since the review
 * decided, or a daily limit reached meanwhile, sends nothing. What is written after the channel was
 * called (the outcome, the transcript's record) is held and tried again while the store cannot be
 * reached: a send whose outcome was lost would be offered to the channel again at a later tick (only a
 * channel that deduplicates on the deliveryId keeps it from showing twice).
 */
export function createSendCommitment(deps: ActorDeps, book: CommitmentLedger, gate: SendGate) {
  return fromPromise<SendOutput, SendInput>(async ({ input, signal }) => {
    const { commitment, text } = input;
    const { session, id } = commitment;
    const notSent = (reason: string): SendOutput => ({ delivered: false, reason, at: deps.clock.now() });
    if (gate.arrivedSinceDecision(id, session)) return notSent("a user message arrived after the review");
    if (book.sentInWindow(session, deps.clock.now()) >= gate.maxPerDay) return notSent("maxPerDay reached");
    const original = book.duplicateOf(id);
    if (original) return notSent(`a duplicate of ${original.id} (same dedupeKey)`);
    const intent = await book.update(id, (current) =>
      current?.status === "pending" && !current.sending
        ? { ...current, sending: { at: deps.clock.now(), text }, updatedAt: deps.clock.now() }
        : undefined,
    );
    if (intent.sending?.text !== text) return notSent(`it is ${intent.status} now`);
    const runId = `${CHECK_IN_RUN_PREFIX}${id}`;
    const messageId = await send(deps, session, text, "commitment", {
      runId,
      deliveryId: `commitment:${id}`,
    });
    const at = deps.clock.now();
    const held = <T>(op: string, write: () => Promise<T>) =>
      untilStored(deps, { session, op: `commitment-${op}` }, write, signal);
    if (!messageId) {
      await held("outcome", () =>
        book.update(id, (current) => (current ? withoutIntent(current, at) : undefined)),
      );
      return notSent("the channel did not commit the send");
    }
    await held("outcome", () =>
      book.update(id, (current) =>
        current
          ? {
              ...withoutIntent(current, at),
              status: "sent",
              ...(input.classification ? { classification: input.classification } : {}),
              sent: { at, text, receipt: "committed", messageId },
              endedAt: at,
            }
          : undefined,
      ),
    );
    try {
      await held("record", () =>
        deps.writer.append(session, [
          { role: "assistant", text, runId, delivered: true, deliveryMessageId: messageId },
        ]),
      );
    } catch (error) {
      // The user has it and the commitment says so; only the transcript lacks the record.
      deps.logger.error({ session, id, error: errorMessage(error) }, "commitment.storeFailed");
      deps.emit("commitment.storeFailed", { session, id, error: errorMessage(error) });
    }
    return { delivered: true, messageId, at };
  });
}

function withoutIntent(commitment: Commitment, at: number): Commitment {
  const { sending: _sending, ...rest } = commitment;
  return { ...rest, updatedAt: at };
}
