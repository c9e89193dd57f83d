import { assign, emit, fromPromise, setup } from "xstate";
import { isStillPending, maySend } from "../policy/commitment-review.js";
import type {
  CommitmentContext,
  CommitmentEmitted,
  CommitmentEvent,
  CommitmentInput,
  CommitmentOutput,
  ReviewOutput,
  SendInput,
  SendOutput,
} from "./commitment.types.js";

export type * from "./commitment.types.js";

type Done<T> = { output: T };
const reviewOf = (event: unknown) => (event as Done<ReviewOutput>).output;
const sendOf = (event: unknown) => (event as Done<SendOutput>).output;

/**
 * One commitment that fell due (the thousands merely pending live in the gateway's due index, not as
 * actors).
 *
 * `scheduled` waits for `commitment.due` (a heartbeat tick took it from the index). `due` expires it
 * when it is past its window, sends it back to wait when the session used its daily sends, and else
 * starts `reviewing`: the gateway's review reads the conversation since the source message (in the
 * session's lane) and classifies it, with or without a model call. A still-pending decision within the
 * daily limit moves to `sending`; `completed` / `superseded` end in `dismissed`; no decision (unclear,
 * an error, a user message that voided it) waits to retry, or expires once the window has passed.
 * `sending` ends in `sent` when the channel's receipt comes back, and waits to retry when it does not.
 * `waitingToRetry` is where the gateway puts the commitment back in the index and stops the actor; the
 * next due tick starts from `due` again. Every transition emits its `commitment.*` event.
 */
