import type { TillerEvent } from "./events.js";

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
  timeline: Array<{ at: number; what: string }>;
}

const MAX_PER_SESSION = 500;

export class MessageLog {
  private readonly bySession = new Map<string, Map<string, MessageExplanation>>();
  /** runId → message ids the run owns, to attribute model calls and finals. */
  private readonly runMessages = new Map<string, Set<string>>();

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
    return entry ? structuredClone(entry) : undefined;
  }

  private acked(session: string, event: TillerEvent): void {
    let messages = this.bySession.get(session);
    if (!messages) {
      messages = new Map();
      this.bySession.set(session, messages);
    }
    const id = String(event.messageId);
    if (messages.has(id)) {
      this.note(session, id, event.at, `redelivered: acked ${event.disposition}`);
      return;
    }
    const waitsFor = event.waitsFor as string | undefined;
    const entry: MessageExplanation = {
      session,
      messageId: id,
      arrivedAt: event.at,
      disposition: String(event.disposition),
      mode: String(event.mode),
      modeSource: String(event.modeSource),
      ackText: String(event.text ?? ""),
      waited: waitsFor ? [{ where: waitsFor, from: event.at }] : [],
      timeline: [
        { at: event.at, what: `arrived; ${event.disposition} (mode ${event.mode} from ${event.modeSource})` },
      ],
    };
    if (event.runId && event.disposition === "steered") this.claim(String(event.runId), id);
    messages.set(id, entry);
    if (messages.size > MAX_PER_SESSION) messages.delete(messages.keys().next().value as string);
  }

  private claim(runId: string, messageId: string): void {
    let ids = this.runMessages.get(runId);
    if (!ids) {
      ids = new Set();
      this.runMessages.set(runId, ids);
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
    const entry = this.bySession.get(session)?.get(id);
    if (!entry) return;
    entry.timeline.push({ at, what });
    update?.(entry);
  }
}

function closeWait(entry: MessageExplanation, at: number): void {
  const open = entry.waited.at(-1);
  if (open && open.until === undefined) open.until = at;
}
