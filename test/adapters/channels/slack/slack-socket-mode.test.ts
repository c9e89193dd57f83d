import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { ChatInbound } from "../../../../src/adapters/channels/chat/chat-inbound.js";
import { SlackChannel } from "../../../../src/adapters/channels/slack/slack-channel.js";
import { FakeSlackApi } from "../../../support/fake-slack-api.js";
import { FakeSlackSocket } from "../../../support/fake-slack-socket.js";

// Bolt's SocketModeReceiver (its @slack/socket-mode client) against a local Socket Mode server:
// apps.connections.open over HTTP with the app-level token, then envelopes over the WebSocket.
describe("SlackChannel in Socket Mode against a local Slack", () => {
  let api: FakeSlackApi;
  let socket: FakeSlackSocket;
  let channel: SlackChannel;
  const received: ChatInbound[] = [];

  beforeEach(async () => {
    api = await new FakeSlackApi().start();
    socket = await new FakeSlackSocket(api).start();
    channel = new SlackChannel({
      botToken: api.botToken,
      appToken: socket.appToken,
      mode: "socket",
      apiUrl: api.apiUrl,
    });
    received.length = 0;
  });
  afterEach(async () => {
    await channel.stop();
    await socket.close();
    await api.close();
  });

  it("opens the connection with the app-level token, takes an envelope and acks it by its id", async () => {
    await channel.start(async (message) => {
      received.push(message);
    });
    expect(api.calls.map((call) => call.method)).toEqual(["auth.test", "apps.connections.open"]);
    expect(socket.connected).toBe(1);
    expect(channel.routes()).toEqual([]);

    const said = socket.say("D1", "hello over the socket", { user: "U7" });
    await api.waitFor(() => socket.acks.length === 1, 10_000, "the ack");
    expect(socket.acks).toEqual([{ envelope_id: said.envelopeId, payload: {} }]);
    await api.waitFor(() => received.length === 1, 10_000, "the message");
    expect(received[0]).toMatchObject({
      session: "slack:T1:D1",
      text: "hello over the socket",
      id: said.event.ts,
      sender: { id: "U7" },
    });

    const receipt = await channel.send({
      session: "slack:T1:D1",
      text: "Re: hello over the socket",
      kind: "reply",
      deliveryId: "d1",
    });
    expect(api.inChannel("D1").map((message) => [message.ts, message.text])).toEqual([
      [receipt.messageId, "Re: hello over the socket"],
    ]);
  });

  it("acks an envelope only once its message was taken, so a crash before that loses nothing", async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    await channel.start(async (message) => {
      received.push(message);
      if (message.text === "slow to store") await held;
    });
    const slow = socket.say("D1", "slow to store");
    await api.waitFor(() => received.length === 1, 10_000, "the first message handed over");
    // A later envelope on the same connection: its ack comes back while the first is still held.
    const quick = socket.say("D1", "quick");
    await api.waitFor(() => socket.acks.length === 1, 10_000, "the second ack");
    expect(socket.acks.map((ack) => ack.envelope_id)).toEqual([quick.envelopeId]);
    release();
    await api.waitFor(() => socket.acks.length === 2, 10_000, "the first ack");
    expect(socket.acks.map((ack) => ack.envelope_id)).toEqual([quick.envelopeId, slow.envelopeId]);
  });

  it("leaves an envelope whose message could not be taken unacked, and takes Slack's redelivery", async () => {
    let fail = true;
    await channel.start(async (message) => {
      if (fail && message.text === "store is down") {
        fail = false;
        throw new Error("store unavailable");
      }
      received.push(message);
    });
    const first = socket.say("D1", "store is down");
    const later = socket.say("D1", "later");
    await api.waitFor(() => socket.acks.length === 1, 10_000, "the later ack");
    expect(socket.acks.map((ack) => ack.envelope_id)).toEqual([later.envelopeId]);
    socket.say("D1", "store is down", { ts: first.event.ts, envelopeId: first.envelopeId, retryAttempt: 1 });
    await api.waitFor(() => socket.acks.length === 2, 10_000, "the redelivery's ack");
    expect(received.map((message) => message.text)).toEqual(["later", "store is down"]);
  });

  it("refuses to start with an app token Slack does not know", async () => {
    const wrong = new SlackChannel({
      botToken: api.botToken,
      appToken: "xapp-wrong",
      mode: "socket",
      apiUrl: api.apiUrl,
    });
    await expect(wrong.start(async () => {})).rejects.toThrow(/invalid_auth/);
    expect(socket.connected).toBe(0);
  });
});
