import type { TillerEvent } from "../events.js";
import type { Sender } from "../ports/sender.js";
import type { InvariantViolation } from "./invariant-monitor.js";

/**
 * "Authority never borrowed": a tool whose definition `requires` scopes starts only when every sender
 * of the turn's messages (held steering included, the anonymous user holding nothing) holds them all.
 * A call is judged when it ends (a refused one never ran), on the turn's messages when it started, by
 * the senders their acks named; a message whose ack was never seen is left out.
 * Protects a group chat: one member's message in a turn must not let it act on another member's rights.
 */
export class AuthorityCheck {
  /** Who wrote each acked message (`null`: the anonymous user). */
  private readonly senders = new Map<string, Sender | null>();
  /** Per run: the messages it owns or holds. */
  private readonly messages = new Map<string, Set<string>>();
  /** Calls started and not settled yet, judged when they end: a refused call never ran. */
  private readonly started = new Map<string, { event: TillerEvent & { name: string }; owned: string[] }>();

  constructor(
    private readonly requires: (tool: string) => readonly string[] | undefined,
    private readonly report: (violation: InvariantViolation) => void,
  ) {}

  observe(event: TillerEvent): void {
    const session = typeof event.session === "string" ? event.session : undefined;
    if (!session) return;
    const runId = typeof event.runId === "string" ? event.runId : undefined;
    switch (event.type) {
      case "message.acked": {
        const messageId = String(event.messageId);
        this.senders.set(key(session, messageId), event.sender ?? null);
        // Held steering narrows the turn's authority from the moment it arrives.
        if (event.disposition === "steered" && runId) this.own(session, runId, [messageId]);
        return;
      }
      case "turn.started":
      case "steer.injected":
        if (runId) this.own(session, runId, event.messageIds);
        return;
      case "tool.started":
        if (runId)
          this.started.set(key(runId, event.callId), {
            event,
            owned: [...(this.messages.get(key(session, runId)) ?? [])],
          });
        return;
      case "tool.refused":
      case "tool.argsInvalid":
        if (runId) this.started.delete(key(runId, event.callId));
        return;
      case "tool.ended": {
        if (!runId) return;
        const call = this.started.get(key(runId, event.callId));
        this.started.delete(key(runId, event.callId));
        if (call && event.status !== "skipped") this.check(call.event, session, runId, call.owned);
        return;
      }
      default:
        return;
    }
  }

  private check(
    event: TillerEvent & { name: string },
    session: string,
    runId: string,
    owned: readonly string[],
  ): void {
    const needed = this.requires(event.name) ?? [];
    if (needed.length === 0) return;
    const holders: string[] = [];
    const lacking: Array<{ messageId: string; sender: Sender | null; missing: string[] }> = [];
    for (const messageId of owned) {
      const k = key(session, messageId);
      if (!this.senders.has(k)) continue;
      const sender = this.senders.get(k) ?? null;
      const held = new Set(sender?.authority ?? []);
      const missing = needed.filter((scope) => !held.has(scope));
      if (missing.length === 0) holders.push(label(sender));
      else lacking.push({ messageId, sender, missing });
    }
    const first = lacking[0];
    if (!first) return;
    const borrowed =
      holders.length > 0 ? `: it ran on the authority of ${[...new Set(holders)].join(", ")}` : "";
    this.report({
      invariant: "authority never borrowed",
      message: `tool ${event.name} ran in run ${runId} although ${label(first.sender)}, who wrote ${first.messageId} in that turn, lacks ${first.missing.map((scope) => `"${scope}"`).join(", ")}${borrowed}`,
      at: event.at,
      session,
      messageId: first.messageId,
      runId,
    });
  }

  private own(session: string, runId: string, ids: readonly unknown[]): void {
    const k = key(session, runId);
    const owned = this.messages.get(k) ?? new Set<string>();
    for (const id of ids) owned.add(String(id));
    this.messages.set(k, owned);
  }
}

function key(session: string, id: string): string {
  return `${session}\u0000${id}`;
}

function label(sender: Sender | null): string {
  if (!sender) return "the anonymous user";
  return sender.name ? `${sender.name} (${sender.id})` : sender.id;
}
