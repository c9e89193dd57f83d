import type { TillerEvent } from "../../events.js";
import type { Commitment } from "../../machines/commitment.types.js";

/** What `explainCommitment()` answers: the stored record and its story, oldest first. */
export interface CommitmentStory {
  commitment: Commitment;
  timeline: Array<{ at: number; what: string }>;
}

const MAX_COMMITMENTS = 10_000;
const MAX_EVENTS = 50;

/**
 * The story of each commitment: from its stored record (which survives restarts: created, sent,
 * ended) and the `commitment.*` events this process saw (due, reviewed, retried, ...). Bounded: the
 * last 50 events of the 10,000 commitments most recently touched.
 *
 * @example
 * ```ts
 * const log = new StoryLog();
 * log.observe({ at: 5, type: "commitment.due", id: "c1", attempt: 1 });
 * log.story(commitment).timeline; // [{ at: 0, what: "created ..." }, { at: 5, what: "due (review 1)" }]
 * ```
 */
export class StoryLog {
  private readonly events = new Map<string, Array<{ at: number; what: string }>>();

  observe(event: TillerEvent): void {
    const id = "id" in event && typeof event.id === "string" ? event.id : undefined;
    if (!id) return;
    const what = describe(event);
    if (!what) return;
    let list = this.events.get(id);
    if (list) this.events.delete(id);
    else list = [];
    this.events.set(id, list);
    list.push({ at: event.at, what });
    if (list.length > MAX_EVENTS) list.shift();
    if (this.events.size > MAX_COMMITMENTS) this.events.delete(this.events.keys().next().value!);
  }

  story(commitment: Commitment): CommitmentStory {
    const timeline: CommitmentStory["timeline"] = [
      {
        at: commitment.createdAt,
        what: `created (${commitment.kind}, from ${commitment.source}${commitment.sourceMessageId ? `, after message ${commitment.sourceMessageId}` : ""}), due from ${commitment.dueWindow.earliestAt} to ${commitment.dueWindow.latestAt}`,
      },
    ];
    const seen = this.events.get(commitment.id) ?? [];
    timeline.push(...seen.filter((entry) => !entry.what.startsWith("created")));
    const ended = commitment.endedAt ?? commitment.updatedAt;
    const last = seen.at(-1)?.what ?? "";
    if (commitment.status === "sent" && commitment.sent && !last.startsWith("sent"))
      timeline.push({
        at: commitment.sent.at,
        what: sentLine(commitment.sent.receipt, commitment.sent.text),
      });
    if (commitment.status === "dismissed" && !last.startsWith("dismissed"))
      timeline.push({ at: ended, what: `dismissed (${commitment.dismissedWhy ?? "?"})` });
    if (commitment.status === "expired" && !last.startsWith("expired"))
      timeline.push({ at: ended, what: "expired: its window passed with nothing sent" });
    if (commitment.status === "pending")
      timeline.push({
        at: commitment.dueAt,
        what: `pending: next review at ${commitment.dueAt} (${commitment.attempts} without a decision so far)`,
      });
    return { commitment, timeline: timeline.sort((a, b) => a.at - b.at) };
  }
}

function sentLine(receipt: string, text: string): string {
  return receipt === "unknown"
    ? `sent? a restart found the send cut off; never sent again: ${JSON.stringify(text)}`
    : `sent: ${JSON.stringify(text)}`;
}

function describe(event: TillerEvent): string | undefined {
  switch (event.type) {
    case "commitment.created":
      return "created";
    case "commitment.merged":
      return "merged with a newer proposal of the same dedupeKey";
    case "commitment.due":
      return `due (review ${String(event.attempt)})`;
    case "commitment.reviewed":
      return `reviewed: ${String(event.classification)} (${event.via === "transcript" ? "settled by the transcript, no model call" : event.via === "model" ? "model review" : "no review"})${event.voided ? ", void: a user message arrived" : ""}`;
    case "commitment.sent":
      return sentLine("committed", String(event.text ?? ""));
    case "commitment.sendInterrupted":
      return sentLine("unknown", String(event.text ?? ""));
    case "commitment.dismissed":
      return `dismissed (${String(event.why)})`;
    case "commitment.retried":
      return `to be reviewed again: ${String(event.why)}`;
    case "commitment.expired":
      return "expired: its window passed with nothing sent";
    case "commitment.deferred":
      return `deferred: ${String(event.reason)}`;
    default:
      return undefined;
  }
}
