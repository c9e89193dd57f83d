import type { Server } from "node:http";
import type { FakeSlackApi } from "./fake-slack-api.js";
import { startTinyWebSocketServer, type TinySocket } from "./tiny-websocket.js";

/** What the app sent back over the socket: an envelope's ack. */
export interface SocketAck {
  envelope_id: string;
  payload?: unknown;
}

/**
 * Slack's Socket Mode side, as `@slack/socket-mode` speaks to it: `apps.connections.open` (on the
 * fake Web API, with the app-level token) answers `{ ok, url }`, a WebSocket URL with a one-time
 * ticket; the server greets a connection with `{ type: "hello" }`, then pushes envelopes `{ envelope_id,
 * type: "events_api", payload: <event_callback>, accepts_response_payload, retry_attempt, retry_reason }`,
 * and the app answers each with `{ envelope_id }`. The fake serves `ws://` (no TLS certificate on a
 * test machine); the frames are Slack's.
 */
export class FakeSlackSocket {
  readonly acks: SocketAck[] = [];
  readonly opened: string[] = [];
  private readonly sockets = new Set<TinySocket>();
  private readonly tickets = new Set<string>();
  private server: Server | undefined;
  private seq = 0;
  private port = 0;

  constructor(
    private readonly api: FakeSlackApi,
    readonly appToken = "xapp-test",
  ) {}

  async start(): Promise<this> {
    const { server, port } = await startTinyWebSocketServer((socket, req) => {
      const ticket = new URL(req.url ?? "/", "http://x").searchParams.get("ticket") ?? "";
      // A ticket is good for one connection, as Slack's are.
      if (!this.tickets.delete(ticket)) {
        socket.close(4001);
        return;
      }
      this.sockets.add(socket);
      socket.onClose = () => this.sockets.delete(socket);
      socket.onText = (text) => {
        const frame = JSON.parse(text) as SocketAck;
        if (typeof frame.envelope_id === "string") this.acks.push(frame);
      };
      socket.send(
        JSON.stringify({
          type: "hello",
          num_connections: this.sockets.size,
          debug_info: { host: "fake-slack", approximate_connection_time: 18060 },
          connection_info: { app_id: "A1" },
        }),
      );
    });
    this.server = server;
    this.port = port;
    this.api.connections = (token) => {
      if (token !== this.appToken) return { ok: false, error: "invalid_auth" };
      const ticket = `t${++this.seq}`;
      this.tickets.add(ticket);
      const url = `ws://127.0.0.1:${this.port}/link/?ticket=${ticket}&app_id=A1`;
      this.opened.push(url);
      return { ok: true, url };
    };
    return this;
  }

  /** How many apps are connected now. */
  get connected(): number {
    return this.sockets.size;
  }

  /**
   * Pushes a user's message as an `events_api` envelope to every connected app; resolves with the
   * envelope id (pass one to redeliver an envelope) and the event.
   */
  say(
    channel: string,
    text: string,
    options: {
      user?: string;
      ts?: string;
      envelopeId?: string;
      retryAttempt?: number;
      eventId?: string;
    } = {},
  ) {
    const event = {
      type: "message",
      channel,
      user: options.user ?? "U1",
      text,
      ts: options.ts ?? this.api.nextTs(),
      team: this.api.team,
      channel_type: "im",
    };
    const envelopeId = options.envelopeId ?? `env-${++this.seq}`;
    const envelope = {
      envelope_id: envelopeId,
      type: "events_api",
      accepts_response_payload: false,
      retry_attempt: options.retryAttempt ?? 0,
      retry_reason: options.retryAttempt ? "timeout" : "",
      payload: {
        token: "verification-token",
        team_id: this.api.team,
        api_app_id: "A1",
        event,
        type: "event_callback",
        event_id: options.eventId ?? `Ev${++this.seq}`,
        event_time: Math.floor(Date.now() / 1000),
      },
    };
    for (const socket of this.sockets) socket.send(JSON.stringify(envelope));
    return { envelopeId, event, eventId: envelope.payload.event_id };
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.terminate();
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}
