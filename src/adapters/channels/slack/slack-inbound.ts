import type { ChatInbound } from "../chat/chat-inbound.js";

/** A conversation of a session key: the workspace, the channel and, in a thread, its parent's ts. */
export interface SlackTarget {
  team: string;
  channel: string;
  threadTs?: string;
}

/** `slack:<team>:<channel>`, or `slack:<team>:<channel>:<thread_ts>` in a thread. */
export function slackSessionKey(team: string, channel: string, threadTs?: string): string {
  return threadTs === undefined ? `slack:${team}:${channel}` : `slack:${team}:${channel}:${threadTs}`;
}

/** The conversation a `slack:` session key names; undefined for a key of another form. */
export function parseSlackSession(session: string): SlackTarget | undefined {
  const match = /^slack:([A-Z0-9]+):([A-Z0-9]+)(?::(\d+\.\d+))?$/i.exec(session);
  if (!match) return undefined;
  return { team: match[1]!, channel: match[2]!, ...(match[3] ? { threadTs: match[3] } : {}) };
}

/** The fields of a Slack `message` event Tiller reads (plain, in a thread, or `message_changed`). */
export interface SlackMessageEvent {
  type: string;
  subtype?: string;
  channel: string;
  user?: string;
  bot_id?: string;
  text?: string;
  ts: string;
  thread_ts?: string;
  team?: string;
  message?: {
    user?: string;
    bot_id?: string;
    text?: string;
    ts: string;
    thread_ts?: string;
    edited?: { ts: string };
  };
}

/**
 * A `message` event as the gateway's inbound message (undefined for bots, this app's own posts, and
 * subtypes other than a plain message and `message_changed`). The message id is the event's `ts`; an
 * edit gets `<ts>:edit:<edited.ts>` and names the original in `editOf`. A message in a thread is its own
 * session, keyed by the thread's parent `ts`.
 */
export function slackInbound(
  event: SlackMessageEvent,
  team: string,
  channel = "slack",
): ChatInbound | undefined {
  const edited = event.subtype === "message_changed";
  if (event.subtype !== undefined && !edited) return undefined;
  const message = edited ? event.message : event;
  if (!message || message.bot_id !== undefined || message.user === undefined) return undefined;
  const text = message.text ?? "";
  if (text.trim() === "") return undefined;
  const threadTs = message.thread_ts;
  const editTs = edited ? (event.message?.edited?.ts ?? event.ts) : undefined;
  return {
    session: slackSessionKey(team, event.channel, threadTs),
    channel,
    text,
    id: edited ? `${message.ts}:edit:${editTs}` : message.ts,
    sender: { id: message.user },
    replyTo: message.ts,
    ...(threadTs !== undefined ? { thread: threadTs } : {}),
    ...(edited ? { editOf: message.ts } : {}),
  };
}