export const commitmentMachine = setup({
  types: {} as {
    input: CommitmentInput;
    context: CommitmentContext;
    events: CommitmentEvent;
    emitted: CommitmentEmitted;
    output: CommitmentOutput;
  },
  actors: {
    review: fromPromise<ReviewOutput, CommitmentInput["commitment"]>(async () => {
      throw new Error("review is provided by the gateway");
    }),
    send: fromPromise<SendOutput, SendInput>(async () => {
      throw new Error("send is provided by the gateway");
    }),
  },
  guards: {
    pastWindow: ({ context }) => context.now >= context.commitment.expiresAt,
    overQuota: ({ context }) => context.sentInWindow >= context.maxPerDay,
    voided: ({ event }) => reviewOf(event).voided,
    settled: ({ event }) => {
      const output = reviewOf(event);
      return output.classification === "completed" || output.classification === "superseded";
    },
    sendable: ({ context, event }) =>
      maySend(reviewOf(event), context.commitment, reviewOf(event).sentInWindow, context.maxPerDay),
    pendingButOverQuota: ({ context, event }) =>
      isStillPending(reviewOf(event).classification) &&
      reviewOf(event).via === "model" &&
      reviewOf(event).sentInWindow >= context.maxPerDay,
    reviewedPastWindow: ({ context, event }) => reviewOf(event).at >= context.commitment.expiresAt,
    failedPastWindow: ({ context }) => context.now >= context.commitment.expiresAt,
    delivered: ({ event }) => sendOf(event).delivered,
  },
  actions: {
    noteDue: assign(({ event, context }) =>
      event.type === "commitment.due" ? { now: event.now, sentInWindow: event.sentInWindow } : context,
    ),
    noteReview: assign(({ event }) => {
      const output = reviewOf(event);
      return {
        now: output.at,
        sentInWindow: output.sentInWindow,
        classification: output.classification,
        text: output.text,
        why: output.why ?? "",
        retry: "backoff" as const,
      };
    }),
    noteWhy: assign((_, params: { why: string; retry: CommitmentContext["retry"] }) => ({
      why: params.why,
      retry: params.retry,
    })),
    noteVoided: assign(({ event }) => ({
      why: reviewOf(event).why || "a user message arrived during the review",
      retry: "nextTick" as const,
    })),
    noteDismissed: assign(({ event }) => ({
      why: event.type === "commitment.dismiss" ? event.why : String(reviewOf(event).classification),
    })),
    noteFailure: assign(({ event }) => ({
      retry: "backoff" as const,
      why: `review failed: ${String((event as { error?: { message?: unknown } }).error?.message ?? "error")}`,
    })),
    noteSendFailure: assign(({ event }) => ({
      retry: "nextTick" as const,
      why: `send failed: ${sendOf(event)?.reason ?? String((event as { error?: { message?: unknown } }).error?.message ?? "error")}`,
    })),
    emitDue: emit(({ context }) => ({
      type: "commitment.due" as const,
      id: context.commitment.id,
      session: context.commitment.session,
      attempt: context.commitment.attempts + 1,
    })),
    emitReviewed: emit(({ context, event }) => ({
      type: "commitment.reviewed" as const,
      id: context.commitment.id,
      session: context.commitment.session,
      classification: reviewOf(event).classification,
      via: reviewOf(event).via,
      voided: reviewOf(event).voided,
    })),
    emitSent: emit(({ context, event }) => ({
      type: "commitment.sent" as const,
      id: context.commitment.id,
      session: context.commitment.session,
      messageId: sendOf(event).messageId ?? "",
      text: context.text,
    })),
    emitDismissed: emit(({ context }) => ({
      type: "commitment.dismissed" as const,
      id: context.commitment.id,
      session: context.commitment.session,
      why: context.why,
    })),
    emitRetried: emit(({ context }) => ({
      type: "commitment.retried" as const,
      id: context.commitment.id,
      session: context.commitment.session,
      why: context.why,
      attempt: context.commitment.attempts + 1,
    })),
    emitExpired: emit(({ context }) => ({
      type: "commitment.expired" as const,
      id: context.commitment.id,
      session: context.commitment.session,
    })),
  },
}).createMachine({
  id: "commitment",
  context: ({ input }) => ({
    commitment: input.commitment,
    now: input.now,
    maxPerDay: input.maxPerDay,
    sentInWindow: input.sentInWindow,
    classification: null,
    text: "",
    why: "",
    retry: "backoff",
  }),
  initial: "scheduled",
  output: ({ context }) => ({
    retry: context.retry,
    classification: context.classification,
    why: context.why,
    text: context.text,
  }),
  states: {
    scheduled: {
      description: "Taken from the due index; waits for the heartbeat's `commitment.due`.",
      on: {
        "commitment.due": { target: "due", actions: "noteDue" },
        "commitment.dismiss": { target: "dismissed", actions: "noteDismissed" },
      },
    },
    due: {
      description: "Due now: expires past its window, waits when the session used its daily sends.",
      entry: "emitDue",
      always: [
        { guard: "pastWindow", target: "expired" },
        {
          guard: "overQuota",
          target: "waitingToRetry",
          actions: { type: "noteWhy", params: { why: "maxPerDay reached", retry: "quota" } },
        },
        { target: "reviewing" },
      ],
    },
    reviewing: {
      description:
        "The gateway's review, in the session's lane at background priority: the transcript may settle it, else a review model call classifies it.",
      invoke: {
        id: "review",
        src: "review",
        input: ({ context }) => context.commitment,
        onDone: [
          {
            guard: "voided",
            target: "waitingToRetry",
            actions: ["noteReview", "emitReviewed", "noteVoided"],
            description: "A user message arrived meanwhile: the decision is void; it is reviewed again.",
          },
          { guard: "settled", target: "dismissed", actions: ["noteReview", "emitReviewed", "noteDismissed"] },
          { guard: "sendable", target: "sending", actions: ["noteReview", "emitReviewed"] },
          {
            guard: "pendingButOverQuota",
            target: "waitingToRetry",
            actions: [
              "noteReview",
              "emitReviewed",
              { type: "noteWhy", params: { why: "maxPerDay reached", retry: "quota" } },
            ],
          },
          {
            guard: "reviewedPastWindow",
            target: "expired",
            actions: ["noteReview", "emitReviewed"],
            description: "No decision and the window has passed: nothing is ever sent.",
          },
          {
            target: "waitingToRetry",
            actions: ["noteReview", "emitReviewed"],
            description: "No usable decision (unclear, none, or a text that may not be sent): retry later.",
          },
        ],
        onError: [
          { guard: "failedPastWindow", target: "expired", actions: "noteFailure" },
          { target: "waitingToRetry", actions: "noteFailure" },
        ],
      },
      on: { "commitment.dismiss": { target: "dismissed", actions: "noteDismissed" } },
    },
    sending: {
      description:
        "Writes the durable intent, sends the review's text through the session's channel, stores the outcome.",
      invoke: {
        id: "send",
        src: "send",
        input: ({ context }) => ({
          commitment: context.commitment,
          text: context.text,
          classification: context.classification,
        }),
        onDone: [
          { guard: "delivered", target: "sent", actions: "emitSent" },
          { target: "waitingToRetry", actions: "noteSendFailure" },
        ],
        onError: { target: "waitingToRetry", actions: "noteSendFailure" },
      },
    },
    waitingToRetry: {
      description: "Back in the due index until a later tick; the next `commitment.due` reviews it again.",
      entry: "emitRetried",
      on: {
        "commitment.due": { target: "due", actions: "noteDue" },
        "commitment.dismiss": { target: "dismissed", actions: "noteDismissed" },
      },
    },
    sent: { type: "final", description: "The follow-up reached the user (a committed receipt)." },
    dismissed: {
      type: "final",
      entry: "emitDismissed",
      description: "Settled (completed, superseded) or dismissed by an operator; nothing sent.",
    },
    expired: { type: "final", entry: "emitExpired", description: "Its window passed; nothing sent." },
  },
});
