import { createHmac } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** A message the app posted, as the fake keeps it. */
export interface FakeSlackMessage {
  channel: string;
  ts: string;
  text: string;
  thread_ts?: string;
  metadata?: { event_type: string; event_payload: Record<string, unknown> };
  edits: string[];
}

/**
 * A local Slack Web API (`POST /api/<method>`, form or JSON bodies, bearer token, `{ ok, ... }`
 * answers, 429 with `Retry-After`) and the sending side of the Events API: `say` posts a signed
 * `event_callback` (v0 HMAC-SHA256 of `v0:<timestamp>:<body>` with the signing secret) to the app's
 * URL, as Slack does. Faults: `rateLimit(method, seconds)`, `fail(method, error)`, `hold(method, ms)`.
 */
export class FakeSlackApi {
  readonly calls: Array<{ method: string; body: Record<string, unknown> }> = [];
  readonly messages: FakeSlackMessage[] = [];
  readonly reactions: Array<{ channel: string; timestamp: string; name: string }> = [];
  private readonly faults = new Map<string, Array<{ rateLimit?: number; error?: string }>>();
  private readonly holds = new Map<string, number[]>();
  private seq = 0;
  private server: Server | undefined;
  url = "";
  /** Answers `apps.connections.open` (set by a Socket Mode fake): the token it was called with in, the answer out. */
  connections: ((token: string) => Record<string, unknown>) | undefined;

  constructor(
    readonly botToken = "xoxb-test",
    readonly signingSecret = "test-signing-secret",
    readonly team = "T1",
  ) {}

  /** The Web API root a client takes (`slackApiUrl`). */
  get apiUrl(): string {
    return `${this.url}/api/`;
  }

