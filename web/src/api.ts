/**
 * The page's only way to the gateway: the HTTP API under `/v1` (docs/http.md), its JSON endpoints
 * through openapi-fetch with the types generated from the server's OpenAPI document
 * (src/http/api-types.ts, `npm run api:types`), so a path, parameter or body the server
 * does not have fails the page's typecheck.
 */
import createClient from "openapi-fetch";
import type { components, paths } from "../../src/http/api-types.js";
import { authFetch } from "./auth.js";
import { openStream } from "./event-stream.js";

type Schemas = components["schemas"];

export type SessionSummary = Schemas["SessionInspection"] & { key: string };

export type Ack = Schemas["Ack"];

/** A transcript record as the page reads it (the document leaves records open: as stored). */
export interface TranscriptRecord {
  seq: number;
  at?: number;
  role: string;
  text?: string;
  messageId?: string;
  /** A user record: when the message reached the gateway (`at` is when it was stored). */
  arrivedAt?: number;
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
export type ScheduleSummary = Schemas["Schedule"];

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

const path = (key: string) => `/v1/sessions/${encodeURIComponent(key)}`;

const client = createClient<paths>({
  baseUrl: location.origin,
  // Through authFetch: the token is added, and a 401 asks for it and tries again.
  fetch: async (request) =>
    authFetch(request.url, {
      method: request.method,
      headers: Object.fromEntries(request.headers),
      ...(request.method === "GET" ? {} : { body: await request.text() }),
    }),
});

/** The answer's data, or an ApiError with the error body's message. */
async function ok<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  const { data, error, response } = await call;
  if (data !== undefined) return data;
  const message = (error as { error?: { message?: string } } | undefined)?.error?.message;
  throw new ApiError(response.status, message ?? `${response.status} ${response.statusText}`);
}

const inSession = (key: string) => ({ params: { path: { key } } });

export const api = {
  sessions: () => ok(client.GET("/v1/sessions")).then((body) => body.sessions as SessionSummary[]),
  machines: () => ok(client.GET("/v1/machines")).then((body) => body.machines as Record<string, unknown>),
  lanes: () => ok(client.GET("/v1/lanes")),
  transcript: (key: string) =>
    ok(client.GET("/v1/sessions/{key}/transcript", inSession(key))).then(
      // Records are as stored: the page reads the fields it shows.
      (body) => body.records as TranscriptRecord[],
    ),
  /** The session's recent events the server still holds, oldest first, with their stream ids. */
  recentEvents: (key: string) =>
    ok(client.GET("/v1/sessions/{key}/events", inSession(key))).then(
      (body) => body.events as Array<{ id: string; event: GatewayEvent }>,
    ),
  explain: (key: string, id: string) =>
    ok(client.GET("/v1/sessions/{key}/messages/{id}", { params: { path: { key, id } } })).then(
      (body) => body as Explanation,
    ),
  send: (key: string, body: { text: string; id: string; mode?: string }) =>
    ok(client.POST("/v1/sessions/{key}/messages", { ...inSession(key), body })).then((reply) => reply.ack),
  schedules: () => ok(client.GET("/v1/schedules")).then((body) => body.schedules),
  /** `null` when commitments are off (the endpoint answers 404). */
  async commitments(key: string): Promise<Array<Record<string, unknown>> | null> {
    try {
      const body = await ok(client.GET("/v1/commitments", { params: { query: { session: key } } }));
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
