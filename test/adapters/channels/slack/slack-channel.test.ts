import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { ChatInbound } from "../../../../src/adapters/channels/chat/chat-inbound.js";
import { MemorySendLedger } from "../../../../src/adapters/channels/chat/send-ledger.js";
import { SlackChannel } from "../../../../src/adapters/channels/slack/slack-channel.js";
import { FakeSlackApi } from "../../../support/fake-slack-api.js";

// Bolt's receiver and WebClient against a local Slack: signed events in, Web API calls out.
describe("SlackChannel against a local Slack", () => {
  let api: FakeSlackApi;
  let channel: SlackChannel;
  let ledger: MemorySendLedger;
  let server: Server;
  let eventsUrl = "";
  const received: ChatInbound[] = [];

  beforeEach(async () => {
    api = await new FakeSlackApi().start();
    ledger = new MemorySendLedger();
    channel = new SlackChannel({
      botToken: api.botToken,
      signingSecret: api.signingSecret,
      apiUrl: api.apiUrl,
      ledger,
    });
    const [route] = channel.routes();
    server = createServer(
      (req, res) => void route!.handler({ req, res, params: {}, url: new URL(req.url ?? "/", "http://x") }),
    );
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    eventsUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/slack/events`;
    received.length = 0;
    await channel.start(async (message) => {
      received.push(message);
    });
  });
  afterEach(async () => {
    await channel.stop();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await api.close();
  });

  it("takes signed message events: session, thread, sender, edits", async () => {
    const plain = await api.say(eventsUrl, "D1", "hello", { user: "U7" });
    const threaded = await api.say(eventsUrl, "C1", "in a thread", { thread_ts: "1700000000.000100" });
    await api.edit(eventsUrl, "D1", plain.event.ts, "hello, fixed");
    expect([plain.status, threaded.status]).toEqual([200, 200]);
    expect(received[0]).toMatchObject({
      session: "slack:T1:D1",
      text: "hello",
      id: plain.event.ts,
      sender: { id: "U7" },
      replyTo: plain.event.ts,
    });
    expect(received[1]).toMatchObject({
      session: "slack:T1:C1:1700000000.000100",
      thread: "1700000000.000100",
    });
    expect(received[2]).toMatchObject({
      session: "slack:T1:D1",
      text: "hello, fixed",
      editOf: plain.event.ts,
    });
  });

  it("refuses an event with a bad signature or an old timestamp (401), and takes nothing from it", async () => {
    const forged = api.signedEvent(
      { type: "message", channel: "D1", user: "U1", text: "forged", ts: "1.1" },
      { secret: "wrong" },
    );
    const stale = api.signedEvent(
      { type: "message", channel: "D1", user: "U1", text: "replayed", ts: "1.2" },
      { timestamp: Math.floor(Date.now() / 1000) - 3600 },
    );
    for (const request of [forged, stale]) {
      const res = await fetch(eventsUrl, { method: "POST", headers: request.headers, body: request.body });
      expect(res.status).toBe(401);
    }
    expect(received).toHaveLength(0);
  });

  it("ignores its own posts and other bots", async () => {
    const event = api.signedEvent({
      type: "message",
      channel: "D1",
      bot_id: "BBOT",
      text: "my own",
      ts: "1.3",
    });
    await fetch(eventsUrl, { method: "POST", headers: event.headers, body: event.body });
    expect(received).toHaveLength(0);
  });

  it("posts in the thread, splits long text, and posts a deliveryId once", async () => {
    const long = `${"word ".repeat(900)}\n\n${"more ".repeat(100)}`;
    const receipt = await channel.send({
      session: "slack:T1:C1:1700000000.000100",
      text: long,
      kind: "reply",
      deliveryId: "r1",
    });
    const again = await channel.send({
      session: "slack:T1:C1:1700000000.000100",
      text: long,
      kind: "reply",
      deliveryId: "r1",
    });
    const posted = api.inChannel("C1");
    expect(posted).toHaveLength(2);
    expect(posted.every((m) => m.thread_ts === "1700000000.000100" && m.text.length <= 4000)).toBe(true);
    expect(again).toEqual(receipt);
  });

  it("after a crash mid-send, finds the post by its metadata instead of posting again", async () => {
    // The earlier process began "r2" and Slack took it, but the process died before the answer.
    await ledger.begin("r2", "slack:T1:D1", Date.now());
    api.messages.push({
      channel: "D1",
      ts: api.nextTs(),
      text: "already there",
      edits: [],
      metadata: { event_type: "tiller_delivery", event_payload: { delivery_id: "r2" } },
    });
    const receipt = await channel.send({
      session: "slack:T1:D1",
      text: "already there",
      kind: "reply",
      deliveryId: "r2",
    });
    expect(receipt.messageId).toBe(api.messages[0]!.ts);
    expect(api.calls.filter((c) => c.method === "chat.postMessage")).toHaveLength(0);
    // One Slack never got is posted.
    await ledger.begin("r3", "slack:T1:D1", Date.now());
    await channel.send({ session: "slack:T1:D1", text: "never arrived", kind: "reply", deliveryId: "r3" });
    expect(api.inChannel("D1").map((m) => m.text)).toEqual(["already there", "never arrived"]);
  });

  it("a 429 carries Retry-After as retryAfterMs (WebClient does not retry it); a platform error is permanent", async () => {
    api.rateLimit("chat.postMessage", 2);
    const limited = await channel
      .send({ session: "slack:T1:D1", text: "a", kind: "reply", deliveryId: "r4" })
      .catch((e: unknown) => e);
    expect(limited).toMatchObject({ retryAfterMs: 2000, outcome: "not-delivered", permanent: false });
    expect(api.calls.filter((c) => c.method === "chat.postMessage")).toHaveLength(1);
    api.fail("chat.postMessage", "channel_not_found");
    const refused = await channel
      .send({ session: "slack:T1:D9", text: "a", kind: "reply", deliveryId: "r5" })
      .catch((e: unknown) => e);
    expect(refused).toMatchObject({ permanent: true });
  });

  it("edits previews with chat.update and reacts with reactions.add", async () => {
    const { messageId } = await channel.send({
      session: "slack:T1:D1",
      text: "draft",
      kind: "reply",
      deliveryId: "r6",
    });
    await channel.edit({ session: "slack:T1:D1", messageId: messageId! }, "final");
    await channel.react("slack:T1:D1", "1700000000.000200", "👀");
    expect(api.inChannel("D1")[0]).toMatchObject({ text: "final", edits: ["draft"] });
    expect(api.reactions).toEqual([{ channel: "D1", timestamp: "1700000000.000200", name: "eyes" }]);
  });
});
