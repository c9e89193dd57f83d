import { type ControlCommand, parseControl } from "./control.js";

/**
 * What becomes of an inbound message before any session sees it, decided from plain facts: the
 * admission ladder. Order matters: a redelivery is a duplicate even when it is now too long, and a
 * control command acts even while the gateway drains (`/stop` must always work).
 *
 * @example
 * ```ts
 * admit({ text: "/stop", alreadySeen: false, maxMessageChars: 32000, inlineModeInvalid: false, draining: true });
 * // { kind: "control", control: { command: "stop" } }
 * ```
 */
/** The reason of a message turned away because the gateway drains (an HTTP API answers 503 for it). */
export const DRAINING_REASON = "the gateway is draining";

export type Admission =
  | { kind: "duplicate" }
  | { kind: "rejected"; reason: string }
  | { kind: "control"; control: ControlCommand }
  | { kind: "accept" };

export interface AdmissionFacts {
  text: string;
  /** The message id was seen in this session within the dedupe window. */
  alreadySeen: boolean;
  maxMessageChars: number;
  /** The message named an inline queue mode that does not exist (its name, else undefined). */
  unknownInlineMode?: string;
  draining: boolean;
}

export function admit(facts: AdmissionFacts): Admission {
  if (facts.alreadySeen) return { kind: "duplicate" };
  if (facts.text.length > facts.maxMessageChars) {
    return {
      kind: "rejected",
      reason: `the message is ${facts.text.length} characters; the limit is ${facts.maxMessageChars}`,
    };
  }
  if (facts.unknownInlineMode !== undefined) {
    return { kind: "rejected", reason: `unknown queue mode "${facts.unknownInlineMode}"` };
  }
  const control = parseControl(facts.text);
  if (control) return { kind: "control", control };
  if (facts.draining) return { kind: "rejected", reason: DRAINING_REASON };
  return { kind: "accept" };
}
