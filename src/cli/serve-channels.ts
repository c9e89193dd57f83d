import { join } from "node:path";
import type { ChatReceive } from "../adapters/channels/chat/chat-inbound.js";
import { FileSendLedger } from "../adapters/channels/chat/send-ledger.js";
import { SlackChannel } from "../adapters/channels/slack/slack-channel.js";
import { TelegramChannel } from "../adapters/channels/telegram/telegram-channel.js";
import type { GatewayConfig } from "../config.js";
import { errorMessage } from "../errors.js";
import type { Route } from "../http/router.js";
import type { Logger } from "../logger.js";
import type { Channel } from "../ports/channel.js";
import { UsageError } from "./serve-setup.js";

/** A chat platform `tiller serve` answers on: its channel, its HTTP routes, its start and stop. */
interface ChatApp {
  name: string;
  channel: Channel;
  routes(): Route[];
  start(receive: ChatReceive): Promise<void>;
  stop(): Promise<void>;
  describe: string;
}

export interface ChatChannels {
  channels: Record<string, Channel>;
  routes: Route[];
  /** Starts taking messages (polling, a socket) once the gateway can receive them. */
  start(receive: ChatReceive): Promise<void>;
  /** Stops taking messages; outbound sends still work until the gateway stops. */
  stop(): Promise<void>;
  /** One banner line per platform. */
  lines: string[];
}

/**
 * The chat platforms of the config's `channels` (docs/channels.md), each with its send ledger in
 * `<storeDir>/channels/<name>.jsonl` so a restart never re-posts what a platform already has. Tokens
 * missing from the config are read from the environment; a platform left without one is a UsageError
 * that names the field.
 */
export async function openChatChannels(
  config: GatewayConfig,
  env: NodeJS.ProcessEnv,
  storeDir: string,
  logger: Logger,
): Promise<ChatChannels> {
  const apps: ChatApp[] = [];
  const telegram = config.channels.telegram;
  if (telegram) {
    const token = telegram.token ?? (env.TELEGRAM_BOT_TOKEN || undefined);
    if (!token)
      throw new UsageError(
        "channels.telegram.token: a bot token is required; set it in the config or TELEGRAM_BOT_TOKEN",
      );
    const secret = telegram.webhookSecret ?? (env.TELEGRAM_WEBHOOK_SECRET || undefined);
    const channel = new TelegramChannel({
      token,
      mode: telegram.mode,
      webhookPath: telegram.webhookPath,
      ...(telegram.apiRoot ? { apiRoot: telegram.apiRoot } : {}),
      ...(telegram.webhookUrl ? { webhookUrl: telegram.webhookUrl } : {}),
      ...(secret ? { webhookSecret: secret } : {}),
      ...(telegram.allowedChats ? { allowedChats: telegram.allowedChats } : {}),
      ledger: await FileSendLedger.open(join(storeDir, "channels", "telegram.jsonl")),
      logger,
    });
    apps.push({
      name: "telegram",
      channel,
      routes: () => channel.routes(),
      start: (receive) => channel.start(receive),
      stop: () => channel.stop(),
      describe:
        telegram.mode === "webhook"
          ? `telegram (webhook at POST ${telegram.webhookPath}${secret ? ", secret checked" : ""})`
          : "telegram (long polling)",
    });
  }
  const slack = config.channels.slack;
  if (slack) {
    const botToken = slack.botToken ?? (env.SLACK_BOT_TOKEN || undefined);
    const signingSecret = slack.signingSecret ?? (env.SLACK_SIGNING_SECRET || undefined);
    const appToken = slack.appToken ?? (env.SLACK_APP_TOKEN || undefined);
    if (!botToken)
      throw new UsageError(
        "channels.slack.botToken: a bot token (xoxb-…) is required; set it in the config or SLACK_BOT_TOKEN",
      );
    if (slack.mode === "events" && !signingSecret)
      throw new UsageError(
        "channels.slack.signingSecret: the Events API needs the app's signing secret; set it in the config or SLACK_SIGNING_SECRET",
      );
    if (slack.mode === "socket" && !appToken)
      throw new UsageError(
        "channels.slack.appToken: Socket Mode needs an app-level token (xapp-…); set it in the config or SLACK_APP_TOKEN",
      );
    const channel = new SlackChannel({
      botToken,
      mode: slack.mode,
      ...(signingSecret ? { signingSecret } : {}),
      ...(appToken ? { appToken } : {}),
      ...(slack.apiUrl ? { apiUrl: slack.apiUrl } : {}),
      ledger: await FileSendLedger.open(join(storeDir, "channels", "slack.jsonl")),
      logger,
    });
    apps.push({
      name: "slack",
      channel,
      routes: () => channel.routes(),
      start: (receive) => channel.start(receive),
      stop: () => channel.stop(),
      describe:
        slack.mode === "socket"
          ? "slack (Socket Mode)"
          : "slack (Events API at POST /slack/events, signatures checked)",
    });
  }
  return {
    channels: Object.fromEntries(apps.map((app) => [app.name, app.channel])),
    routes: apps.flatMap((app) => app.routes()),
    async start(receive) {
      for (const app of apps) {
        try {
          await app.start(receive);
        } catch (error) {
          throw new UsageError(`channels.${app.name}: cannot start (${errorMessage(error)})`);
        }
      }
    },
    async stop() {
      await Promise.all(apps.map((app) => app.stop().catch(() => undefined)));
    },
    lines: apps.map((app) => app.describe),
  };
}
