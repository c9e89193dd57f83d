import type { Message, Update } from "grammy/types";
import type { ChatInbound } from "../chat/chat-inbound.js";

/** A conversation of a session key: the chat and, in a forum, the topic. */
export interface TelegramTarget {
  chatId: string;
  threadId?: number;
}

/** `telegram:<chat.id>`, or `telegram:<chat.id>:<message_thread_id>` for a forum topic. */
export function telegramSessionKey(chatId: number | string, threadId?: number): string {
  return threadId === undefined ? `telegram:${chatId}` : `telegram:${chatId}:${threadId}`;
}

/** The chat (and topic) a `telegram:` session key names; undefined for a key of another form. */
export function parseTelegramSession(session: string): TelegramTarget | undefined {
  const match = /^telegram:(-?\d+)(?::(\d+))?$/.exec(session);
  if (!match) return undefined;
  return match[2] === undefined ? { chatId: match[1]! } : { chatId: match[1]!, threadId: Number(match[2]) };
}

/**
 * A `message` or `edited_message` update as the gateway's inbound message; undefined for updates that
 * carry no text (stickers, joins) or none of those two kinds. An edit keeps its own id
 * (`<message_id>:edit:<edit_date>`, so each edit is new to the gateway) and names the original in
 * `editOf`.
 */
export function telegramInbound(update: Update, channel = "telegram"): ChatInbound | undefined {
  const edited = update.edited_message !== undefined;
  const message: Message | undefined = update.message ?? update.edited_message;
  if (!message) return undefined;
  const text = message.text ?? message.caption;
  if (text === undefined || text.trim() === "") return undefined;
  const topic = message.is_topic_message === true ? message.message_thread_id : undefined;
  const from = message.from;
  const name = from
    ? [from.first_name, from.last_name].filter(Boolean).join(" ") || from.username
    : undefined;
  const messageId = String(message.message_id);
  return {
    session: telegramSessionKey(message.chat.id, topic),
    channel,
    text,
    id: edited ? `${messageId}:edit:${message.edit_date ?? update.update_id}` : messageId,
    ...(from ? { sender: { id: String(from.id), ...(name ? { name } : {}) } } : {}),
    replyTo: messageId,
    ...(topic !== undefined ? { thread: String(topic) } : {}),
    ...(edited ? { editOf: messageId } : {}),
  };
}
