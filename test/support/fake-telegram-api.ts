import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** A message the bot posted, as the fake keeps it (and as a chat would show it). */
export interface FakeTelegramMessage {
  message_id: number;
  chat_id: string;
  text: string;
  message_thread_id?: number;
  reply_to?: number;
  edits: string[];
}

/** One Bot API call the fake answered. */
export interface FakeTelegramCall {
  method: string;
  body: Record<string, unknown>;
}

interface Fault {
  status: number;
  description: string;
  parameters?: Record<string, unknown>;
}

/**
 * A local Telegram Bot API (`POST /bot<token>/<method>`, JSON in, `{ ok, result }` or `{ ok: false,
 * error_code, description, parameters }` out) for tests: long-polled `getUpdates` with offsets,
 * `sendMessage` (4096-character limit, `reply_parameters`, topics), `editMessageText`, `sendChatAction`,
 * `setMessageReaction`, webhooks. Faults: `fail(method, fault)` answers the next call with an error;
 * `hold(method, ms)` makes the next call take effect at once but answer `ms` later (a slow network
 * after the platform already has the message).
 */
export class FakeTelegramApi {
  readonly calls: FakeTelegramCall[] = [];
  readonly messages: FakeTelegramMessage[] = [];
  readonly reactions: Array<{ chat_id: string; message_id: number; emoji: string }> = [];
  readonly actions: Array<{ chat_id: string; action: string }> = [];
  private readonly updates: Array<Record<string, unknown>> = [];
  private readonly waiters = new Set<() => void>();
  private readonly faults = new Map<string, Fault[]>();
  private readonly holds = new Map<string, number[]>();
  private nextUpdateId = 1;
  private nextMessageId = 1000;
  private nextUserMessageId = 1;
  webhookUrl = "";
  private server: Server | undefined;
  url = "";

  constructor(readonly token = "123:TEST") {}

