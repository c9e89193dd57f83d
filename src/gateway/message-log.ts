import type { TillerEvent } from "../events.js";

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
  /** Where it waited, in order: "steer buffer of run X", "queue", "collect window", ... */
  waited: Array<{ where: string; from: number; until?: number }>;
  firstSeenBy?: { runId: string; call: number; at: number; recheck: boolean };
  answeredBy?: { runId: string; delivered: boolean; at: number };
  dropped?: { reason: string; at: number };
  /** Child turns a tool of the turn that owns this message ran (`context.runSubagent`), in order. */
  subagents?: Array<{ session: string; startedAt: number; status?: string; endedAt?: number }>;
  timeline: Array<{ at: number; what: string }>;
}

const MAX_PER_SESSION = 500;
/** Runs whose messages are remembered until their final (far more than can run at once). */
const MAX_RUNS = 10_000;

/** An entry noted before its ack (a turn can start, and call the model, inside `receive`). */
type Entry = MessageExplanation & { acked?: false };

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

  constructor(private readonly maxMessages = 20_000) {}

  observe(event: TillerEvent): void {
    const session = event.session;
    if (!session) return;
    switch (event.type) {
      case "message.acked":
        this.acked(session, event);
        return;
      case "turn.started":
        for (const id of (event.messageIds as string[]) ?? []) {
          this.claim(String(event.runId), id);
          this.note(session, id, event.at, `turn ${event.runId} started with it`, (entry) =>
            closeWait(entry, event.at),
          );
        }
        return;
      case "steer.injected":
        for (const id of (event.messageIds as string[]) ?? []) {
          this.claim(String(event.runId), id);
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
        for (const id of (event.messageIds as string[]) ?? []) {
          this.note(session, id, event.at, `seen by model call ${event.call} of ${event.runId}`, (entry) => {
            entry.firstSeenBy ??= {
              runId: String(event.runId),
              call: Number(event.call),
              at: event.at,
              recheck: Boolean(event.recheck),
            };
          });
        }
        return;
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
        const error = event.error as { message?: string } | undefined;
        const why =
          event.status === "failed"
            ? `failed: ${error?.message ?? "unknown error"}`
            : `${event.status}: ${event.reason ?? "aborted"}`;
        for (const id of this.runMessages.get(String(event.runId)) ?? [])
          this.note(session, id, event.at, `turn ${event.runId} ${why}`);
        this.runMessages.delete(String(event.runId));
        return;
      }
      case "final.delivered":
      case "final.undelivered":
      case "final.silent":
        for (const id of this.runMessages.get(String(event.runId)) ?? []) {
          const delivered = event.type === "final.delivered";
          this.note(
            session,
            id,
            event.at,
            `answered by ${event.runId}: ${delivered ? "delivered" : "not delivered"}`,
            (entry) => {
              entry.answeredBy = { runId: String(event.runId), delivered, at: event.at };
            },
          );
        }
        this.runMessages.delete(String(event.runId));
        return;
      case "message.dropped":
        this.note(session, String(event.messageId), event.at, `dropped: ${event.reason}`, (entry) => {
          entry.dropped = { reason: String(event.reason), at: event.at };
        });
        return;
    }
  }

  explain(session: string, messageId: string): MessageExplanation | undefined {
    const entry = this.bySession.get(session)?.get(messageId);
    if (!entry || entry.acked === false) return undefined;
    return structuredClone(entry);
  }

  private acked(session: string, event: TillerEvent): void {
    const id = String(event.messageId);
    const messages = this.touch(session);
    const early = messages.get(id);
    if (early && early.acked !== false) {
      this.note(session, id, event.at, `redelivered: acked ${event.disposition}`);
      return;
    }
    const entry = early ?? this.entry(messages, session, id, event.at);
    delete entry.acked;
    entry.disposition = String(event.disposition);
    entry.mode = String(event.mode);
    entry.modeSource = String(event.modeSource);
    entry.ackText = String(event.text ?? "");
    entry.timeline.unshift({
      at: entry.arrivedAt,
      what: `arrived; ${event.disposition} (mode ${event.mode} from ${event.modeSource})`,
    });
    // A wait the turn already ended (it started, or saw the message, before the ack) is closed at once.
    const waitsFor = event.waitsFor as string | undefined;
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
      acked: false,
    };
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
    entry.timeline.push({ at, what });
    update?.(entry);
  }
}

function closeWait(entry: MessageExplanation, at: number): void {
  const open = entry.waited.at(-1);
  if (open && open.until === undefined) open.until = at;
}
