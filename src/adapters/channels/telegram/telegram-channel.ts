import { type Api, Bot, webhookCallback } from "grammy";
import type { ReactionTypeEmoji } from "grammy/types";
import { ChannelSendError, errorMessage } from "../../../errors.js";
import { type Logger, silentLogger } from "../../../logger.js";
import type { Channel, DeliveryReceipt, EditTarget, OutboundMessage } from "../../../ports/channel.js";
import type { Route } from "../../../ports/http-route.js";
import type { ChatReceive } from "../chat/chat-inbound.js";
import { ChatSender } from "../chat/chat-sender.js";
import { type LedgerEntry, MemorySendLedger, type SendLedger } from "../chat/send-ledger.js";
import { discardStalePreviews, recordEdit, stalePreviews } from "../chat/stale-previews.js";
import { isNotModified, telegramSendError } from "./telegram-errors.js";
import { parseTelegramSession, type TelegramTarget, telegramInbound } from "./telegram-inbound.js";

// grammY types its signal with the abort-controller polyfill's class; the platform's is the same at run time.
type GrammySignal = Parameters<Api["sendMessage"]>[3];

/** Telegram's limit on one message's text. */
export const TELEGRAM_MAX_LENGTH = 4096;

export interface TelegramChannelOptions {
  /** The bot's token from @BotFather. */
  token: string;
  /** The Bot API server. @default "https://api.telegram.org" */
  apiRoot?: string;
  /** How updates arrive: long polling (`getUpdates`) or Telegram's POSTs to `webhookPath`. @default "polling" */
  mode?: "polling" | "webhook";
  /** The path of `tiller serve`'s HTTP server that takes webhook updates. @default "/telegram" */
  webhookPath?: string;
  /** The public HTTPS URL Telegram should post to; when set, `start` calls `setWebhook` with it. */
  webhookUrl?: string;
  /** Checked against `X-Telegram-Bot-Api-Secret-Token` on each webhook update (and given to `setWebhook`). */
  webhookSecret?: string;
  /** Chats whose messages are taken; others are ignored. @default every chat */
  allowedChats?: Array<string | number>;
  /** Where sends are recorded so a restart never posts one twice. @default in memory */
  ledger?: SendLedger;
  /** The channel's name in the gateway. @default "telegram" */
  name?: string;
  /** Seconds a `getUpdates` long poll waits. @default 30 */
  pollTimeoutSeconds?: number;
  logger?: Logger;
}

/**
 * A Telegram bot as a Tiller channel, on grammY. Inbound: `message` and `edited_message` updates by long
 * polling or webhook become `gateway.receive` calls (session `telegram:<chat.id>`, a forum topic
 * `telegram:<chat.id>:<message_thread_id>`); an update is confirmed to Telegram only after `receive`
 * resolved, so nothing acknowledged is lost. Outbound: `sendMessage` replying to the answered message,
 * split at 4096 characters, at most once per deliveryId (see `ChatSender`); previews by
 * `editMessageText`, typing by `sendChatAction`, ack reactions by `setMessageReaction`. At start, a
 * preview an earlier process left standing (it died mid-stream) is edited to the discarded text.
 *
 * @example
 * ```ts
 * const telegram = new TelegramChannel({ token: process.env.TELEGRAM_BOT_TOKEN! });
 * const gateway = createGateway({ model, channels: { telegram } });
 * await gateway.start();
 * await telegram.start((message) => gateway.receive(message));
 * ```
 */
export class TelegramChannel implements Channel {
  readonly maxLength = TELEGRAM_MAX_LENGTH;
  readonly bot: Bot;
  private readonly sender: ChatSender;
  private readonly ledger: SendLedger;
  /** Previews an earlier process left standing, read before this one sends anything. */
  private readonly stale: LedgerEntry[];
  private readonly logger: Logger;
  private readonly allowed: Set<string> | undefined;
  private receive: ChatReceive | undefined;
  private polling: Promise<void> | undefined;

  constructor(private readonly options: TelegramChannelOptions) {
    this.logger = options.logger ?? silentLogger;
    this.bot = new Bot(options.token, { client: options.apiRoot ? { apiRoot: options.apiRoot } : {} });
    this.allowed = options.allowedChats ? new Set(options.allowedChats.map(String)) : undefined;
    this.ledger = options.ledger ?? new MemorySendLedger();
    this.stale = stalePreviews(this.ledger);
    this.sender = new ChatSender(
      {
        post: (message, text) => this.post(message, text),
        classify: telegramSendError,
        conversation: (session) => this.target(session).chatId,
      },
      this.ledger,
      TELEGRAM_MAX_LENGTH,
    );
    this.bot.on(["message", "edited_message"], async (ctx) => {
      const inbound = telegramInbound(ctx.update, this.name);
      if (!inbound || !this.receive) return;
      if (this.allowed && !this.allowed.has(String(ctx.chat.id))) {
        this.logger.info({ chat: ctx.chat.id }, "telegram.chatNotAllowed");
        return;
      }
      await this.receive(inbound);
    });
    this.bot.catch((error) => {
      this.logger.error(
        { error: errorMessage(error.error), update: error.ctx.update.update_id },
        "telegram.updateFailed",
      );
    });
  }

