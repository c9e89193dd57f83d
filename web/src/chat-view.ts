/**
 * The chat of one session: user messages with their ack, replies as they are delivered, the draft the
 * model is streaming (replaced when a re-check re-drafts), and control commands. A message shows when
 * it arrives, whichever client sent it (`message.received`), stamped with its arrival time.
 */
import type { Ack, Delivery, TranscriptRecord } from "./api.js";
import { clockTime, h } from "./dom.js";

export type ChatItem =
  | { kind: "user"; id: string; text: string; at?: number; pending?: boolean }
  | { kind: "reply"; id: string; text: string; at?: number; deliveryKind: string; runId?: string };

export interface Draft {
  runId: string;
  call: number;
  recheck: boolean;
  text: string;
  /** How many drafts of this run a re-check replaced. */
  replaced: number;
  /** The call ended in tool calls: this text accompanied them and is not the answer. */
  interim?: boolean;
}

export class ChatView {
  readonly element = h("div", { class: "messages", "aria-live": "polite" });
  private items: ChatItem[] = [];
  /** Acks by message id, apart from the items: an ack may come before the history that holds its message. */
  private readonly acks = new Map<string, Ack>();
  private draft: Draft | null = null;

  constructor(private readonly onExplain: (messageId: string) => void) {}

  /** Another session was picked: nothing of the last one stays. */
  clear(): void {
    this.items = [];
    this.acks.clear();
    this.draft = null;
    this.render();
  }

  /**
   * Shows the session's history (its transcript), then what arrived live since `clear()` that the
   * history does not hold yet.
   */
  reset(records: TranscriptRecord[]): void {
    const live = this.items;
    this.items = [];
    this.draft = null;
    for (const record of records) {
      if (record.role === "user" && record.text !== undefined) {
        const id = record.messageId ?? `seq${record.seq}`;
        const at = record.arrivedAt ?? live.find((item) => item.id === id)?.at ?? record.at;
        this.items.push({ kind: "user", id, text: record.text, ...(at !== undefined ? { at } : {}) });
      } else if (record.role === "assistant" && record.text) {
        this.items.push({
          kind: "reply",
          id: `seq${record.seq}`,
          text: record.text,
          deliveryKind: record.delivered === false ? "undelivered" : "reply",
          ...(record.runId ? { runId: record.runId } : {}),
          ...(record.at !== undefined ? { at: record.at } : {}),
        });
      }
    }
    const shown = new Set(this.items.map((item) => item.id));
    for (const item of live) {
      const sameReply = (i: ChatItem) => i.kind === "reply" && item.kind === "reply" && isSameReply(i, item);
      if (!shown.has(item.id) && !this.items.some(sameReply)) this.items.push(item);
    }
    this.render();
  }

  /** A message this page is sending: shown at once, "sending…" until its ack. */
  addUser(id: string, text: string): void {
    if (!this.items.some((item) => item.id === id))
      this.items.push({ kind: "user", id, text, pending: true });
    this.render();
  }

  /** A message reached the gateway at `at` (from this page or any other client). */
  addArrival(id: string, text: string, at: number): void {
    const item = this.items.find((i) => i.kind === "user" && i.id === id);
    if (item?.kind === "user") item.at = item.pending || item.at === undefined ? at : item.at;
    else this.items.push({ kind: "user", id, text, at });
    this.render();
  }

  setAck(ack: Ack): void {
    // A redelivery is acked `duplicate`: the message keeps the ack that said what happened to it.
    if (ack.disposition === "duplicate" && this.acks.has(ack.messageId)) return;
    this.acks.set(ack.messageId, ack);
    const item = this.items.find((i) => i.kind === "user" && i.id === ack.messageId);
    if (item?.kind === "user") item.pending = false;
    this.render();
  }

  addDelivery(delivery: Delivery): void {
    // The history may already hold it (a reload replays the stream), and acks sent as messages are shown on their message.
    if (delivery.kind === "ack") return;
    const reply: ChatItem = {
      kind: "reply",
      id: delivery.messageId,
      text: delivery.text,
      at: delivery.at,
      deliveryKind: delivery.kind,
      ...(delivery.runId ? { runId: delivery.runId } : {}),
    };
    if (this.items.some((i) => i.kind === "reply" && isSameReply(i, reply))) return;
    this.items.push(reply);
    if (this.draft && this.draft.runId === delivery.runId) this.draft = null;
    this.render();
  }

