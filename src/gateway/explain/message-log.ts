import type { TillerEvent, TillerEventOf } from "../../events.js";
import { type Sender, senderLabel } from "../../policy/sender.js";
import type { TranscriptRecord } from "../../ports/store.js";
import { storyFromTranscript } from "./durable-story.js";

/**
 * "What happened to my message?" (issue: explain), built only from the event stream: when it arrived,
 * its mode and where that came from, where it waited, which model call first saw it, which reply
 * answered it and whether that reply reached the user.
 */
export interface MessageExplanation {
  session: string;
  messageId: string;
  arrivedAt: number;
  disposition: string;
  mode: string;
  modeSource: string;
  ackText: string;
  /** Who wrote it, when the channel said (group chats). */
  sender?: Sender;
  /** Where it waited, in order: "steer buffer of run X", "queue", "collect window", ... */
  waited: Array<{ where: string; from: number; until?: number }>;
  firstSeenBy?: { runId: string; call: number; at: number; recheck: boolean };
  answeredBy?: { runId: string; delivered: boolean; at: number };
  dropped?: { reason: string; at: number };
  /**
   * Tokens of the model calls made while a turn owned this message (from the call that first saw it),
   * summed, when the provider reported usage; `calls` is how many calls reported it.
   */
  usage?: { inputTokens: number; outputTokens: number; calls: number };
  /** Child turns a tool of the turn that owns this message ran (`context.runSubagent`), in order. */
  subagents?: Array<{ session: string; startedAt: number; status?: string; endedAt?: number }>;
  timeline: Array<{ at: number; what: string }>;
}

const MAX_PER_SESSION = 500;
/** Runs whose messages are remembered until their final (far more than can run at once). */
const MAX_RUNS = 10_000;

type Entry = MessageExplanation;

/**
 * The explanations of recent messages, bounded: each session keeps its last 500, and past `maxMessages`
 * in all, the sessions least recently touched are forgotten whole (a long-running gateway sees
 * sessions come and go; it must not keep every one it ever saw).
 */
export class MessageLog {
  /** Sessions in the order they were last touched, oldest first. */
  private readonly bySession = new Map<string, Map<string, Entry>>();
  /** runId → message ids the run owns, to attribute model calls and finals. */
  private readonly runMessages = new Map<string, Set<string>>();
  /** Messages held, across sessions. */
  private total = 0;
  /** runId of a final that did not reach the user → the messages it answers (a recovery may deliver it). */
  private readonly stranded = new Map<string, { session: string; ids: string[] }>();
  /**
   * Entries noted before their ack (a turn can start, and call the model, inside `receive`). A set
   * rather than a flag deleted from the entry: a `delete` turns the entry into a dictionary of several
   * hundred bytes, and the log holds tens of thousands of entries.
   */
  private readonly unacked = new WeakSet<Entry>();

  /** `turn.started` events not noted yet, in order (see `observe`). */
  private starts: Array<TillerEventOf<"turn.started">> = [];

  constructor(private readonly maxMessages = 20_000) {}

  private readonly noteStarts = (): void => {
    const starts = this.starts;
    if (starts.length === 0) return;
    this.starts = [];
    for (const event of starts) {
      for (const id of event.messageIds) {
        this.claim(event.runId, id);
        this.note(event.session, id, event.at, `turn ${event.runId} started with it`, (entry) =>
          closeWait(entry, event.at),
        );
      }
    }
  };