  get name(): string {
    return this.options.name ?? "telegram";
  }

  get mode(): "polling" | "webhook" {
    return this.options.mode ?? "polling";
  }

  /** The webhook route for `tiller serve`'s server (none in polling mode). */
  routes(): Route[] {
    if (this.mode !== "webhook") return [];
    const handle = webhookCallback(this.bot, "http", {
      ...(this.options.webhookSecret ? { secretToken: this.options.webhookSecret } : {}),
    });
    return [
      {
        method: "POST",
        path: this.options.webhookPath ?? "/telegram",
        handler: ({ req, res }) => handle(req, res),
      },
    ];
  }

  /**
   * Starts taking updates into `receive`: checks the token (`getMe`), then either long-polls (after
   * removing any webhook) or, in webhook mode, registers `webhookUrl` when one is given.
   */
  async start(receive: ChatReceive): Promise<void> {
    this.receive = receive;
    await this.bot.init();
    // A preview an earlier process left standing (it died mid-stream) must not pass for an answer.
    await discardStalePreviews(
      this.ledger,
      this.stale,
      (target, text) => this.edit(target, text),
      this.logger,
    );
    const allowed_updates = ["message", "edited_message"] as const;
    if (this.mode === "webhook") {
      if (this.options.webhookUrl)
        await this.bot.api.setWebhook(this.options.webhookUrl, {
          allowed_updates,
          ...(this.options.webhookSecret ? { secret_token: this.options.webhookSecret } : {}),
        });
      return;
    }
    let started!: () => void;
    const running = new Promise<void>((resolve) => {
      started = resolve;
    });
    this.polling = this.bot
      .start({ allowed_updates, timeout: this.options.pollTimeoutSeconds ?? 30, onStart: () => started() })
      .catch((error: unknown) => {
        this.logger.error({ error: errorMessage(error) }, "telegram.pollingStopped");
        started();
      });
    await running;
  }

  /** Stops polling (confirming what was taken); sends already made are unaffected. */
  async stop(): Promise<void> {
    this.receive = undefined;
    if (this.bot.isRunning()) await this.bot.stop();
    await this.polling;
  }

  send(message: OutboundMessage, options?: { signal?: AbortSignal }): Promise<DeliveryReceipt> {
    return this.sender.send(message, options?.signal);
  }

  /** Replaces a sent message's text (a streaming preview); a text that did not change is not an error. */
  async edit(target: EditTarget, text: string, options?: { signal?: AbortSignal }): Promise<unknown> {
    const { chatId } = this.target(target.session);
    const signal = options?.signal;
    await this.sender.waitTurn(target.session, signal);
    const shown = text.length > TELEGRAM_MAX_LENGTH ? `${text.slice(0, TELEGRAM_MAX_LENGTH - 1)}…` : text;
    let result: unknown = true;
    try {
      result = await this.bot.api.editMessageText(
        chatId,
        Number(target.messageId),
        shown,
        undefined,
        signal as GrammySignal,
      );
    } catch (error) {
      if (!isNotModified(error)) throw this.editFailure(target.session, error, signal);
    }
    await recordEdit(this.ledger, target, text, Date.now());
    return result;
  }

  private editFailure(session: string, error: unknown, signal: AbortSignal | undefined): ChannelSendError {
    const failure = telegramSendError(error, signal);
    this.sender.noteRateLimit(session, failure);
    return failure;
  }

  /** Shows "typing…" in the chat (Telegram keeps it up to 5 s). */
  async typing(session: string): Promise<void> {
    const { chatId, threadId } = this.target(session);
    await this.bot.api
      .sendChatAction(chatId, "typing", threadId === undefined ? {} : { message_thread_id: threadId })
      .catch((error: unknown) =>
        this.logger.warn({ session, error: errorMessage(error) }, "telegram.typingFailed"),
      );
  }

  /** Puts `reaction` (an emoji Telegram allows) on an inbound message. */
  async react(session: string, messageId: string, reaction: string): Promise<void> {
    const { chatId } = this.target(session);
    const emoji = { type: "emoji", emoji: reaction } as ReactionTypeEmoji;
    await this.bot.api
      .setMessageReaction(chatId, Number(messageId), [emoji])
      .catch((error: unknown) =>
        this.logger.warn({ session, error: errorMessage(error) }, "telegram.reactFailed"),
      );
  }

  private async post(message: OutboundMessage, text: string): Promise<string> {
    const { chatId, threadId } = this.target(message.session);
    const replyTo = (message as OutboundMessage & { replyTo?: string }).replyTo;
    const sent = await this.bot.api.sendMessage(chatId, text, {
      ...(threadId === undefined ? {} : { message_thread_id: threadId }),
      ...(replyTo && /^\d+$/.test(replyTo)
        ? { reply_parameters: { message_id: Number(replyTo), allow_sending_without_reply: true } }
        : {}),
    });
    return String(sent.message_id);
  }

  private target(session: string): TelegramTarget {
    const target = parseTelegramSession(session);
    if (!target)
      throw new ChannelSendError(`telegram: session ${session} is not telegram:<chat id>[:<topic id>]`, {
        permanent: true,
      });
    return target;
  }
}
