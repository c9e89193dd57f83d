/** The page's only way to the gateway: the HTTP API under `/v1` (docs/http.md). */

export interface SessionSummary {
  key: string;
  state: string;
  run: { runId: string; state: string; passes: number; currentTool?: string } | null;
  queue: Array<{ kind: string; messageIds: string[] }>;
  lane: { active: number; queued: number; capacity: number } | null;
  transcriptLength: number;
}

export interface Ack {
  messageId: string;
  disposition: string;
  mode: string;
  modeSource: string;
  text: string;
  reason?: string;
  waitsFor?: string;
  queuePosition?: number;
  runningTool?: { name: string; cancellable: boolean };
}

export interface TranscriptRecord {
  seq: number;
  at?: number;
  role: string;
  text?: string;
  messageId?: string;
  runId?: string;
  delivered?: boolean;
}

export interface Delivery {
  messageId: string;
  kind: string;
  text: string;
  runId?: string;
  at: number;
}

export interface GatewayEvent {
  at: number;
  type: string;
  session?: string;
  runId?: string;
  [field: string]: unknown;
}

export interface Explanation {
  messageId: string;
  arrivedAt: number;
  disposition: string;
  mode: string;
  modeSource: string;
  ackText: string;
  waited: Array<{ where: string; from: number; until?: number }>;
  firstSeenBy?: { runId: string; call: number; at: number; recheck: boolean };
  answeredBy?: { runId: string; delivered: boolean; at: number };
  dropped?: { reason: string; at: number };
  timeline: Array<{ at: number; what: string }>;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

const path = (key: string) => `/v1/sessions/${encodeURIComponent(key)}`;

async function json<T>(url: string, init?: RequestInit): Promise<T> {
  const response = await fetch(url, init);
  if (!response.ok) {
    let message = `${response.status} ${response.statusText}`;
    try {
      const body = (await response.json()) as { error?: { message?: string } };
      if (body.error?.message) message = body.error.message;
    } catch {
      // Not JSON: the status line says enough.
    }
    throw new ApiError(response.status, message);
  }
  return (await response.json()) as T;
}

export const api = {
  sessions: () => json<{ sessions: SessionSummary[] }>("/v1/sessions").then((body) => body.sessions),
  machines: () => json<{ machines: Record<string, unknown> }>("/v1/machines").then((body) => body.machines),
  lanes: () =>
    json<{ lanes: Record<string, { active: number; queued: number; capacity: number }> }>("/v1/lanes"),
  transcript: (key: string) =>
    json<{ records: TranscriptRecord[] }>(`${path(key)}/transcript`).then((body) => body.records),
  explain: (key: string, id: string) => json<Explanation>(`${path(key)}/messages/${encodeURIComponent(id)}`),
  send: (key: string, body: { text: string; id: string; mode?: string }) =>
    json<{ ack: Ack }>(`${path(key)}/messages`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    }).then((reply) => reply.ack),
  /** `null` when commitments are off (the endpoint answers 404). */
  async commitments(key: string): Promise<Array<Record<string, unknown>> | null> {
    try {
      const body = await json<{ commitments: Array<Record<string, unknown>> }>(
        `/v1/commitments?session=${encodeURIComponent(key)}`,
      );
      return body.commitments;
    } catch (error) {
      if (error instanceof ApiError && error.status === 404) return null;
      throw error;
    }
  },
};

/** Event types the page listens for: SSE delivers a named event only to a listener of that name. */
export const EVENT_TYPES = [
  "state",
  "message.acked",
  "lane.enqueued",
  "lane.started",
  "lane.granted",
  "lane.waitExceeded",
  "lane.cleared",
  "lane.rejected",
  "lane.timeout",
  "lane.released",
  "turn.started",
  "turn.ended",
  "turn.prepareFailed",
  "turn.storeFailed",
  "model.called",
  "model.delta",
  "tool.started",
  "tool.ended",
  "tool.skipped",
  "tool.timedOut",
  "steer.injected",
  "recheck.fired",
  "recheck.skipped",
  "final.delivered",
  "final.undelivered",
  "final.storeFailed",
  "marker.appended",
  "recovery.queued",
  "recovery.delivered",
  "notice.sent",
  "transcript.rotated",
  "commitment.reviewed",
  "commitment.sent",
  "commitment.dismissed",
  "commitment.retried",
  "commitment.expired",
  "gateway.started",
  "gateway.draining",
];

/** Opens `GET /v1/events` and calls `onEvent` for each; the browser reconnects on its own. */
export function openEvents(onEvent: (event: GatewayEvent) => void, onStatus: (open: boolean) => void) {
  const source = new EventSource("/v1/events");
  const handle = (message: MessageEvent<string>) => {
    try {
      onEvent(JSON.parse(message.data) as GatewayEvent);
    } catch {
      // A malformed frame is skipped; the next one is read.
    }
  };
  for (const type of EVENT_TYPES) source.addEventListener(type, handle);
  source.onmessage = handle;
  source.onopen = () => onStatus(true);
  source.onerror = () => onStatus(source.readyState === EventSource.OPEN);
  return () => source.close();
}

/** Opens the session's deliveries stream (`Last-Event-ID` replay is the browser's own on reconnect). */
export function openDeliveries(key: string, onDelivery: (delivery: Delivery) => void) {
  const source = new EventSource(`${path(key)}/deliveries`);
  source.addEventListener("delivery", (message) => {
    try {
      onDelivery(JSON.parse((message as MessageEvent<string>).data) as Delivery);
    } catch {
      // Skipped, as above.
    }
  });
  return () => source.close();
}
