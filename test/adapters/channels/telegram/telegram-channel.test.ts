import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { ChatInbound } from "../../../../src/adapters/channels/chat/chat-inbound.js";
import { MemorySendLedger } from "../../../../src/adapters/channels/chat/send-ledger.js";
import { TelegramChannel } from "../../../../src/adapters/channels/telegram/telegram-channel.js";
import { ChannelSendError } from "../../../../src/errors.js";
import { FakeTelegramApi } from "../../../support/fake-telegram-api.js";

// grammY itself talks to the fake through `apiRoot`: these are the real requests a bot makes.
describe("TelegramChannel against a local Bot API", () => {
  let api: FakeTelegramApi;
  let channel: TelegramChannel;
  let ledger: MemorySendLedger;
  const received: ChatInbound[] = [];

  beforeEach(async () => {
    api = await new FakeTelegramApi().start();
    ledger = new MemorySendLedger();
    channel = new TelegramChannel({ token: api.token, apiRoot: api.url, ledger, pollTimeoutSeconds: 1 });
    received.length = 0;
  });
  afterEach(async () => {
    await channel.stop();
    await api.close();
  });

  it("polls updates into receive: session, sender, id, topic and edits", async () => {
    await channel.start(async (message) => {
      received.push(message);
    });
    api.userSays(42, "hello", { from: { id: 42, first_name: "Ada" } });
    api.userSays(-1001, "in a topic", { from: { id: 7, first_name: "Bob" }, topic: 9 });
    const first = api.userSays(42, "typo");
    api.userEdits(42, first.message!.message_id, "fixed");
    await api.waitFor(() => received.length === 4, 10_000, "four updates");
    expect(received[0]).toMatchObject({
      session: "telegram:42",
      channel: "telegram",
      text: "hello",
      id: "1",
      sender: { id: "42", name: "Ada" },
      replyTo: "1",
    });
    expect(received[1]).toMatchObject({
      session: "telegram:-1001:9",
      thread: "9",
      sender: { id: "7", name: "Bob" },
    });
    expect(received[3]).toMatchObject({ text: "fixed", editOf: "3", session: "telegram:42" });
    expect(received[3]!.id).not.toBe("3");
  });

  it("ignores chats outside allowedChats", async () => {
    await channel.stop();
    channel = new TelegramChannel({
      token: api.token,
      apiRoot: api.url,
      allowedChats: [42],
      pollTimeoutSeconds: 1,
    });
    await channel.start(async (message) => {
      received.push(message);
    });
    api.userSays(99, "stranger");
    api.userSays(42, "friend");
    await api.waitFor(() => received.length === 1, 10_000, "the allowed message");
    await api.waitFor(() => api.calls.filter((c) => c.method === "getUpdates").length >= 3, 10_000, "polls");
    expect(received.map((m) => m.text)).toEqual(["friend"]);
  });

  it("replies to the answered message, in its topic, and splits at 4096", async () => {
    const receipt = await channel.send({
      session: "telegram:-1001:9",
      text: `${"word ".repeat(1000)}\n\n${"more ".repeat(200)}`,
      kind: "reply",
      deliveryId: "reply:1",
      replyTo: "5",
    } as never);
    const posted = api.chat(-1001);
    expect(posted).toHaveLength(2);
    expect(posted.every((m) => m.text.length <= 4096 && m.message_thread_id === 9 && m.reply_to === 5)).toBe(
      true,
    );
    expect(receipt).toMatchObject({
      messageId: String(posted[0]!.message_id),
      messageIds: posted.map((m) => String(m.message_id)),
    });
  });

  it("sends a deliveryId once: a resend answers with the first receipt", async () => {
    const first = await channel.send({ session: "telegram:42", text: "hi", kind: "reply", deliveryId: "d1" });
    const again = await channel.send({ session: "telegram:42", text: "hi", kind: "reply", deliveryId: "d1" });
    expect(again).toEqual(first);
    expect(api.chat(42)).toHaveLength(1);
  });

  it("joins a send of the same deliveryId still in flight instead of posting it again", async () => {
    api.hold("sendMessage", 500);
    const slow = channel.send({ session: "telegram:42", text: "slow", kind: "reply", deliveryId: "d2" });
    const resend = channel.send({ session: "telegram:42", text: "slow", kind: "recovery", deliveryId: "d2" });
    expect(await resend).toEqual(await slow);
    expect(api.chat(42).map((m) => m.text)).toEqual(["slow"]);
  });

  it("refuses to re-post a send an earlier process began and never saw answered", async () => {
    await ledger.begin("d3", "telegram:42", Date.now());
    const error = await channel
      .send({ session: "telegram:42", text: "maybe sent", kind: "reply", deliveryId: "d3" })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ChannelSendError);
    expect(error).toMatchObject({ outcome: "unknown" });
    expect(api.chat(42)).toHaveLength(0);
  });

  it("maps a 429 to retryAfterMs and waits it out before the next call to that chat", async () => {
    api.fail("sendMessage", {
      status: 429,
      description: "Too Many Requests: retry after 1",
      parameters: { retry_after: 1 },
    });
    const error = await channel
      .send({ session: "telegram:42", text: "a", kind: "reply", deliveryId: "d4" })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ retryAfterMs: 1000, permanent: false, outcome: "not-delivered" });
    const started = Date.now();
    await channel.send({ session: "telegram:42", text: "a", kind: "reply", deliveryId: "d4" });
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    expect(api.chat(42).map((m) => m.text)).toEqual(["a"]);
  });

  it("maps a 400 to a permanent error", async () => {
    api.fail("sendMessage", { status: 400, description: "Bad Request: chat not found" });
    const error = await channel
      .send({ session: "telegram:42", text: "a", kind: "reply", deliveryId: "d5" })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ permanent: true });
  });

  it("edits previews, shows typing and puts ack reactions", async () => {
    const { messageId } = await channel.send({
      session: "telegram:42",
      text: "draft",
      kind: "reply",
      deliveryId: "d6",
    });
    await channel.edit({ session: "telegram:42", messageId: messageId! }, "final answer");
    await channel.edit({ session: "telegram:42", messageId: messageId! }, "final answer");
    await channel.typing("telegram:42");
    await channel.react("telegram:42", "3", "👀");
    expect(api.chat(42)[0]).toMatchObject({ text: "final answer", edits: ["draft"] });
    expect(api.actions).toEqual([{ chat_id: "42", action: "typing" }]);
    expect(api.reactions).toEqual([{ chat_id: "42", message_id: 3, emoji: "👀" }]);
  });
});
