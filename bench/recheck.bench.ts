/**
 * Re-check benchmark: how well each signal of the stale-reply re-check does on the held-out split of
 * the labelled corpus (test/fixtures/recheck-corpus/), and what one assessment costs.
 *
 * (a) Precision and recall per signal, held-out split only: `low-overlap` (stale drafts against fluent
 *     conversations), `complaint` (complaint phrasings against near-misses and the newest messages of
 *     fluent conversations), and the acknowledgement check of a re-drafted reply. `newer-message` is a
 *     fact of the run (a message reached it after the draft's model call), not a judgement on text.
 * (b) µs per `assessDraft` over every held-out conversation and complaint reply (median of rounds),
 *     and the cost of the turn it guards, measured in the same run: receive → final delivered for a
 *     scripted zero-latency model through the real gateway (system clock, memory store, a channel
 *     that keeps nothing), median over live sessions. The ratio says what share of that turn the
 *     re-check adds.
 *
 * Run alone with `npx tsx bench/recheck.bench.ts`.
 */
import { pathToFileURL } from "node:url";
import { SystemClock } from "../src/adapters/system-clock.js";
import { createGateway } from "../src/gateway/create-gateway.js";
import { silentLogger } from "../src/logger.js";
import {
  acknowledgesComplaint,
  assessDraft,
  compilePatterns,
  DEFAULT_COMPLAINT_PATTERNS,
  type DraftFacts,
  matchComplaint,
} from "../src/policy/stale-reply.js";
import type { Channel, DeliveryReceipt } from "../src/ports/channel.js";
import type { ModelProvider, ModelReply } from "../src/ports/model.js";
import { conversationFacts, loadRecheckCorpus, ofSplit } from "../test/support/recheck-corpus.js";
import { type Figures, median, round } from "./bench-support.js";

const ASSESS_ROUNDS = 60;
const TURN_WARMUP = 300;
const TURNS = 2_000;

const settings = { complaintPatterns: compilePatterns(DEFAULT_COMPLAINT_PATTERNS), minOverlap: 0.2 };

/** Precision, recall and the raw counts of one signal. */
function score(name: string, positives: boolean[], negatives: boolean[]): Figures {
  const caught = positives.filter(Boolean).length;
  const alarms = negatives.filter(Boolean).length;
  return {
    [`${name}.positives`]: positives.length,
    [`${name}.negatives`]: negatives.length,
    [`${name}.precision`]: round(caught / Math.max(1, caught + alarms), 3),
    [`${name}.recall`]: round(caught / Math.max(1, positives.length), 3),
    [`${name}.recall.target`]: ">= 0.95",
    [`${name}.falsePositives`]: alarms,
    [`${name}.falsePositives.target`]: "<= 0",
  };
}

export function benchSignals(): Figures {
  const corpus = loadRecheckCorpus();
  const conversations = ofSplit(corpus.conversations, "heldout");
  const phrasings = ofSplit(corpus.phrasings, "heldout");
  const replies = ofSplit(corpus.acknowledgements, "heldout");
  const lowOverlap = (item: (typeof conversations)[number]) => {
    const verdict = assessDraft(conversationFacts(item), settings);
    return verdict.stale && verdict.reason === "low-overlap";
  };
  const complaint = (text: string) => matchComplaint(text, settings.complaintPatterns) !== undefined;
  return {
    ...score(
      "lowOverlap",
      conversations.filter((item) => item.label === "stale").map(lowOverlap),
      conversations.filter((item) => item.label === "fluent").map(lowOverlap),
    ),
    ...score(
      "complaint",
      phrasings.filter((item) => item.label === "complaint").map((item) => complaint(item.text)),
      [
        ...phrasings.filter((item) => item.label === "near-miss").map((item) => complaint(item.text)),
        ...conversations.map((item) => complaint(item.newest)),
      ],
    ),
    ...score(
      "acknowledgement",
      replies.filter((item) => item.acknowledges).map((item) => acknowledgesComplaint(item.reply)),
      replies.filter((item) => !item.acknowledges).map((item) => acknowledgesComplaint(item.reply)),
    ),
  };
}

/** µs per assessDraft over the held-out conversations and complaint replies. */
export function benchAssessment(): number {
  const corpus = loadRecheckCorpus();
  const facts: DraftFacts[] = [
    ...ofSplit(corpus.conversations, "heldout").map(conversationFacts),
    ...ofSplit(corpus.acknowledgements, "heldout").map((item) => ({
      draft: item.reply,
      newest: item.complaint,
      older: ["When do deploys run?"],
      newerArrived: false,
    })),
  ];
  let stale = 0;
  const perCall: number[] = [];
  for (let round = 0; round < ASSESS_ROUNDS; round++) {
    const t0 = performance.now();
    for (const item of facts) if (assessDraft(item, settings).stale) stale++;
    perCall.push(((performance.now() - t0) * 1000) / facts.length);
  }
  if (stale === 0) throw new Error("no stale verdict: the bench measured nothing");
  return median(perCall.slice(ASSESS_ROUNDS / 4));
}

/** A zero-latency model and a channel that resolves whoever waits for the next delivery. */
class InstantModel implements ModelProvider {
  async complete(): Promise<ModelReply> {
    return { text: "Then take the bus: line 4 stops right outside the museum.", toolCalls: [] };
  }
}

class SignallingChannel implements Channel {
  private counter = 0;
  private waiter: (() => void) | null = null;
  async send(): Promise<DeliveryReceipt> {
    const waiter = this.waiter;
    this.waiter = null;
    waiter?.();
    return { messageId: `out-${++this.counter}` };
  }
  nextSend(): Promise<void> {
    return new Promise((resolve) => {
      this.waiter = resolve;
    });
  }
}

/** µs of wall time from receive() to the final's delivery, for a turn whose model answers at once. */
export async function benchTurn(): Promise<number> {
  const channel = new SignallingChannel();
  const gateway = createGateway({
    model: new InstantModel(),
    channels: { bench: channel },
    clock: new SystemClock(),
    logger: silentLogger,
  });
  await gateway.start();
  const timings: number[] = [];
  for (let i = 0; i < TURN_WARMUP + TURNS; i++) {
    const delivered = channel.nextSend();
    const t0 = performance.now();
    await gateway.receive({
      session: `live:${i % 100}`,
      channel: "bench",
      text: "it's raining",
      id: `m${i}`,
    });
    await delivered;
    if (i >= TURN_WARMUP) timings.push((performance.now() - t0) * 1000);
    // Let the session store its turn and rest before its next message.
    await new Promise((resolve) => setImmediate(resolve));
  }
  await gateway.stop();
  return median(timings);
}

export async function benchRecheck(): Promise<Figures> {
  const signals = benchSignals();
  const assessUs = benchAssessment();
  const turnUs = await benchTurn();
  return {
    ...signals,
    "assessDraft.us": round(assessUs, 2),
    "turn.zeroLatencyModel.us.median": round(turnUs, 1),
    "assessDraft.shareOfTurn": round(assessUs / turnUs, 4),
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const figures = await benchRecheck();
  for (const [key, value] of Object.entries(figures)) console.log(`${key}  ${value}`);
}
