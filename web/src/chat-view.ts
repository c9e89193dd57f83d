/**
 * The chat of one session: user messages with their ack, replies as they are delivered, the draft the
 * model is streaming (replaced when a re-check re-drafts), and control commands.
 */
import type { Ack, Delivery, TranscriptRecord } from "./api.js";
import { clockTime, h } from "./dom.js";

export type ChatItem =
  | { kind: "user"; id: string; text: string; at?: number; ack?: Ack; pending?: boolean }
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
  private draft: Draft | null = null;

  constructor(private readonly onExplain: (messageId: string) => void) {}

  reset(records: TranscriptRecord[]): void {
    this.items = [];
    this.draft = null;
    for (const record of records) {
      if (record.role === "user" && record.text !== undefined) {
        this.items.push({
          kind: "user",
          id: record.messageId ?? `seq${record.seq}`,
          text: record.text,
          ...(record.at !== undefined ? { at: record.at } : {}),
        });
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
    this.render();
  }

  addUser(id: string, text: string): void {
    this.items.push({ kind: "user", id, text, pending: true });
    this.render();
  }

  setAck(ack: Ack): void {
    const item = this.items.find((i) => i.kind === "user" && i.id === ack.messageId);
    if (item && item.kind === "user") {
      item.ack = ack;
      item.pending = false;
      this.render();
    }
  }

  addDelivery(delivery: Delivery): void {
    // The history may already hold it (a reload replays the stream), and acks sent as messages are shown on their message.
    if (delivery.kind === "ack") return;
    if (
      this.items.some(
        (i) =>
          i.kind === "reply" &&
          (i.id === delivery.messageId ||
            (i.runId && i.runId === delivery.runId && i.text === delivery.text)),
      )
    )
      return;
    this.items.push({
      kind: "reply",
      id: delivery.messageId,
      text: delivery.text,
      at: delivery.at,
      deliveryKind: delivery.kind,
      ...(delivery.runId ? { runId: delivery.runId } : {}),
    });
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
      ...this.items.map((item) => (item.kind === "user" ? this.userBubble(item) : this.replyBubble(item))),
      ...(this.draft ? [this.draftBubble(this.draft)] : []),
    );
    if (atBottom) this.element.scrollTop = this.element.scrollHeight;
  }

  private userBubble(item: Extract<ChatItem, { kind: "user" }>): HTMLElement {
    const ack = item.ack;
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
