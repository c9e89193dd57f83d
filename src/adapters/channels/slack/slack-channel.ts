import { App, HTTPReceiver, LogLevel, SocketModeReceiver } from "@slack/bolt";
import type { WebClient } from "@slack/web-api";
import { ChannelSendError, errorMessage } from "../../../errors.js";
import { type Logger, silentLogger } from "../../../logger.js";
import type { Channel, DeliveryReceipt, EditTarget, OutboundMessage } from "../../../ports/channel.js";
import type { Route } from "../../../ports/http-route.js";
import type { ChatReceive } from "../chat/chat-inbound.js";
import { ChatSender } from "../chat/chat-sender.js";
import { type LedgerEntry, MemorySendLedger, type SendLedger } from "../chat/send-ledger.js";
import { discardStalePreviews, recordEdit, stalePreviews } from "../chat/stale-previews.js";
import { ackAfterHandled } from "./ack-after-handled.js";
import { slackSendError } from "./slack-errors.js";
import {
  parseSlackSession,
  type SlackMessageEvent,
  type SlackTarget,
  slackInbound,
} from "./slack-inbound.js";

/** Slack's advice for one message's text (it cuts at 40,000; 4,000 reads well). */
export const SLACK_MAX_LENGTH = 4000;

/** The metadata event type each post carries, with its deliveryId, so a restart can find it again. */
export const DELIVERY_METADATA = "tiller_delivery";

/** Ack reactions (emoji) as Slack's reaction names. */
const REACTION_NAMES: Record<string, string> = {
  "👀": "eyes",
  "✍": "writing_hand",
  "✍️": "writing_hand",
  "👌": "ok_hand",
  "⚡": "zap",
  "🤷": "shrug",
  "🚫": "no_entry_sign",
};

export interface SlackChannelOptions {
  /** The bot token (`xoxb-…`). */
  botToken: string;
  /** The signing secret every Events API request is verified with. */
  signingSecret?: string;
  /** The app-level token (`xapp-…`) for Socket Mode. */
  appToken?: string;
  /** `events`: requests to `POST /slack/events`; `socket`: a Socket Mode connection. @default "events" */
  mode?: "events" | "socket";
  /** The Web API root. @default "https://slack.com/api/" */
  apiUrl?: string;
  /** Where sends are recorded so a restart never posts one twice. @default in memory */
  ledger?: SendLedger;
  /** The channel's name in the gateway. @default "slack" */
  name?: string;
  logger?: Logger;
}

/**
 * A Slack app as a Tiller channel, on Bolt. Inbound: `message` events (Events API at
 * `POST /slack/events`, signatures checked by Bolt, answered only once `receive` resolved; or Socket
 * Mode, each envelope acked only once `receive` resolved) become `gateway.receive` calls, session
 * `slack:<team>:<channel>` (a thread: `slack:<team>:<channel>:<thread_ts>`). Outbound:
 * `chat.postMessage` (in the thread), `chat.update` previews, `reactions.add` acks. The Web API client
 * never retries by itself (a retried post could show twice): a 429 comes back as `retryAfterMs`, and
 * each post carries its deliveryId as message metadata, so a send an earlier process began is looked
 * up in the conversation before it is posted again. At
 * start, a streaming preview an earlier process left standing is edited to the discarded text.
 *
 * @example
 * ```ts
 * const slack = new SlackChannel({ botToken: process.env.SLACK_BOT_TOKEN!, signingSecret: process.env.SLACK_SIGNING_SECRET! });
 * const gateway = createGateway({ model, channels: { slack } });
 * await slack.start((message) => gateway.receive(message));
 * ```
 */
export class SlackChannel implements Channel {
  readonly maxLength = SLACK_MAX_LENGTH;
  readonly app: App;
  private readonly receiver: HTTPReceiver | SocketModeReceiver;
  private readonly sender: ChatSender;
  private readonly ledger: SendLedger;
  /** Previews an earlier process left standing, read before this one sends anything. */
  private readonly stale: LedgerEntry[];
  private readonly logger: Logger;
  private receive: ChatReceive | undefined;
  private started = false;

  constructor(private readonly options: SlackChannelOptions) {
    this.logger = options.logger ?? silentLogger;
    this.ledger = options.ledger ?? new MemorySendLedger();
    this.stale = stalePreviews(this.ledger);
    const clientOptions = {
      ...(options.apiUrl ? { slackApiUrl: options.apiUrl } : {}),
      // Tiller decides about retries: a post retried here could reach the channel twice.
      retryConfig: { retries: 0 },
      rejectRateLimitedCalls: true,
    };
    if (this.mode === "socket") {
      if (!options.appToken)
        throw new ChannelSendError("slack: Socket Mode needs appToken", { permanent: true });
      this.receiver = new SocketModeReceiver({
        appToken: options.appToken,
        logLevel: LogLevel.ERROR,
        installerOptions: { clientOptions: options.apiUrl ? { slackApiUrl: options.apiUrl } : {} },
      });
    } else {
      if (!options.signingSecret)
        throw new ChannelSendError("slack: the Events API needs signingSecret", { permanent: true });
      // Answered after the listener resolved: Slack's retry of an unanswered event is a duplicate.
      this.receiver = new HTTPReceiver({
        signingSecret: options.signingSecret,
        processBeforeResponse: true,
        logLevel: LogLevel.ERROR,
      });
    }
    this.app = new App({
      token: options.botToken,
      receiver: this.receiver,
      clientOptions,
      logLevel: LogLevel.ERROR,
      deferInitialization: true,
    });
    if (this.mode === "socket") ackAfterHandled(this.app);
    this.sender = new ChatSender(
      {
        post: (message, text, partId) => this.post(message, text, partId),
        reconcile: (partId) => this.reconcile(partId),
        classify: slackSendError,
        conversation: (session) => this.target(session).channel,
      },
      this.ledger,
      SLACK_MAX_LENGTH,
    );
    this.app.event("message", async ({ event, body }) => {
      const team = (body as { team_id?: string }).team_id ?? (event as { team?: string }).team ?? "T";
      const inbound = slackInbound(event as unknown as SlackMessageEvent, team, this.name);
      if (inbound && this.receive) await this.receive(inbound);
    });
    this.app.error(async (error) => {
      this.logger.error({ error: errorMessage(error) }, "slack.eventFailed");
      // Rethrown: the Events API request is answered 500, so Slack delivers the event again.
      throw error;
    });
  }

