import { z } from "zod";

/**
 * The `channels` key of the gateway config: the chat platforms `tiller serve` puts the gateway in front
 * of (docs/channels.md). `createGateway` ignores it; code that builds its own channels passes them.
 */
const telegramSchema = z
  .object({
    /**
     * The bot's token from @BotFather.
     * @default the TELEGRAM_BOT_TOKEN environment variable
     */
    token: z.string().min(1).optional(),
    /**
     * The Bot API server (a local Bot API server, or a test double): calls go to `<apiRoot>/bot<token>/<method>`.
     * @default "https://api.telegram.org"
     */
    apiRoot: z.url({ protocol: /^https?$/, error: "expected an http or https URL" }).optional(),
    /**
     * `polling`: Tiller long-polls `getUpdates`; `webhook`: Telegram posts updates to `webhookPath`.
     * @default "polling"
     */
    mode: z.enum(["polling", "webhook"]).default("polling"),
    /**
     * The path of `tiller serve`'s HTTP server that takes webhook updates.
     * @default "/telegram"
     */
    webhookPath: z
      .string()
      .regex(/^\/[^?#\s]*$/, "a path starting with /")
      .default("/telegram"),
    /**
     * The public HTTPS address Telegram should post updates to; when set, `tiller serve` registers it
     * with `setWebhook` at startup.
     * @default none (register it yourself)
     */
    webhookUrl: z.url({ protocol: /^https?$/, error: "expected an http or https URL" }).optional(),
    /**
     * A secret Telegram sends with each webhook update (`X-Telegram-Bot-Api-Secret-Token`); updates
     * without it are refused with 401.
     * @default the TELEGRAM_WEBHOOK_SECRET environment variable, else none
     */
    webhookSecret: z
      .string()
      .regex(/^[A-Za-z0-9_-]{1,256}$/, "1-256 of A-Z, a-z, 0-9, _ and -")
      .optional(),
    /**
     * Chat ids whose messages are taken; messages from other chats are ignored.
     * @default every chat
     */
    allowedChats: z.array(z.union([z.number().int(), z.string().regex(/^-?\d+$/, "a chat id")])).optional(),
  })
  .strict();

const slackSchema = z
  .object({
    /**
     * The bot token (`xoxb-…`).
     * @default the SLACK_BOT_TOKEN environment variable
     */
    botToken: z.string().min(1).optional(),
    /**
     * The app's signing secret: every Events API request's signature is checked with it.
     * @default the SLACK_SIGNING_SECRET environment variable
     */
    signingSecret: z.string().min(1).optional(),
    /**
     * The app-level token (`xapp-…`, scope `connections:write`) Socket Mode connects with.
     * @default the SLACK_APP_TOKEN environment variable
     */
    appToken: z.string().min(1).optional(),
    /**
     * `events`: Slack posts events to `POST /slack/events` on `tiller serve`; `socket`: Tiller opens a
     * Socket Mode connection (no public address needed).
     * @default "events"
     */
    mode: z.enum(["events", "socket"]).default("events"),
    /**
     * The Web API root, ending in `/api/`.
     * @default "https://slack.com/api/"
     */
    apiUrl: z.url({ protocol: /^https?$/, error: "expected an http or https URL" }).optional(),
  })
  .strict();

export const channelsSchema = z
  .object({
    /** A Telegram bot (docs/channels.md). */
    telegram: telegramSchema.optional(),
    /** A Slack app (docs/channels.md). */
    slack: slackSchema.optional(),
  })
  .strict();

export type TelegramConfig = z.output<typeof telegramSchema>;
export type SlackConfig = z.output<typeof slackSchema>;
