/**
 * The workload the PostgreSQL bench and the cluster gateway test give a gateway: `sessions` sessions,
 * `messages` follow-up messages each (every one its own turn), a model that answers at once (or after
 * `modelMs`), a channel that commits every send. Resolves when every message was answered once.
 */

import type { Gateway } from "../src/gateway/create-gateway.js";
import type { Channel, DeliveryReceipt, OutboundMessage } from "../src/ports/channel.js";
import type { ModelProvider, ModelReply, ModelRequest } from "../src/ports/model.js";
import { latestUserText } from "../src/ports/model.js";

export interface Workload {
  sessions: string[];
  messages: number;
  modelMs?: number;
}

export const instantModel = (ms = 0): ModelProvider => ({
  async complete(request: ModelRequest): Promise<ModelReply> {
    if (ms > 0) await new Promise((resolve) => setTimeout(resolve, ms));
    return { text: `Answer to: ${latestUserText(request.context)}`, toolCalls: [] };
  },
});

/** Commits every send and counts the replies, waking whoever waits for a count. */
export class CountingChannel implements Channel {
  readonly replies: OutboundMessage[] = [];
  private wake: (() => void) | undefined;
  private counter = 0;
  async send(message: OutboundMessage): Promise<DeliveryReceipt> {
    if (message.kind === "reply") this.replies.push(message);
    this.wake?.();
    return { messageId: `out-${++this.counter}` };
  }
  async until(count: number): Promise<void> {
    while (this.replies.length < count) {
      await new Promise<void>((resolve) => {
        this.wake = resolve;
      });
    }
  }
}

/** Sends the workload's messages and waits for every reply to them; returns the wall time it took (ms). */
export async function playWorkload(
  gateway: Gateway,
  channel: CountingChannel,
  workload: Workload,
): Promise<number> {
  const started = performance.now();
  const before = channel.replies.length;
  const acks = [];
  for (let n = 0; n < workload.messages; n++) {
    for (const session of workload.sessions) {
      acks.push(gateway.receive({ session, channel: "web", text: `question ${n}`, id: `${session}-m${n}` }));
    }
  }
  await Promise.all(acks);
  await channel.until(before + workload.sessions.length * workload.messages);
  return performance.now() - started;
}

/**
 * How long tasks of one lane held their slot (`lane.started` until `lane.ended`, by the gateway's
 * events), from `start()`: with the wall time, the mean number of busy slots. When that is the lane's
 * capacity, the capacity is what limits throughput, not how fast a freed slot is handed on.
 */
export class SlotTimer {
  private readonly running = new Map<number, number>();
  private counting = false;
  heldMs = 0;
  runs = 0;

  constructor(gateway: Gateway, lane = "main") {
    gateway.subscribe((event) => {
      if (!this.counting || !("lane" in event) || event.lane !== lane) return;
      if (event.type === "lane.started") this.running.set(event.entryId, performance.now());
      else if (event.type === "lane.ended") {
        const started = this.running.get(event.entryId);
        if (started === undefined) return;
        this.running.delete(event.entryId);
        this.heldMs += performance.now() - started;
        this.runs++;
      }
    });
  }

  start(): void {
    this.running.clear();
    this.heldMs = 0;
    this.runs = 0;
    this.counting = true;
  }

  stop(): { heldMs: number; runs: number } {
    this.counting = false;
    return { heldMs: this.heldMs, runs: this.runs };
  }
}
