import type { EventObject } from "xstate";
import { type GatewayConfigInput, parseConfig } from "../config.js";
import type { ReviewOutput } from "../machines/commitment.types.js";
import { retryDelay } from "../policy/commitment-review.js";
import type { ScenarioExpect } from "../scenario/expect-schema.js";
import type { Scenario } from "../scenario/schema.js";
import {
  COMMITMENT_GRAPH_EXPIRES_AT,
  COMMITMENT_GRAPH_SUGGESTED,
  type CommitmentGraphSnapshot,
} from "./commitment-graph.js";
import {
  CHANNEL,
  completed,
  DAY_MS,
  FIRST_DUE,
  HEARTBEAT_MS,
  otherCommitment,
  PATH_COMMITMENT,
  PROPOSE_MS,
  proposalRules,
  REQUEST,
  SESSION,
  tickAt,
} from "./commitment-path-stimuli.js";
import type { MachinePath } from "./machine-paths.js";
import type { ScenarioFile } from "./run-path-scenario.js";
import { UnrealizablePathError } from "./session-path-scenario.js";

/** A user message sent to settle it arrives this long before the tick that reviews it. */
const ANSWER_BEFORE_MS = 10_000;
const ANSWER = "Yes, the list looks good to me";
const VOIDING = "One more thing about the list";
const BUSY = "Meanwhile, look up the prices";

type Done = EventObject & { output: ReviewOutput & { delivered?: boolean } };
type Rule = Scenario["model"][number];
type Retry = "backoff" | "nextTick" | "quota";

/**
 * Turns a path of the commitment machine into a scenario that drives the real gateway along it. Turn 1
 * proposes the commitment with the `commitment` tool (due 90 s later, heartbeat every minute); each
 * `commitment.due` is the heartbeat tick that takes it, each review result a scripted review model
 * decision (`when: { review: true, commitment, reviewNumber }`), a user answer sent before the tick (the
 * transcript settles it), or a message arriving mid-review (which voids it); a failed send is a channel
 * fault on that very send (`failSendNumbers`); the daily limit is reached by other commitments of the
 * session reviewed in the same tick; expiry is placed by `commitments.expireAfterMs`; an operator's
 * dismissal is a `dismiss` entry. The `expect` block states the states its actors pass, its events,
 * how it ends and what is delivered.
 *
 * Throws `UnrealizablePathError` for a path the gateway cannot take, saying why.
 */
