import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { FakeSlackApi } from "../support/fake-slack-api.js";
import { FakeSlackSocket } from "../support/fake-slack-socket.js";
import { runTiller, useServeProcesses, waitForOutput } from "../support/serve-process.js";

// `tiller serve` in front of a Slack app in Socket Mode, end to end: the server process's Bolt
// SocketModeReceiver opens the connection through the local Web API, takes envelopes over the
// WebSocket, acks them, and posts its answers with chat.postMessage.

const procs = useServeProcesses("tiller-serve-slack-socket");
const fakes: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const running of procs.live) running.proc.kill("SIGKILL");
  await Promise.all([...procs.live].map((running) => running.exited));
  procs.live.clear();
  await Promise.all(fakes.splice(0).map((fake) => fake.close()));
});

describe("tiller serve with channels.slack in Socket Mode", () => {
  it("answers an envelope's message once, and a redelivered envelope is acked but not answered again", async () => {
    const api = await new FakeSlackApi().start();
    const socket = await new FakeSlackSocket(api).start();
    fakes.push(socket, api);
    const config = join(procs.dir, "socket.json");
    await writeFile(config, JSON.stringify({ channels: { slack: { mode: "socket", apiUrl: api.apiUrl } } }));
    const running = runTiller(
      procs.command,
      ["serve", "--port", "0", "--store", join(procs.dir, "socket"), "--config", config],
      { SLACK_BOT_TOKEN: api.botToken, SLACK_APP_TOKEN: socket.appToken, SLACK_SIGNING_SECRET: "" },
    );
    procs.live.add(running);
    const [, url] = await waitForOutput(running, running.stdout, /listening on (http:\/\/\S+)/, 90_000);
    expect(running.stdout()).toContain("channel: slack (Socket Mode)");
    await api.waitFor(() => socket.connected === 1, 30_000, "the Socket Mode connection");
    // No Events API route in Socket Mode.
    expect((await fetch(`${url}/slack/events`, { method: "POST", body: "{}" })).status).toBe(404);

    const said = socket.say("D1", "hello over the socket", { user: "U7" });
    await api.waitFor(() => api.inChannel("D1").length === 1, 30_000, "the answer");
    expect(socket.acks.map((ack) => ack.envelope_id)).toEqual([said.envelopeId]);
    const [answer] = api.inChannel("D1");
    expect(answer!.text).toContain('You said: "hello over the socket"');
    expect(answer!.metadata?.event_type).toBe("tiller_delivery");

    // Slack redelivers an envelope it thinks was not acked: the same envelope, then a retry of the
    // event under a new envelope. Each is acked; the message is not answered again.
    socket.say("D1", "hello over the socket", { user: "U7", ts: said.event.ts, envelopeId: said.envelopeId });
    const retry = socket.say("D1", "hello over the socket", {
      user: "U7",
      ts: said.event.ts,
      eventId: said.eventId,
      retryAttempt: 1,
    });
    await api.waitFor(() => socket.acks.length === 3, 30_000, "the acks of the redeliveries");
    expect(socket.acks.map((ack) => ack.envelope_id)).toEqual([
      said.envelopeId,
      said.envelopeId,
      retry.envelopeId,
    ]);
    // A later message is answered, so anything the redeliveries caused would have been posted by then.
    socket.say("D1", "and a second question", { user: "U7" });
    await api.waitFor(() => api.inChannel("D1").length >= 2, 30_000, "the second answer");
    const session = encodeURIComponent("slack:T1:D1");
    const transcript = (await (await fetch(`${url}/v1/sessions/${session}/transcript`)).json()) as {
      records: Array<{ role: string; text?: string }>;
    };
    expect(
      transcript.records.filter((record) => record.role === "user").map((record) => record.text),
    ).toEqual(["hello over the socket", "and a second question"]);
    expect(api.inChannel("D1").map((message) => message.text.includes("second question"))).toEqual([
      false,
      true,
    ]);
  }, 180_000);
});