  async start(): Promise<this> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server!.listen(0, "127.0.0.1", resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  async close(): Promise<void> {
    for (const wake of this.waiters) wake();
    await new Promise<void>((resolve) => {
      this.server?.close(() => resolve());
      this.server?.closeAllConnections();
    });
  }

  /** A user writes in a chat; returns the update (queued for getUpdates). */
  userSays(
    chatId: number,
    text: string,
    options: { from?: { id: number; first_name: string }; topic?: number; type?: string } = {},
  ) {
    const message = {
      message_id: this.nextUserMessageId++,
      date: Math.floor(Date.now() / 1000),
      chat: { id: chatId, type: options.type ?? (chatId < 0 ? "supergroup" : "private") },
      from: { is_bot: false, ...(options.from ?? { id: chatId, first_name: "Ada" }) },
      text,
      ...(options.topic !== undefined ? { message_thread_id: options.topic, is_topic_message: true } : {}),
    };
    return this.queue({ message });
  }

  /** A user edits one of their messages. */
  userEdits(chatId: number, messageId: number, text: string, from = { id: chatId, first_name: "Ada" }) {
    const edited_message = {
      message_id: messageId,
      date: Math.floor(Date.now() / 1000) - 1,
      edit_date: Math.floor(Date.now() / 1000),
      chat: { id: chatId, type: chatId < 0 ? "supergroup" : "private" },
      from: { is_bot: false, ...from },
      text,
    };
    return this.queue({ edited_message });
  }

  /** The next `method` call fails with this Bot API error. */
  fail(method: string, fault: Fault): void {
    this.faults.set(method, [...(this.faults.get(method) ?? []), fault]);
  }

  /** The next `method` call takes effect at once and is answered `ms` later. */
  hold(method: string, ms: number): void {
    this.holds.set(method, [...(this.holds.get(method) ?? []), ms]);
  }

  /** The messages the bot posted to a chat, in order. */
  chat(chatId: number | string): FakeTelegramMessage[] {
    return this.messages.filter((message) => message.chat_id === String(chatId));
  }

  /** Resolves once `predicate` holds (checked after every call), or rejects after `timeoutMs`. */
  async waitFor(predicate: () => boolean, timeoutMs = 20_000, what = "a condition"): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!predicate()) {
      if (Date.now() > deadline) throw new Error(`fake telegram: timed out waiting for ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  private queue(update: Record<string, unknown>) {
    const full = { update_id: this.nextUpdateId++, ...update };
    this.updates.push(full);
    for (const wake of this.waiters) wake();
    return full as {
      update_id: number;
      message?: { message_id: number };
      edited_message?: { message_id: number };
    };
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const match = /^\/bot([^/]+)\/(\w+)$/.exec(new URL(req.url ?? "/", "http://x").pathname);
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks).toString("utf8");
    const body = (raw ? JSON.parse(raw) : {}) as Record<string, unknown>;
    const reply = (status: number, payload: unknown) => {
      if (res.destroyed) return;
      res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(payload));
    };
    if (!match) return reply(404, { ok: false, error_code: 404, description: "Not Found" });
    if (match[1] !== this.token)
      return reply(401, { ok: false, error_code: 401, description: "Unauthorized" });
    const method = match[2]!;
    this.calls.push({ method, body });
    const fault = this.faults.get(method)?.shift();
    if (fault)
      return reply(fault.status, {
        ok: false,
        error_code: fault.status,
        description: fault.description,
        ...(fault.parameters ? { parameters: fault.parameters } : {}),
      });
    let result: unknown;
    try {
      result = method === "getUpdates" ? await this.getUpdates(body, res) : this.apply(method, body);
    } catch (error) {
      return reply(400, { ok: false, error_code: 400, description: (error as Error).message });
    }
    const held = this.holds.get(method)?.shift();
    if (held) await new Promise((resolve) => setTimeout(resolve, held));
    reply(200, { ok: true, result });
  }

  private apply(method: string, body: Record<string, unknown>): unknown {
    const chatId = body.chat_id === undefined ? "" : String(body.chat_id);
    switch (method) {
      case "getMe":
        return { id: 123, is_bot: true, first_name: "Tiller", username: "tiller_test_bot" };
      case "deleteWebhook":
        this.webhookUrl = "";
        return true;
      case "setWebhook":
        this.webhookUrl = String(body.url);
        return true;
      case "sendMessage": {
        const text = String(body.text ?? "");
        if (text.length === 0) throw new Error("Bad Request: message text is empty");
        if (text.length > 4096) throw new Error("Bad Request: message is too long");
        const reply = body.reply_parameters as { message_id?: number } | undefined;
        const message: FakeTelegramMessage = {
          message_id: this.nextMessageId++,
          chat_id: chatId,
          text,
          edits: [],
          ...(typeof body.message_thread_id === "number"
            ? { message_thread_id: body.message_thread_id }
            : {}),
          ...(reply?.message_id !== undefined ? { reply_to: reply.message_id } : {}),
        };
        this.messages.push(message);
        return {
          message_id: message.message_id,
          date: Math.floor(Date.now() / 1000),
          chat: { id: Number(chatId), type: "private" },
          text,
        };
      }
      case "editMessageText": {
        const message = this.messages.find((m) => m.chat_id === chatId && m.message_id === body.message_id);
        if (!message) throw new Error("Bad Request: message to edit not found");
        const text = String(body.text ?? "");
        if (text === message.text)
          throw new Error(
            "Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message",
          );
        if (text.length > 4096) throw new Error("Bad Request: MESSAGE_TOO_LONG");
        message.edits.push(message.text);
        message.text = text;
        return {
          message_id: message.message_id,
          chat: { id: Number(chatId), type: "private" },
          date: 0,
          text,
        };
      }
      case "sendChatAction":
        this.actions.push({ chat_id: chatId, action: String(body.action) });
        return true;
      case "setMessageReaction": {
        const [reaction] = (body.reaction as Array<{ emoji: string }> | undefined) ?? [];
        if (reaction)
          this.reactions.push({
            chat_id: chatId,
            message_id: Number(body.message_id),
            emoji: reaction.emoji,
          });
        return true;
      }
      default:
        throw new Error(`Bad Request: method ${method} not supported by the fake`);
    }
  }

  private async getUpdates(body: Record<string, unknown>, res: ServerResponse): Promise<unknown> {
    const offset = typeof body.offset === "number" ? body.offset : 0;
    // Confirming: updates below the offset are gone for good, as Telegram forgets them.
    while (this.updates.length > 0 && (this.updates[0]!.update_id as number) < offset) this.updates.shift();
    const timeoutMs = (typeof body.timeout === "number" ? body.timeout : 0) * 1000;
    if (this.updates.length === 0 && timeoutMs > 0) {
      await new Promise<void>((resolve) => {
        const wake = () => {
          clearTimeout(timer);
          this.waiters.delete(wake);
          resolve();
        };
        const timer = setTimeout(wake, timeoutMs);
        this.waiters.add(wake);
        res.once("close", wake);
      });
    }
    const limit = typeof body.limit === "number" ? body.limit : 100;
    return this.updates.slice(0, limit);
  }
}
