import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { FakeSlackApi } from "../support/fake-slack-api.js";
import { runTiller, useServeProcesses, waitForOutput } from "../support/serve-process.js";

// `tiller serve` in front of a Slack app, end to end: signed Events API requests to the real server
// process, whose Bolt WebClient posts to a local Slack Web API over real sockets.

const procs = useServeProcesses("tiller-serve-slack");
const fakes: FakeSlackApi[] = [];
afterEach(async () => {
  for (const running of procs.live) running.proc.kill("SIGKILL");
  await Promise.all([...procs.live].map((running) => running.exited));
  procs.live.clear();
  await Promise.all(fakes.splice(0).map((fake) => fake.close()));
});

async function serveSlack(store: string, api: FakeSlackApi, env: Record<string, string> = {}) {
  const config = join(procs.dir, `${store}.json`);
  await writeFile(config, JSON.stringify({ channels: { slack: { apiUrl: api.apiUrl } } }));
  const proc = runTiller(
    procs.command,
    ["serve", "--port", "0", "--store", join(procs.dir, store), "--config", config],
    {
      SLACK_BOT_TOKEN: api.botToken,
      SLACK_SIGNING_SECRET: api.signingSecret,
      ...env,
    },
  );
  procs.live.add(proc);
  const [, url] = await waitForOutput(proc, proc.stdout, /listening on (http:\/\/\S+)/, 90_000);
  return { ...proc, url: url! };
}

describe("tiller serve with channels.slack", () => {
  it("answers a signed event in its thread, refuses an unsigned one, and waits out a 429", async () => {
    const api = await new FakeSlackApi().start();
    fakes.push(api);
    const running = await serveSlack("events", api);
    expect(running.stdout()).toContain("channel: slack (Events API at POST /slack/events");
    const events = `${running.url}/slack/events`;

    const unsigned = await fetch(events, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}",
    });
    expect(unsigned.status).toBe(401);

    api.rateLimit("chat.postMessage", 1);
    const said = await api.say(events, "C1", "hello from a thread", { thread_ts: "1700000000.000100" });
    expect(said.status).toBe(200);
    await api.waitFor(() => api.inChannel("C1").length === 1, 30_000, "the answer");
    const [answer] = api.inChannel("C1");
    expect(answer).toMatchObject({ thread_ts: "1700000000.000100" });
    expect(answer!.text).toContain('You said: "hello from a thread"');
    expect(answer!.metadata?.event_type).toBe("tiller_delivery");
    expect(api.calls.filter((c) => c.method === "chat.postMessage")).toHaveLength(2);

    // Slack retries an event it thinks was not taken: the same ts is not answered again.
    const again = await api.say(events, "C1", "hello from a thread", {
      thread_ts: "1700000000.000100",
      ts: said.event.ts,
    });
    expect(again.status).toBe(200);
    const session = encodeURIComponent("slack:T1:C1:1700000000.000100");
    const transcript = (await (await fetch(`${running.url}/v1/sessions/${session}/transcript`)).json()) as {
      records: Array<{ role: string }>;
    };
    expect(transcript.records.filter((r) => r.role === "user")).toHaveLength(1);
    expect(api.inChannel("C1")).toHaveLength(1);
  }, 180_000);

  it("refuses to start without a signing secret, naming the field", async () => {
    const api = await new FakeSlackApi().start();
    fakes.push(api);
    const config = join(procs.dir, "nosecret.json");
    await writeFile(config, JSON.stringify({ channels: { slack: { apiUrl: api.apiUrl } } }));
    const proc = runTiller(
      procs.command,
      ["serve", "--port", "0", "--store", join(procs.dir, "nosecret"), "--config", config],
      {
        SLACK_BOT_TOKEN: api.botToken,
        SLACK_SIGNING_SECRET: "",
      },
    );
    procs.live.add(proc);
    const { code } = await proc.exited;
    expect(code).toBe(2);
    expect(proc.stderr()).toContain("channels.slack.signingSecret");
  }, 180_000);
});
