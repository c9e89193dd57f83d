/** The page's only way to the gateway: the HTTP API under `/v1` (docs/http.md). */
import { authFetch } from "./auth.js";
import { openStream } from "./event-stream.js";

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
  /** Who wrote it (group chats). */
  sender?: { id: string; name?: string; authority?: string[] };
  waited: Array<{ where: string; from: number; until?: number }>;
  firstSeenBy?: { runId: string; call: number; at: number; recheck: boolean };
  answeredBy?: { runId: string; delivered: boolean; at: number };
  dropped?: { reason: string; at: number };
  timeline: Array<{ at: number; what: string }>;
}

/** One entry of `GET /v1/schedules`. */
export interface ScheduleSummary {
  id: string;
  session: string;
  kind: "everyMs" | "cron" | "at";
  expression: string | number;
  timezone: string | null;
  catchUp: boolean;
  nextRunAt: number | null;
  lastRun: { at: number; outcome: string; reason?: string } | null;
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
  const response = await authFetch(url, init);
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
  /** The session's recent events the server still holds, oldest first, with their stream ids. */
  recentEvents: (key: string) =>
    json<{ events: Array<{ id: string; event: GatewayEvent }> }>(`${path(key)}/events`).then(
      (body) => body.events,
    ),
  explain: (key: string, id: string) => json<Explanation>(`${path(key)}/messages/${encodeURIComponent(id)}`),
  send: (key: string, body: { text: string; id: string; mode?: string }) =>
    json<{ ack: Ack }>(`${path(key)}/messages`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    }).then((reply) => reply.ack),
  schedules: () => json<{ schedules: ScheduleSummary[] }>("/v1/schedules").then((body) => body.schedules),
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

/**
 * Opens `GET /v1/events` and calls `onEvent` for every event, whatever its type (read with `fetch`,
 * no listener per event name is needed); it reconnects on its own.
 */
export function openEvents(
  onEvent: (event: GatewayEvent, id: string | undefined) => void,
  onStatus: (open: boolean) => void,
) {
  return openStream("/v1/events", {
    onStatus,
    onMessage(message) {
      try {
        onEvent(JSON.parse(message.data) as GatewayEvent, message.id);
      } catch {
        // A malformed frame is skipped; the next one is read.
      }
    },
  });
}

/** Opens the session's deliveries stream (`Last-Event-ID` replays what a reconnect missed). */
export function openDeliveries(key: string, onDelivery: (delivery: Delivery) => void) {
  return openStream(`${path(key)}/deliveries`, {
    onMessage(message) {
      if (message.event !== "delivery") return;
      try {
        onDelivery(JSON.parse(message.data) as Delivery);
      } catch {
        // Skipped, as above.
      }
    },
  });
}