  delta(runId: string, call: number, recheck: boolean, text: string): void {
    if (!this.draft || this.draft.runId !== runId) {
      this.draft = { runId, call, recheck, text: "", replaced: 0 };
    } else if (this.draft.call !== call) {
      // A new model call of the same run drafts afresh: a re-check (or the call after a tool batch).
      this.draft = {
        runId,
        call,
        recheck,
        text: "",
        replaced: this.draft.replaced + (this.draft.text ? 1 : 0),
      };
    }
    this.draft.text += text;
    this.render();
  }

  /** The run started a tool: the text so far came with the tool calls (an interim, not a draft). */
  markInterim(runId: string): void {
    if (this.draft?.runId === runId && this.draft.text) {
      this.draft.interim = true;
      this.render();
    }
  }

  endRun(runId: string): void {
    if (this.draft?.runId === runId) {
      this.draft = null;
      this.render();
    }
  }

  private render(): void {
    const atBottom = this.element.scrollHeight - this.element.scrollTop - this.element.clientHeight < 40;
    this.element.replaceChildren(
      ...(this.items.length === 0 && !this.draft
        ? [
            h(
              "p",
              { class: "empty" },
              "No messages yet. Write below: Enter sends, Shift+Enter starts a new line.",
            ),
          ]
        : []),
      ...inTimeOrder(this.items).map((item) =>
        item.kind === "user" ? this.userBubble(item) : this.replyBubble(item),
      ),
      ...(this.draft ? [this.draftBubble(this.draft)] : []),
    );
    if (atBottom) this.element.scrollTop = this.element.scrollHeight;
  }

  private userBubble(item: Extract<ChatItem, { kind: "user" }>): HTMLElement {
    const ack = this.acks.get(item.id);
    const control = ack?.disposition === "control";
    const bubble = h(
      "button",
      {
        class: `bubble user${control ? " control" : ""}`,
        type: "button",
        title: "What happened to this message?",
        "data-message": item.id,
      },
      h("span", { class: "text" }, item.text),
      item.at !== undefined ? h("span", { class: "time" }, clockTime(item.at)) : null,
    );
    bubble.addEventListener("click", () => this.onExplain(item.id));
    const ackLine = ack
      ? h(
          "div",
          { class: `ack ack-${ack.disposition}` },
          h("span", { class: "chip" }, ack.disposition),
          h("span", { class: "ack-text" }, ack.text),
          ack.modeSource !== "default" && ack.disposition !== "control"
            ? h("span", { class: "mode" }, `${ack.mode} (${ack.modeSource})`)
            : null,
        )
      : item.pending
        ? h("div", { class: "ack" }, h("span", { class: "chip" }, "sending…"))
        : null;
    return h("div", { class: "row right" }, bubble, ackLine);
  }

  private replyBubble(item: Extract<ChatItem, { kind: "reply" }>): HTMLElement {
    const tag = item.deliveryKind === "reply" ? null : h("span", { class: "chip" }, item.deliveryKind);
    return h(
      "div",
      { class: "row left" },
      h(
        "div",
        { class: `bubble reply kind-${item.deliveryKind}` },
        tag,
        h("span", { class: "text" }, item.text),
        item.at !== undefined ? h("span", { class: "time" }, clockTime(item.at)) : null,
      ),
    );
  }

  private draftBubble(draft: Draft): HTMLElement {
    const note = draft.interim
      ? "said before a tool"
      : draft.recheck
        ? "re-drafting after a re-check"
        : draft.replaced > 0
          ? "new draft"
          : "drafting";
    return h(
      "div",
      { class: "row left" },
      h(
        "div",
        { class: `bubble draft${draft.recheck ? " recheck" : ""}`, "data-run": draft.runId },
        h("span", { class: "chip" }, `${note} · call ${draft.call}`),
        h("span", { class: "text" }, draft.text || "…"),
        draft.interim ? null : h("span", { class: "cursor" }, "▍"),
      ),
    );
  }
}

type Reply = Extract<ChatItem, { kind: "reply" }>;

/** The same delivery, or the same final seen once in the history and once on the deliveries stream. */
function isSameReply(a: Reply, b: Reply): boolean {
  return a.id === b.id || (a.runId !== undefined && a.runId === b.runId && a.text === b.text);
}

/**
 * Messages by arrival and replies by delivery, as the person chatting saw them (a steered message sits
 * before the reply it changed); a message still being sent, with no time yet, last.
 */
function inTimeOrder(items: readonly ChatItem[]): ChatItem[] {
  return [...items].sort((a, b) => (a.at ?? Number.POSITIVE_INFINITY) - (b.at ?? Number.POSITIVE_INFINITY));
}
