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