  observe(event: TillerEvent): void {
    const session = event.session;
    if (!session) return;
    // A turn starts in the step that calls the model: it is noted just after (at the end of the step,
    // or before the next event or read, whichever comes first), not on the way to the call.
    if (event.type === "turn.started") {
      if (this.starts.length === 0) queueMicrotask(this.noteStarts);
      this.starts.push(event);
      return;
    }
    if (this.starts.length > 0) this.noteStarts();
    switch (event.type) {
      case "message.acked":
        this.acked(session, event);
        return;
      case "steer.injected":
        for (const id of event.messageIds) {
          this.claim(event.runId, id);
          this.note(
            session,
            id,
            event.at,
            `injected into run ${event.runId} before its next model call`,
            (entry) => closeWait(entry, event.at),
          );
        }
        return;
      case "model.called":
        for (const id of event.messageIds) {
          this.note(session, id, event.at, `seen by model call ${event.call} of ${event.runId}`, (entry) => {
            entry.firstSeenBy ??= {
              runId: event.runId,
              call: event.call,
              at: event.at,
              recheck: event.recheck,
            };
          });
        }
        return;
      case "model.ended": {
        const usage = event.usage;
        if (!usage || event.review) return;
        for (const id of this.runMessages.get(event.runId) ?? []) {
          this.note(
            session,
            id,
            event.at,
            `model call ${event.call} of ${event.runId} used ${usage.inputTokens} input and ${usage.outputTokens} output tokens`,
            (entry) => {
              const sum = entry.usage ?? { inputTokens: 0, outputTokens: 0, calls: 0 };
              entry.usage = {
                inputTokens: sum.inputTokens + usage.inputTokens,
                outputTokens: sum.outputTokens + usage.outputTokens,
                calls: sum.calls + 1,
              };
            },
          );
        }
        return;
      }
      case "subagent.started":
      case "subagent.ended": {
        const child = String(event.child);
        const started = event.type === "subagent.started";
        for (const id of this.runMessages.get(String(event.runId)) ?? []) {
          this.note(
            session,
            id,
            event.at,
            started ? `subagent ${child} started` : `subagent ${child} ended: ${String(event.status)}`,
            (entry) => {
              entry.subagents ??= [];
              const known = entry.subagents.find((sub) => sub.session === child);
              if (started && !known) entry.subagents.push({ session: child, startedAt: event.at });
              if (!started && known)
                Object.assign(known, { status: String(event.status), endedAt: event.at });
            },
          );
        }
        return;
      }
      case "turn.ended": {
        if (event.status === "done") return; // its final.* event tells the end of the story
        const why =
          event.status === "failed"
            ? `failed: ${event.error?.message ?? "unknown error"}`
            : `${event.status}: ${event.reason ?? "aborted"}`;
        for (const id of this.runMessages.get(event.runId) ?? [])
          this.note(session, id, event.at, `turn ${event.runId} ${why}`);
        this.runMessages.delete(event.runId);
        return;
      }
      case "recovery.delivered": {
        const stranded = this.stranded.get(String(event.strandedRunId));
        if (!stranded) return;
        this.stranded.delete(String(event.strandedRunId));
        for (const id of stranded.ids)
          this.note(stranded.session, id, event.at, `delivered by the recovery ${event.runId}`, (entry) => {
            if (entry.answeredBy) entry.answeredBy.delivered = true;
          });
        return;
      }
      case "final.delivered":
      case "final.undelivered":
      case "final.silent":
        if (event.type === "final.undelivered") {
          const ids = [...(this.runMessages.get(String(event.runId)) ?? [])];
          this.remember(String(event.runId), { session, ids });
        }
        for (const id of this.runMessages.get(String(event.runId)) ?? []) {
          const delivered = event.type === "final.delivered";
          this.note(
            session,
            id,
            event.at,
            `answered by ${event.runId}: ${delivered ? "delivered" : "not delivered"}`,
            (entry) => {
              entry.answeredBy = { runId: event.runId, delivered, at: event.at };
            },
          );
        }
        this.runMessages.delete(event.runId);
        return;
      case "message.dropped":
        this.note(session, event.messageId, event.at, `dropped: ${event.reason}`, (entry) => {
          entry.dropped = { reason: event.reason, at: event.at };
        });
        return;
    }
  }

  /**
   * Learns what the transcript holds about messages this process never saw (it restarted): each stored
   * user message, which final answered it and whether the user got it. Messages it knows are kept.
   */
  seed(session: string, records: readonly TranscriptRecord[]): void {
    this.noteStarts();
    const stories = storyFromTranscript(records);
    if (stories.size === 0) return;
    const messages = this.touch(session);
    for (const [id, story] of stories) {
      if (messages.has(id)) continue;
      const entry = this.entry(messages, session, id, story.arrivedAt);
      this.unacked.delete(entry);
      entry.disposition = "accepted";
      entry.mode = "unknown";
      entry.modeSource = "unknown";
      entry.ackText = "accepted before the gateway restarted (told from the transcript)";
      entry.timeline.push({ at: story.arrivedAt, what: "arrived and was stored (before a restart)" });
      if (story.answeredBy) {
        entry.answeredBy = story.answeredBy;
        entry.timeline.push({
          at: story.answeredBy.at,
          what: `answered by ${story.answeredBy.runId}: ${story.answeredBy.delivered ? "delivered" : "not delivered"}`,
        });
        if (!story.answeredBy.delivered)
          this.remember(story.answeredBy.runId, { session, ids: [id], merge: true });
      } else if (story.sendingRun) this.claim(story.sendingRun, id);
    }
  }

  private remember(runId: string, stranded: { session: string; ids: string[]; merge?: boolean }): void {
    const known = stranded.merge ? this.stranded.get(runId) : undefined;
    this.stranded.set(runId, { session: stranded.session, ids: [...(known?.ids ?? []), ...stranded.ids] });
    if (this.stranded.size > MAX_RUNS) this.stranded.delete(this.stranded.keys().next().value!);
  }