  async start(): Promise<this> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server!.listen(0, "127.0.0.1", resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => {
      this.server?.close(() => resolve());
      this.server?.closeAllConnections();
    });
  }

  /** A fresh message ts, as Slack makes them (`<seconds>.<micros>`). */
  nextTs(): string {
    this.seq++;
    return `${Math.floor(Date.now() / 1000)}.${String(this.seq).padStart(6, "0")}`;
  }

  /** The signed Events API request for `event`, as Slack sends it. */
  signedEvent(event: Record<string, unknown>, options: { secret?: string; timestamp?: number } = {}) {
    const body = JSON.stringify({
      token: "verification-token",
      team_id: this.team,
      api_app_id: "A1",
      event,
      type: "event_callback",
      event_id: `Ev${++this.seq}`,
      event_time: Math.floor(Date.now() / 1000),
    });
    const timestamp = String(options.timestamp ?? Math.floor(Date.now() / 1000));
    const signature = `v0=${createHmac("sha256", options.secret ?? this.signingSecret)
      .update(`v0:${timestamp}:${body}`)
      .digest("hex")}`;
    return {
      body,
      headers: {
        "content-type": "application/json",
        "x-slack-request-timestamp": timestamp,
        "x-slack-signature": signature,
      },
    };
  }

  /** Posts a user's message event to `eventsUrl` (signed); resolves with the HTTP status and the event. */
  async say(
    eventsUrl: string,
    channel: string,
    text: string,
    options: { user?: string; thread_ts?: string; ts?: string } = {},
  ) {
    const event = {
      type: "message",
      channel,
      user: options.user ?? "U1",
      text,
      ts: options.ts ?? this.nextTs(),
      team: this.team,
      channel_type: "im",
      ...(options.thread_ts ? { thread_ts: options.thread_ts } : {}),
    };
    const { body, headers } = this.signedEvent(event);
    const res = await fetch(eventsUrl, { method: "POST", headers, body });
    return { status: res.status, event };
  }

  /** Posts a `message_changed` event: the user edited message `ts`. */
  async edit(eventsUrl: string, channel: string, ts: string, text: string, user = "U1") {
    const edited = this.nextTs();
    const event = {
      type: "message",
      subtype: "message_changed",
      channel,
      ts: edited,
      hidden: true,
      message: { type: "message", user, text, ts, edited: { user, ts: edited } },
      previous_message: { type: "message", user, text: "(before)", ts },
    };
    const { body, headers } = this.signedEvent(event);
    const res = await fetch(eventsUrl, { method: "POST", headers, body });
    return { status: res.status };
  }

  rateLimit(method: string, seconds: number): void {
    this.faults.set(method, [...(this.faults.get(method) ?? []), { rateLimit: seconds }]);
  }

  fail(method: string, error: string): void {
    this.faults.set(method, [...(this.faults.get(method) ?? []), { error }]);
  }

  /** The next `method` call takes effect at once and is answered `ms` later. */
  hold(method: string, ms: number): void {
    this.holds.set(method, [...(this.holds.get(method) ?? []), ms]);
  }

  inChannel(channel: string): FakeSlackMessage[] {
    return this.messages.filter((message) => message.channel === channel);
  }

  async waitFor(predicate: () => boolean, timeoutMs = 20_000, what = "a condition"): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!predicate()) {
      if (Date.now() > deadline) throw new Error(`fake slack: timed out waiting for ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks).toString("utf8");
    const body = parseBody(raw, req.headers["content-type"] ?? "");
    const reply = (status: number, payload: unknown, headers: Record<string, string> = {}) => {
      if (res.destroyed) return;
      res.writeHead(status, { "content-type": "application/json", ...headers }).end(JSON.stringify(payload));
    };
    const match = /^\/api\/([\w.]+)$/.exec(new URL(req.url ?? "/", "http://x").pathname);
    if (!match) return reply(404, { ok: false, error: "unknown_method" });
    const method = match[1]!;
    const token = (req.headers.authorization ?? "").replace(/^Bearer /, "") || String(body.token ?? "");
    // Socket Mode's handshake is the one method called with the app-level token.
    const socket = method === "apps.connections.open" ? this.connections : undefined;
    if (socket) {
      this.calls.push({ method, body });
      return reply(200, socket(token));
    }
    if (token !== this.botToken) return reply(200, { ok: false, error: "invalid_auth" });
    this.calls.push({ method, body });
    const fault = this.faults.get(method)?.shift();
    if (fault?.rateLimit !== undefined)
      return reply(429, { ok: false, error: "ratelimited" }, { "retry-after": String(fault.rateLimit) });
    if (fault?.error) return reply(200, { ok: false, error: fault.error });
    const result = this.apply(method, body);
    const held = this.holds.get(method)?.shift();
    if (held) await new Promise((resolve) => setTimeout(resolve, held));
    reply(200, result);
  }

  private apply(method: string, body: Record<string, unknown>): Record<string, unknown> {
    const channel = String(body.channel ?? "");
    switch (method) {
      case "auth.test":
        return {
          ok: true,
          url: "https://fake.slack.test/",
          team: "Fake",
          user: "tiller",
          team_id: this.team,
          user_id: "UBOT",
          bot_id: "BBOT",
        };
      case "chat.postMessage": {
        const text = String(body.text ?? "");
        if (text.length > 40_000) return { ok: false, error: "msg_too_long" };
        if (!channel) return { ok: false, error: "channel_not_found" };
        const metadata = typeof body.metadata === "string" ? JSON.parse(body.metadata) : body.metadata;
        const message: FakeSlackMessage = {
          channel,
          ts: this.nextTs(),
          text,
          edits: [],
          ...(body.thread_ts ? { thread_ts: String(body.thread_ts) } : {}),
          ...(metadata ? { metadata } : {}),
        };
        this.messages.push(message);
        return {
          ok: true,
          channel,
          ts: message.ts,
          message: { type: "message", text, ts: message.ts, bot_id: "BBOT" },
        };
      }
      case "chat.update": {
        const message = this.messages.find((m) => m.channel === channel && m.ts === body.ts);
        if (!message) return { ok: false, error: "message_not_found" };
        message.edits.push(message.text);
        message.text = String(body.text ?? "");
        return { ok: true, channel, ts: message.ts, text: message.text };
      }
      case "reactions.add":
        this.reactions.push({ channel, timestamp: String(body.timestamp), name: String(body.name) });
        return { ok: true };
      case "conversations.history":
      case "conversations.replies": {
        const oldest = Number(body.oldest ?? 0);
        const withMeta = String(body.include_all_metadata) === "true";
        const thread = method === "conversations.replies" ? String(body.ts) : undefined;
        const messages = this.messages
          .filter(
            (m) =>
              m.channel === channel &&
              Number(m.ts) >= oldest &&
              (thread === undefined || m.thread_ts === thread),
          )
          .reverse()
          .map((m) => ({
            type: "message",
            ts: m.ts,
            text: m.text,
            bot_id: "BBOT",
            ...(withMeta && m.metadata ? { metadata: m.metadata } : {}),
          }));
        return { ok: true, messages, has_more: false };
      }
      default:
        return { ok: false, error: "unknown_method" };
    }
  }
}

function parseBody(raw: string, contentType: string): Record<string, unknown> {
  if (raw === "") return {};
  if (contentType.includes("application/json")) return JSON.parse(raw) as Record<string, unknown>;
  return Object.fromEntries(new URLSearchParams(raw));
}