  get name(): string {
    return this.options.name ?? "slack";
  }

  get mode(): "events" | "socket" {
    return this.options.mode ?? "events";
  }

  private get client(): WebClient {
    return this.app.client;
  }

  /** `POST /slack/events` for `tiller serve`'s server (none in Socket Mode). */
  routes(): Route[] {
    const receiver = this.receiver;
    if (!(receiver instanceof HTTPReceiver)) return [];
    return [
      {
        method: "POST",
        path: "/slack/events",
        handler: ({ req, res }) => receiver.requestListener(req, res),
      },
    ];
  }

  /** Checks the token (`auth.test`), then takes events into `receive` (opening the socket in Socket Mode). */
  async start(receive: ChatReceive): Promise<void> {
    this.receive = receive;
    await this.app.init();
    // A preview an earlier process left standing (it died mid-stream) must not pass for an answer.
    await discardStalePreviews(
      this.ledger,
      this.stale,
      (target, text) => this.edit(target, text),
      this.logger,
      (deliveryId) => this.reconcile(deliveryId),
    );
    if (this.receiver instanceof SocketModeReceiver) {
      await this.receiver.start();
      this.started = true;
    }
  }

  /** Stops taking events (closes the socket); sends still work. */
  async stop(): Promise<void> {
    this.receive = undefined;
    if (this.started && this.receiver instanceof SocketModeReceiver) await this.receiver.stop();
    this.started = false;
  }

  send(message: OutboundMessage, options?: { signal?: AbortSignal }): Promise<DeliveryReceipt> {
    return this.sender.send(message, options?.signal);
  }

  /** Replaces a posted message's text (a streaming preview) with `chat.update`. */
  async edit(target: EditTarget, text: string, options?: { signal?: AbortSignal }) {
    const { channel } = this.target(target.session);
    await this.sender.waitTurn(target.session, options?.signal);
    const result = await this.client.chat
      .update({ channel, ts: target.messageId, text: clip(text) })
      .catch((error: unknown) => {
        const failure = slackSendError(error, options?.signal);
        this.sender.noteRateLimit(target.session, failure);
        throw failure;
      });
    await recordEdit(this.ledger, target, text, Date.now());
    return result;
  }

  /** Slack shows no typing indicator for apps' bot users through the Web API: nothing to do. */
  async typing(_session: string): Promise<void> {}

  /** Adds an ack reaction to an inbound message (`reactions.add`). */
  async react(session: string, messageId: string, reaction: string): Promise<void> {
    const { channel } = this.target(session);
    const name = REACTION_NAMES[reaction] ?? reaction.replace(/:/g, "");
    await this.client.reactions
      .add({ channel, timestamp: messageId, name })
      .catch((error: unknown) =>
        this.logger.warn({ session, error: errorMessage(error) }, "slack.reactFailed"),
      );
  }

  /**
   * Whether a send an earlier process began reached Slack: its post carries the deliveryId in its
   * metadata, so the conversation's messages since the send began tell.
   */
  async reconcile(
    deliveryId: string,
  ): Promise<{ delivered: true; messageId: string } | { delivered: false }> {
    const entry = this.ledger.get(deliveryId);
    if (!entry) return { delivered: false };
    const { channel, threadTs } = this.target(entry.session);
    const oldest = ((entry.at - 60_000) / 1000).toFixed(6);
    const page = threadTs
      ? await this.client.conversations.replies({
          channel,
          ts: threadTs,
          oldest,
          include_all_metadata: true,
          limit: 200,
        })
      : await this.client.conversations.history({ channel, oldest, include_all_metadata: true, limit: 200 });
    const found = (page.messages ?? []).find(
      (message) =>
        message.metadata?.event_type === DELIVERY_METADATA &&
        (message.metadata.event_payload as { delivery_id?: unknown } | undefined)?.delivery_id === deliveryId,
    );
    return found?.ts ? { delivered: true, messageId: found.ts } : { delivered: false };
  }

  private async post(message: OutboundMessage, text: string, partId: string): Promise<string> {
    const { channel, threadTs } = this.target(message.session);
    const result = await this.client.chat.postMessage({
      channel,
      text,
      ...(threadTs ? { thread_ts: threadTs } : {}),
      metadata: { event_type: DELIVERY_METADATA, event_payload: { delivery_id: partId } },
    });
    if (!result.ts)
      throw new ChannelSendError("slack: chat.postMessage answered without ts", { outcome: "unknown" });
    return result.ts;
  }

  private target(session: string): SlackTarget {
    const target = parseSlackSession(session);
    if (!target)
      throw new ChannelSendError(`slack: session ${session} is not slack:<team>:<channel>[:<thread_ts>]`, {
        permanent: true,
      });
    return target;
  }
}

function clip(text: string): string {
  return text.length > SLACK_MAX_LENGTH ? `${text.slice(0, SLACK_MAX_LENGTH - 1)}…` : text;
}
