import { writeFile } from "node:fs/promises";
import type { AddressInfo } from "node:net";
import { createServer } from "node:net";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { postMessage } from "../support/http-gateway.js";
import { runTiller, startServe, useServeProcesses, waitForOutput } from "../support/serve-process.js";
import { SseRecorder } from "../support/sse-recorder.js";

// `tiller serve` as a real process: kill -9 and a restart on the same store with the deliveries stream
// replaying what the client missed, drain on SIGTERM, and the startup errors that exit 2.

const procs = useServeProcesses("tiller-serve");
const live = procs.live;

async function serve(args: string[], env: NodeJS.ProcessEnv = {}) {
  const running = await startServe(procs.command, args, env);
  live.add(running);
  return running;
}

function follow(url: string, lastEventId?: string) {
  const recorder = new SseRecorder(url, lastEventId ? { lastEventId } : {});
  procs.record(recorder);
  return recorder;
}

const post = postMessage;

describe("tiller serve", () => {
  it("after kill -9, a restart on the same store resumes the cut-off turn and the client replays what it missed", async () => {
    const store = join(procs.dir, "kill9");
    const env = { TILLER_DEMO_TASK_MS: "3000" };
    const first = await serve(["--store", store], env);
    expect(first.stdout()).toContain("DEMO");
    const seen = follow(`${first.url}/v1/sessions/web%3Ak/deliveries`);
    const events = follow(`${first.url}/v1/events?session=web%3Ak`);
    await events.opened;
    await post(first.url, "web:k", "hello", "k1");
    const d1 = await seen.waitFor((event) => event.event === "delivery");
    seen.close(); // the client goes away
    await post(first.url, "web:k", "what now?", "k2");
    // The session is idle again after that turn's final (not just delivered), so the task starts a
    // turn of its own. The first turn's final.delivered and idle come after its delivery reached the
    // client (the final is recorded first), so they are told apart by the delivery's id: on a loaded
    // machine they can come after "what now?" was posted, and a task posted then would steer its turn.
    const final = await events.waitFor(
      (event) => event.event === "final.delivered" && event.data.messageId !== d1.id,
      20_000,
    );
    await events.waitFor(
      (event) =>
        events.events.indexOf(event) > events.events.indexOf(final) &&
        event.event === "state" &&
        event.data.machine === "session" &&
        event.data.value === "idle",
    );
    const task = await post(first.url, "web:k", "please run a task", "k3");
    expect(task.body.ack.disposition).toBe("started");
    await events.waitFor((event) => event.event === "tool.started");
    first.proc.kill("SIGKILL");
    expect((await first.exited).signal).toBe("SIGKILL");
    events.close();

    const second = await serve(["--store", store], env);
    const replay = follow(`${second.url}/v1/sessions/web%3Ak/deliveries`, d1.id);
    const resumed = await replay.waitFor((event) => String(event.data.text).includes("demo_task"), 60_000);
    const texts = replay.of("delivery").map((event) => String(event.data.text));
    // Missed before the crash: the reply to "what now?"; then the resumed task's reply; never d1 again.
    expect(texts[0]).toContain('You said: "what now?"');
    expect(replay.of("delivery").map((event) => event.id)).not.toContain(d1.id);
    expect(resumed).toBe(replay.of("delivery")[1]);
    const ids = replay.of("delivery").map((event) => event.id);
    expect(new Set(ids).size).toBe(ids.length);
    second.proc.kill("SIGTERM");
    expect((await second.exited).code).toBe(0);
  }, 120_000);

  it("SIGTERM drains: new messages get 503, the running turn finishes and is delivered, exit 0", async () => {
    // The turn's tool runs until the test releases it, so the turn is still running when the late
    // message comes, however slow the machine.
    const release = join(procs.dir, "drain-release");
    const tools = join(procs.dir, "hold-tools.mjs");
    await writeFile(
      tools,
      `import { existsSync } from "node:fs";\n` +
        `export default [{ name: "hold", cancellable: false, async execute() {\n` +
        `  while (!existsSync(${JSON.stringify(release)})) await new Promise((r) => setTimeout(r, 20));\n` +
        `  return "released";\n} }];\n`,
    );
    const running = await serve(["--store", join(procs.dir, "drain"), "--tools", tools]);
    const deliveries = follow(`${running.url}/v1/sessions/web%3Ad/deliveries`);
    const events = follow(`${running.url}/v1/events?session=web%3Ad`);
    await Promise.all([deliveries.opened, events.opened]);
    await post(running.url, "web:d", "please hold the line", "d1");
    await events.waitFor((event) => event.event === "tool.started" && event.data.name === "hold");
    running.proc.kill("SIGTERM");
    await waitForOutput(running, running.stdout, /draining/);
    const refused = await post(running.url, "web:d", "one more thing", "d-late");
    expect(refused.status).toBe(503);
    expect(refused.body.error.code).toBe("GATEWAY_DRAINING");
    expect(deliveries.of("delivery")).toEqual([]);
    await writeFile(release, "");
    const delivered = await deliveries.waitFor((event) => event.event === "delivery");
    expect(String(delivered.data.text)).toContain("hold finished");
    const exit = await running.exited;
    expect(exit.code).toBe(0);
  }, 90_000);

  it("a drain that runs past --drain-timeout stops anyway with exit 0; a second signal stops at once", async () => {
    const slow = await serve(["--store", join(procs.dir, "timeout"), "--drain-timeout", "300"], {
      TILLER_DEMO_TASK_MS: "20000",
    });
    const events = follow(`${slow.url}/v1/events?session=web%3At`);
    await events.opened;
    await post(slow.url, "web:t", "run a task", "t1");
    await events.waitFor((event) => event.event === "tool.started");
    const t0 = Date.now();
    slow.proc.kill("SIGTERM");
    expect((await slow.exited).code).toBe(0);
    // Well before the task (20 s) or the default drain timeout (30 s) would have ended it.
    expect(Date.now() - t0).toBeLessThan(15_000);
    expect(slow.stdout()).toContain("drain timeout (300 ms)");

    const twice = await serve(["--store", join(procs.dir, "twice")], { TILLER_DEMO_TASK_MS: "20000" });
    const events2 = follow(`${twice.url}/v1/events?session=web%3At`);
    await events2.opened;
    await post(twice.url, "web:t", "run a task", "t1");
    await events2.waitFor((event) => event.event === "tool.started");
    twice.proc.kill("SIGTERM");
    await waitForOutput(twice, twice.stdout, /draining/);
    twice.proc.kill("SIGTERM");
    expect((await twice.exited).code).toBe(143);
  }, 120_000);

  it("--tools loads the user's tools; the demo model calls one it is asked for by name", async () => {
    const file = join(procs.dir, "tools.mjs");
    await writeFile(
      file,
      `export default [{ name: "shout", cancellable: false, async execute(args) { return String(args.input).toUpperCase(); } }];\n`,
    );
    const running = await serve(["--store", join(procs.dir, "tools"), "--tools", file]);
    const deliveries = follow(`${running.url}/v1/sessions/web%3Au/deliveries`);
    await deliveries.opened;
    await post(running.url, "web:u", "please shout this", "u1");
    const reply = await deliveries.waitFor((event) => event.event === "delivery");
    expect(String(reply.data.text)).toContain("shout finished");
    expect(String(reply.data.text)).toContain("PLEASE SHOUT THIS");
    running.proc.kill("SIGTERM");
    await running.exited;
  }, 90_000);
});