  explain(session: string, messageId: string): MessageExplanation | undefined {
    this.noteStarts();
    const entry = this.bySession.get(session)?.get(messageId);
    if (!entry || this.unacked.has(entry)) return undefined;
    return structuredClone(entry);
  }

  private acked(session: string, event: TillerEventOf<"message.acked">): void {
    const id = event.messageId;
    const messages = this.touch(session);
    const early = messages.get(id);
    if (early && !this.unacked.has(early)) {
      this.note(session, id, event.at, `redelivered: acked ${event.disposition}`);
      return;
    }
    const entry = early ?? this.entry(messages, session, id, event.at);
    this.unacked.delete(entry);
    entry.disposition = event.disposition;
    entry.mode = event.mode;
    entry.modeSource = event.modeSource;
    entry.ackText = event.text;
    const sender = event.sender as Sender | undefined;
    if (sender) entry.sender = sender;
    entry.timeline = withItem(
      entry.timeline,
      {
        at: entry.arrivedAt,
        what: flat(
          `arrived${sender ? ` from ${senderLabel(sender)}` : ""}; ${event.disposition} (mode ${event.mode} from ${event.modeSource})`,
        ),
      },
      true,
    );
    // A wait the turn already ended (it started, or saw the message, before the ack) is closed at once.
    const waitsFor = event.waitsFor;
    const seen = early !== undefined && early.timeline.length > 1;
    if (waitsFor)
      entry.waited.push({ where: waitsFor, from: entry.arrivedAt, ...(seen ? { until: event.at } : {}) });
    // A steered message belongs to a run once it is injected (steer.injected), not when it is acked: a
    // message that came too late for the run is answered by the next turn, which claims it then.
  }

  /**
   * A new entry in `messages`, the session's log (just touched); its ack fills in what the gateway
   * decided.
   */
  private entry(messages: Map<string, Entry>, session: string, id: string, at: number): Entry {
    const entry: Entry = {
      session,
      messageId: id,
      arrivedAt: at,
      disposition: "",
      mode: "",
      modeSource: "",
      ackText: "",
      waited: [],
      timeline: [],
    };
    this.unacked.add(entry);
    if (!messages.has(id)) this.total++;
    messages.set(id, entry);
    if (messages.size > MAX_PER_SESSION) {
      messages.delete(messages.keys().next().value as string);
      this.total--;
    }
    // The session just touched is the newest, so it is never the one forgotten.
    for (const [oldest, old] of this.bySession) {
      if (this.total <= this.maxMessages || oldest === session) break;
      this.bySession.delete(oldest);
      this.total -= old.size;
    }
    return entry;
  }

  /** The session's messages, moved to the newest end of the order. */
  private touch(session: string): Map<string, Entry> {
    const messages = this.bySession.get(session) ?? new Map<string, Entry>();
    this.bySession.delete(session);
    this.bySession.set(session, messages);
    return messages;
  }

  private claim(runId: string, messageId: string): void {
    let ids = this.runMessages.get(runId);
    if (!ids) {
      ids = new Set();
      this.runMessages.set(runId, ids);
      // A final forgets its run; a run that failed has none, so the oldest runs are forgotten too.
      if (this.runMessages.size > MAX_RUNS) this.runMessages.delete(this.runMessages.keys().next().value!);
    }
    ids.add(messageId);
  }

  private note(
    session: string,
    id: string,
    at: number,
    what: string,
    update?: (entry: MessageExplanation) => void,
  ): void {
    // A turn can start, and call the model, before `receive` returns the message's ack.
    const messages = this.touch(session);
    const entry = messages.get(id) ?? this.entry(messages, session, id, at);
    entry.timeline = withItem(entry.timeline, { at, what: flat(what) });
    update?.(entry);
  }
}

/**
 * The timeline with `item` at its end (or its start), in a new array of exactly the right length: a
 * push would give the usual two or three items room for seventeen, and the log holds tens of thousands
 * of timelines. A timeline stays short (a few items per model call), so the copy costs little.
 */
function withItem<T>(timeline: T[], item: T, first = false): T[] {
  const out = new Array<T>(timeline.length + 1);
  const offset = first ? 1 : 0;
  for (let i = 0; i < timeline.length; i++) out[i + offset] = timeline[i]!;
  out[first ? 0 : timeline.length] = item;
  return out;
}

/**
 * `text` as one flat string: a template literal leaves a tree of pieces (32 bytes a node), and reading
 * it as a number makes V8 flatten it in place, so the pieces can be collected.
 */
function flat(text: string): string {
  Number(text);
  return text;
}

function closeWait(entry: MessageExplanation, at: number): void {
  const open = entry.waited.at(-1);
  if (open && open.until === undefined) open.until = at;
}
