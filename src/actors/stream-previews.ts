import { errorMessage } from "../errors.js";
import type { TillerEvent } from "../events.js";
import { type Channel, DISCARDED_PREVIEW_TEXT, PREVIEW_DELIVERY_PREFIX } from "../ports/channel.js";
import type { TimerHandle } from "../ports/clock.js";
import { sendThroughChannel } from "./channel-send.js";
import type { ActorDeps } from "./deps.js";

/** What a preview shows while a re-check discards the draft it showed. */
export const REVISING_TEXT = "(Revising this answer…)";
/** What a preview shows when its turn ends without an answer (stopped, failed, silent). */
export const DISCARDED_TEXT = DISCARDED_PREVIEW_TEXT;

interface Preview {
  session: string;
  channel: Channel;
  /** The text of the model call streaming now. */
  text: string;
  /** What the platform shows. */
  shown: string;
  messageId?: string;
  /** The first send, or the edit in flight: the next step waits for it. */
  busy: Promise<void>;
  lastEditAt: number;
  timer?: TimerHandle;
}

/**
 * Streaming previews (`delivery.streaming.mode: "edit"`) on channels with `edit`: the first text a
 * turn's model streams is sent once, then edited as more streams, at most every `minIntervalMs`. A
 * re-check that discards the draft edits the preview at once, so the stale text never stands; the
 * final replaces the preview (see {@link StreamPreviews.take}). Previews are best effort: a failed
 * edit is logged and the final is still delivered. Sends and edits carry the deliveryId
 * `preview:<runId>`, so a channel with a durable send ledger can, after a crash, edit a preview its
 * final never replaced to the discarded text (the chat channels do); the re-run turn starts a new one.
 */
export class StreamPreviews {
  private readonly previews = new Map<string, Preview>();
  /** Turns a person typed, answered automatically: only their drafts are shown. */
  private readonly eligible = new Set<string>();

  constructor(private readonly deps: ActorDeps) {}

  observe(event: TillerEvent): void {
    const runId = typeof event.runId === "string" ? event.runId : undefined;
    const session = typeof event.session === "string" ? event.session : undefined;
    if (!runId || !session) return;
    switch (event.type) {
      case "turn.started":
        // Only a gateway that shows previews reads the set (see `enabled`).
        if (
          event.kind === "turn" &&
          (event.trigger === undefined || event.trigger === "user") &&
          this.showsPreviews()
        )
          this.eligible.add(runId);
        return;
      case "model.called": {
        const preview = this.previews.get(runId);
        if (preview) preview.text = "";
        return;
      }
      case "model.delta":
        if (event.review || event.recovery) return;
        this.grow(session, runId, String(event.text ?? ""));
        return;
      case "recheck.fired":
        this.replace(runId, REVISING_TEXT);
        return;
      case "final.silent":
        this.replace(runId, DISCARDED_TEXT, true);
        return;
      case "turn.ended":
        this.eligible.delete(runId);
        if (event.status !== "done") this.replace(runId, DISCARDED_TEXT, true);
        return;
    }
  }

  /**
   * Hands the turn's preview over to its final: stops further edits, waits for the one in flight, and
   * returns the preview's messageId (absent when none was shown).
   */
  async take(runId: string): Promise<{ messageId: string; channel: Channel } | undefined> {
    const preview = this.previews.get(runId);
    if (!preview) return undefined;
    this.previews.delete(runId);
    if (preview.timer) this.deps.clock.clearTimeout(preview.timer);
    await preview.busy;
    return preview.messageId ? { messageId: preview.messageId, channel: preview.channel } : undefined;
  }

  /** Streaming previews are on; a `message_tool` final is private, so no draft of it may show. */
  private showsPreviews(): boolean {
    const { delivery } = this.deps.config;
    return delivery.streaming.mode === "edit" && delivery.visibleReplies === "auto";
  }

  private enabled(session: string, runId: string): Channel | undefined {
    if (!this.showsPreviews() || !this.eligible.has(runId)) return undefined;
    const { channel } = this.deps.channelFor(session);
    return channel.edit ? channel : undefined;
  }

  private grow(session: string, runId: string, delta: string): void {
    let preview = this.previews.get(runId);
    if (!preview) {
      const channel = this.enabled(session, runId);
      if (!channel || !delta.trim()) return;
      preview = { session, channel, text: delta, shown: "", busy: Promise.resolve(), lastEditAt: 0 };
      this.previews.set(runId, preview);
      this.first(runId, preview);
      return;
    }
    preview.text += delta;
    this.schedule(runId, preview);
  }

  private first(runId: string, preview: Preview): void {
    const text = this.fit(preview, preview.text);
    preview.shown = text;
    preview.busy = sendThroughChannel(this.deps, preview.channel, {
      session: preview.session,
      text,
      kind: "reply",
      runId,
      deliveryId: `${PREVIEW_DELIVERY_PREFIX}${runId}`,
    }).then((result) => {
      if (result.messageId) preview.messageId = result.messageId;
      preview.lastEditAt = this.deps.clock.now();
    });
    void preview.busy.then(() => this.schedule(runId, preview));
  }

  /** An edit when the text changed, no sooner than `minIntervalMs` after the last one. */
  private schedule(runId: string, preview: Preview): void {
    if (preview.timer || this.previews.get(runId) !== preview) return;
    const wait =
      preview.lastEditAt + this.deps.config.delivery.streaming.minIntervalMs - this.deps.clock.now();
    preview.timer = this.deps.clock.setTimeout(
      () => {
        delete preview.timer;
        void preview.busy.then(() => this.edit(runId, preview, preview.text));
      },
      Math.max(0, wait),
    );
  }

  /** Shows `text` now (a re-check, a discarded draft); `last` ends the preview. */
  private replace(runId: string, text: string, last = false): void {
    const preview = this.previews.get(runId);
    if (!preview) return;
    if (preview.timer) this.deps.clock.clearTimeout(preview.timer);
    delete preview.timer;
    preview.text = "";
    if (last) this.previews.delete(runId);
    preview.busy = preview.busy.then(() => this.edit(runId, preview, text));
  }

  private async edit(runId: string, preview: Preview, raw: string): Promise<void> {
    const text = this.fit(preview, raw);
    if (!preview.messageId || !text.trim() || text === preview.shown) return;
    const controller = new AbortController();
    const timeoutMs = this.deps.config.delivery.sendTimeoutMs;
    const timer = this.deps.clock.setTimeout(() => controller.abort(), timeoutMs);
    try {
      await preview.channel.edit?.(
        {
          session: preview.session,
          messageId: preview.messageId,
          deliveryId: `${PREVIEW_DELIVERY_PREFIX}${runId}`,
        },
        text,
        { signal: controller.signal },
      );
      preview.shown = text;
    } catch (error) {
      this.deps.logger.warn(
        { session: preview.session, runId, error: errorMessage(error) },
        "preview.editFailed",
      );
    } finally {
      this.deps.clock.clearTimeout(timer);
      preview.lastEditAt = this.deps.clock.now();
    }
  }

  private fit(preview: Preview, text: string): string {
    const max = preview.channel.maxLength;
    return max && text.length > max ? `${text.slice(0, Math.max(1, max - 1))}…` : text;
  }
}