describe("tiller serve refuses to start, with one line and exit 2", () => {
  async function refused(args: string[], env: NodeJS.ProcessEnv = {}) {
    const running = runTiller(procs.command, ["serve", ...args], env);
    live.add(running);
    const { code } = await running.exited;
    return { code, stderr: running.stderr().trim() };
  }

  it("for a config error, an unreadable store, a non-loopback host without a token, a bad tools file", async () => {
    const config = join(procs.dir, "bad-config.yaml");
    await writeFile(config, "queue: { mode: sideways }\n");
    const notADir = join(procs.dir, "a-file");
    await writeFile(notADir, "x");
    const tools = join(procs.dir, "not-tools.mjs");
    await writeFile(tools, "export default 42;\n");
    const cases: Array<[string[], RegExp]> = [
      [["--config", config, "--port", "0"], /--config .*queue\.mode/],
      [["--config", join(procs.dir, "missing.yaml")], /--config .*cannot read/],
      [["--store", notADir, "--port", "0"], /--store .*a-file/],
      [["--host", "0.0.0.0", "--store", join(procs.dir, "host")], /TILLER_TOKEN/],
      [["--tools", tools, "--store", join(procs.dir, "t")], /--tools .*array/],
      [["--port", "99999"], /--port/],
      [["--model-url", "http://127.0.0.1:9/v1", "--store", join(procs.dir, "m")], /--model: required/],
      [["--model", "llama3.2", "--store", join(procs.dir, "m")], /--model-url/],
    ];
    const results = await Promise.all(cases.map(([args]) => refused(args)));
    cases.forEach(([args, pattern], index) => {
      const { code, stderr } = results[index]!;
      expect(code, args.join(" ")).toBe(2);
      expect(stderr, args.join(" ")).toMatch(pattern);
      expect(stderr.split("\n"), args.join(" ")).toHaveLength(1);
    });
  }, 120_000);

  it("for a port in use", async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, "127.0.0.1", resolve));
    const port = (blocker.address() as AddressInfo).port;
    try {
      const { code, stderr } = await refused(["--port", String(port), "--store", join(procs.dir, "port")]);
      expect(code).toBe(2);
      expect(stderr).toMatch(new RegExp(`--port ${port}: cannot listen.*EADDRINUSE`));
      expect(stderr.split("\n")).toHaveLength(1);
    } finally {
      blocker.close();
    }
  }, 90_000);

  it("binds a non-loopback host when a token is set, and then requires it", async () => {
    const running = await serve(["--host", "0.0.0.0", "--store", join(procs.dir, "token")], {
      TILLER_TOKEN: "tok",
    });
    const port = new URL(running.url).port;
    const denied = await fetch(`http://127.0.0.1:${port}/v1/events`);
    expect(denied.status).toBe(401);
    const allowed = await post(`http://127.0.0.1:${port}`, "web:z", "hi", "z1").catch(() => undefined);
    expect(allowed?.status).toBe(401);
    running.proc.kill("SIGTERM");
    expect((await running.exited).code).toBe(0);
  }, 90_000);
});
