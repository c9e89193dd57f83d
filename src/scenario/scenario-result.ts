import type { LoopbackChannel } from "../adapters/channels/loopback-channel.js";
import type { TillerEvent } from "../events.js";
import type { TranscriptRecord } from "../ports/store.js";
import type { ChannelActivity } from "./channel-spec.js";
import type { Expectation, RecordedStates } from "./check-expectations.js";

/** The JSON a scenario run prints (docs/scenarios.md). */
export interface ScenarioResult {
  name: string;
  deliveries: Array<{
    at: number;
    session: string;
    channel: string;
    kind: string;
    text: string;
    messageId: string;
    runId: string;
    /** The logical delivery (stable across resends and restarts). */
    deliveryId?: string;
  }>;
  acks: Array<{
    at: number;
    session: string;
    messageId: string;
    disposition: string;
    mode: string;
    modeSource: string;
    text: string;
    /** Present for a turn nobody typed (`cron`, `heartbeat`, ...). */
    trigger?: string;
    reason?: string;
  }>;
  modelCalls: Array<{
    at: number;
    session: string;
    runId: string;
    call: number;
    recheck: boolean;
    recovery: boolean;
    review: boolean;
    latestUser: string;
    userTexts: string[];
    /** What started the call's turn: `user`, or `cron`, `heartbeat`, `subagent`, ... */
    trigger: string;
  }>;
  toolCalls: Array<{
    at: number;
    session: string;
    runId: string;
    name: string;
    args: unknown;
    status: string;
  }>;
  transcripts: Record<string, Array<Partial<TranscriptRecord>>>;
  commitments: Array<{ id: string; status: string; classification: string }>;
  events: TillerEvent[];
  /** State values each session's session actor and run actors passed through, in order. */
  states: RecordedStates;
  /** State values each commitment's actors passed through (one actor per review), by id. */
  commitmentStates: Record<string, string[]>;
  /** Present when the scenario has an `expect` block: each expectation with what was found. */
  expectations?: Expectation[];
  /** Present when a channel with capabilities edited, showed typing or reacted: what it did, by channel. */
  channelActivity?: Record<string, ChannelActivity>;
}

export function collectDeliveries(channels: Map<string, LoopbackChannel>): ScenarioResult["deliveries"] {
  const all: Array<ScenarioResult["deliveries"][number] & { order: number }> = [];
  let order = 0;
  for (const [channel, loopback] of channels) {
    for (const sent of loopback.sent) {
      if (!sent.ok) continue;
      all.push({
        at: sent.at,
        session: sent.session,
        channel,
        kind: sent.kind,
        text: sent.text,
        messageId: sent.messageId ?? "",
        runId: sent.runId ?? "",
        ...(sent.deliveryId ? { deliveryId: sent.deliveryId } : {}),
        order: order++,
      });
    }
  }
  return all
    .sort((a, b) => a.at - b.at || a.order - b.order)
    .map(({ order: _order, ...delivery }) => delivery);
}

export function collectToolCalls(events: TillerEvent[]): ScenarioResult["toolCalls"] {
  const startedAt = new Map<string, number>();
  const calls: ScenarioResult["toolCalls"] = [];
  // A refused call never ran: its result is a failure the model reads, its status says why.
  const refused = new Set(events.filter((e) => e.type === "tool.refused").map((e) => String(e.callId)));
  for (const event of events) {
    if (event.type === "tool.started") startedAt.set(String(event.callId), event.at);
    if (event.type === "tool.ended" || event.type === "tool.skipped") {
      calls.push({
        at: startedAt.get(String(event.callId)) ?? event.at,
        session: String(event.session),
        runId: String(event.runId),
        name: String(event.name),
        args: event.args ?? {},
        status:
          event.type === "tool.skipped"
            ? "skipped"
            : refused.has(String(event.callId))
              ? "refused"
              : String(event.status),
      });
    }
  }
  return calls;
}