export function commitmentPathScenario(given: MachinePath, config: GatewayConfigInput = {}): ScenarioFile {
  if (given.machine !== "commitment")
    throw new TypeError(`commitmentPathScenario takes a commitment path, not ${given.machine}`);
  const parsed = parseConfig(config);
  const maxPerDay = parsed.commitments.maxPerDay;
  if (maxPerDay === 0)
    throw new UnrealizablePathError("commitments.maxPerDay is 0: the gateway never reviews a commitment");
  const reviewMs = Math.min(5_000, Math.floor((parsed.commitments.reviewTimeoutMs ?? 120_000) / 2));
  const path = completed(given);
  const notes: string[] = [];
  const inbound: Scenario["inbound"] = [
    { at: 0, session: SESSION, channel: CHANNEL, id: "m1", text: REQUEST },
  ];
  const reviewRules: Rule[] = [];
  const turnRules: Rule[] = [];
  const tools: Scenario["tools"] = {};
  const others: Scenario["commitments"] = [];
  const dismiss: NonNullable<ScenarioFile["dismiss"]> = [];
  const failSendNumbers: number[] = [];
  const events: NonNullable<ScenarioExpect["events"]> = [
    { type: "commitment.created", fields: { id: PATH_COMMITMENT } },
  ];
  const id = { id: PATH_COMMITMENT };

  // Turn 1 answers and the channel sends once.
  let sends = 1;
  let t = 2 * PROPOSE_MS;
  let dueAt = FIRST_DUE;
  let lastTick = 0;
  let beforeTick = 0;
  let attempts = 0;
  let reviews = 0;
  let reviewStart = 0;
  let retry: Retry = "backoff";
  let expiresAt = Number.POSITIVE_INFINITY;
  let followUp = "";
  let dismissedBy: "operator" | "review" | undefined;
  let storeDismissal = false;
  const decide = (reply: Rule["reply"]) => {
    reviews += 1;
    reviewRules.push({ when: { review: true, commitment: PATH_COMMITMENT, reviewNumber: reviews }, reply });
  };
  const decision = (classification: string, text?: string): Rule["reply"] => ({
    delayMs: reviewMs,
    toolCalls: [{ name: "commitment_decision", args: { classification, ...(text ? { text } : {}) } }],
  });

  for (let i = 1; i < path.steps.length; i++) {
    const step = path.steps[i]!;
    const before = path.steps[i - 1]!.snapshot as CommitmentGraphSnapshot;
    const after = step.snapshot as CommitmentGraphSnapshot;
    const isLast = i === path.steps.length - 1;
    const event = step.event as Done & { now?: number; sentInWindow?: number };
    switch (event.type) {
      case "commitment.due": {
        if (event.now! >= COMMITMENT_GRAPH_EXPIRES_AT) {
          // The window closes right after it last waited: the next tick finds it past the window.
          expiresAt = lastTick === 0 ? FIRST_DUE + 1_000 : t + 1;
        }
        const tick = tickAt(Math.min(dueAt, expiresAt), t);
        if (event.sentInWindow! >= maxPerDay) {
          if (others.length > 0)
            throw new UnrealizablePathError(
              "the daily limit is reached twice on this path: the generator fills it once per scenario",
            );
          // Other commitments of the session, due just before it in the same tick, use the day's sends.
          for (let h = 1; h <= maxPerDay; h++) {
            others.push(otherCommitment(h, tick - HEARTBEAT_MS + 1));
            reviewRules.push({
              when: { review: true, commitment: `other-${h}` },
              reply: {
                toolCalls: [
                  {
                    name: "commitment_decision",
                    args: { classification: "still_pending_user", text: `Check-in ${h} on the plan` },
                  },
                ],
              },
            });
            sends += 1;
          }
          notes.push(
            `${maxPerDay} other commitment(s) of the session fall due in the same tick and send first, so it finds the daily limit used.`,
          );
        }
        beforeTick = t;
        t = tick;
        lastTick = tick;
        events.push({ type: "commitment.due", fields: id });
        if (after.matches("waitingToRetry")) {
          retry = "quota";
          events.push({ type: "commitment.retried", fields: { ...id, why: "maxPerDay reached" } });
        } else if (after.matches("expired")) {
          events.push({ type: "commitment.expired", fields: id });
        }
        reviewStart = t;
        break;
      }
      case "commitment.dismiss": {
        if (before.matches("scheduled")) {
          // A turn of the session holds the lane when the tick takes it; the operator dismisses it
          // while its actor waits there, so the actor never starts.
          const tick = tickAt(dueAt, t);
          inbound.push({ at: tick - 1_000, session: SESSION, channel: CHANNEL, id: "busy", text: BUSY });
          turnRules.push(
            {
              when: { review: false, latestUser: BUSY, call: 1 },
              reply: { delayMs: 100, toolCalls: [{ name: "look_up" }] },
            },
            {
              when: { review: false, latestUser: BUSY, call: 2 },
              reply: { delayMs: 100, text: "Prices attached." },
            },
          );
          tools.look_up = { durationMs: 10_000, cancellable: false, result: "prices" };
          t = tick + 1_000;
          storeDismissal = true;
          notes.push(
            "A turn of the session holds its lane when the tick takes the commitment; the operator dismisses it while its actor waits for the lane, so the actor never starts and the dismissal ends it in the store.",
          );
        } else if (before.matches("reviewing")) {
          t = reviewStart + Math.floor(reviewMs / 2);
          decide(decision("unclear"));
        } else {
          // The gateway stops the actor that waits to retry; the commitment waits in the due index.
          t += 1_000;
          storeDismissal = true;
          notes.push(
            "The gateway stops a commitment's actor when it waits to retry; the operator's dismissal then ends the stored commitment, and no actor passes `dismissed`.",
          );
        }
        dismiss.push({ at: t, id: PATH_COMMITMENT });
        dismissedBy = "operator";
        events.push({ type: "commitment.dismissed", fields: { ...id, why: "operator" } });
        break;
      }
      case "xstate.done.actor.review": {
        const output = event.output;
        if (output.sentInWindow >= maxPerDay)
          throw new UnrealizablePathError(
            "a review that finds the daily limit used: the gateway checks the limit when the commitment falls due, and a session's reviews run one at a time in its lane, so no send can come between",
          );
        let reviewed: Record<string, string | boolean> = {
          classification: output.classification,
          via: "model",
        };
        if (output.voided) {
          decide(decision("unclear"));
          const at = reviewStart + Math.floor(reviewMs / 2);
          const n = inbound.length;
          inbound.push({
            at,
            session: SESSION,
            channel: CHANNEL,
            id: `m${n + 1}`,
            text: `${VOIDING} (${n})`,
          });
          turnRules.push({
            when: { review: false, latestUser: `${VOIDING} (${n})` },
            reply: { delayMs: 100, text: "" },
          });
          t = at;
          retry = "nextTick";
          reviewed = { via: "none", voided: true };
          notes.push(
            "A user message arrives during a review and voids it; that turn answers with silence, so the transcript does not settle the commitment.",
          );
        } else if (output.via === "transcript") {
          const at = reviewStart - ANSWER_BEFORE_MS;
          if (at <= beforeTick)
            throw new UnrealizablePathError("no room for the user's answer before the review");
          const n = inbound.length;
          inbound.push({ at, session: SESSION, channel: CHANNEL, id: `m${n + 1}`, text: `${ANSWER} (${n})` });
          turnRules.push({
            when: { review: false, latestUser: `${ANSWER} (${n})` },
            reply: { delayMs: 100, text: "Great, I will keep it as it is." },
          });
          sends += 1;
          reviewed = { classification: output.classification, via: "transcript" };
        } else {
          if (output.at >= COMMITMENT_GRAPH_EXPIRES_AT) expiresAt = reviewStart + Math.floor(reviewMs / 2);
          const text = output.text || undefined;
          decide(decision(output.classification, text));
          t = reviewStart + reviewMs;
          if (text !== undefined && text === COMMITMENT_GRAPH_SUGGESTED) {
            // The gateway refuses a follow-up that repeats the stored suggestion: no decision.
            reviewed = { classification: "unclear", via: "model" };
            notes.push(
              "The review model answers with the stored suggestion as its text; the gateway refuses it as no decision (unclear).",
            );
          }
          if (text !== undefined) followUp = text;
        }
        events.push({ type: "commitment.reviewed", fields: { ...id, ...reviewed } });
        if (after.matches("waitingToRetry")) {
          if (!output.voided) retry = "backoff";
          const why =
            reviewed.voided === true
              ? "a user message arrived during the review"
              : output.text === COMMITMENT_GRAPH_SUGGESTED
                ? "the text is the stored suggestion, not composed from the current state"
                : undefined;
          events.push({ type: "commitment.retried", fields: { ...id, ...(why ? { why } : {}) } });
        } else if (after.matches("dismissed")) {
          dismissedBy = "review";
          events.push({ type: "commitment.dismissed", fields: { ...id, why: output.classification } });
        } else if (after.matches("expired")) {
          events.push({ type: "commitment.expired", fields: id });
        }
        break;
      }
      case "xstate.done.actor.send": {
        sends += 1;
        if (event.output.delivered) {
          events.push({ type: "commitment.sent", fields: { ...id, text: followUp } });
        } else {
          failSendNumbers.push(sends);
          retry = "nextTick";
          events.push({
            type: "commitment.retried",
            fields: { ...id, why: "send failed: the channel did not commit the send" },
          });
          notes.push(
            `The channel fails send ${sends}, the follow-up; it is reviewed again at the next tick.`,
          );
        }
        break;
      }
      case "xstate.error.actor.review":
        throw new UnrealizablePathError(
          "a review that fails: the gateway's review never fails, a model error or a timeout is a review without a decision (unclear), which the `review unclear` paths take",
        );
      case "xstate.error.actor.send":
        throw new UnrealizablePathError(
          "a send that fails: the send fails only when the store cannot write, and a scenario's store does not fail; a channel failure is `send not committed`",
        );
      default:
        break;
    }
    if (after.matches("waitingToRetry") && !isLast) {
      // Where the gateway puts it back in the due index (commitment-heartbeat's retried()).
      if (retry === "backoff") {
        attempts += 1;
        dueAt = Math.min(t + retryDelay(attempts, HEARTBEAT_MS), expiresAt);
      } else if (retry === "quota") dueAt = Math.min(Math.max(t, lastTick + DAY_MS), expiresAt);
      else dueAt = t;
    }
  }

  const last = path.steps[path.steps.length - 1]!.snapshot as CommitmentGraphSnapshot;
  const status = String(last.value) as "sent" | "dismissed" | "expired";
  const sent = status === "sent";
  const classification = sent
    ? followUpClassification(path)
    : dismissedBy === "review"
      ? lastReview(path)?.classification
      : undefined;
  const values = dedupe(path.states);
  if (storeDismissal && values[values.length - 1] === "dismissed") values.pop();
  // An actor that never started shows no state: only its events and its end can be stated.
  const neverStarted = storeDismissal && values.length === 1;
  const expect: ScenarioExpect = {
    ...(neverStarted
      ? {}
      : { states: [{ machine: "commitment", commitment: PATH_COMMITMENT, turn: 1, values }] }),
    events,
    commitments: [{ id: PATH_COMMITMENT, status, ...(classification ? { classification } : {}) }],
    deliveries: sent ? [{ kind: "commitment", session: SESSION, text: followUp }] : [],
    deliveryCount: { count: others.length + (sent ? 1 : 0), kind: "commitment" },
  };
  if (neverStarted) expect.noEvents = ["commitment.due"];
  else if (!sent && others.length === 0) expect.noEvents = ["commitment.sent"];
  const expireAfterMs = (expiresAt === Number.POSITIVE_INFINITY ? t + 7 * DAY_MS : expiresAt) - FIRST_DUE;
  const commitments = config.commitments ?? {};
  return {
    name: `commitment path: ${given.name}`,
    ...(notes.length > 0 ? { description: [...new Set(notes)].join(" ") } : {}),
    config: {
      ...config,
      commitments: {
        ...commitments,
        enabled: true,
        expireAfterMs,
        ...(others.length > 0 ? { maxPerTick: Math.max(commitments.maxPerTick ?? 3, maxPerDay + 1) } : {}),
      },
      heartbeat: { everyMs: HEARTBEAT_MS },
    } as Scenario["config"],
    model: [
      ...reviewRules,
      { when: { review: true }, reply: decision("unclear") },
      ...proposalRules(),
      ...turnRules,
      { when: { review: false }, reply: { delayMs: 100, text: "Noted." } },
    ],
    tools,
    channels: {
      [CHANNEL]: {
        failSends: 0,
        omitMessageId: false,
        ...(failSendNumbers.length > 0 ? { failSendNumbers } : {}),
      },
    },
    inbound,
    commitments: others,
    restart: [],
    ...(dismiss.length > 0 ? { dismiss } : {}),
    expect,
  };
}

function lastReview(path: MachinePath): ReviewOutput | undefined {
  return (
    path.steps.findLast((step) => step.event.type === "xstate.done.actor.review")?.event as Done | undefined
  )?.output;
}

function followUpClassification(path: MachinePath): string | undefined {
  return lastReview(path)?.classification;
}

function dedupe(values: readonly string[]): string[] {
  return values.filter((value, index) => value !== values[index - 1]);
}
