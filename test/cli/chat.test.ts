import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { demoTool } from "../../src/adapters/demo-model.js";
import { HeldClock } from "../support/held-clock.js";
import { startTestServer, type TestServer } from "../support/http-gateway.js";
import { runTiller, tillerCommand, waitForOutput } from "../support/serve-process.js";

// `tiller chat` as a person uses it: a child process whose stdin is typed into and whose stdout is
// read, against a real server on a real socket.

let tmp: string;
let tiller: string[];
let server: TestServer;
// The demo task runs until the test has typed what must reach it while it runs (a steer, /stop).
const taskTime = new HeldClock();

beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), "tiller-chat-"));
  tiller = await tillerCommand(tmp);
  server = await startTestServer({
    demo: { wordDelayMs: 20 },
    tools: [demoTool({ clock: taskTime, durationMs: 1500 })],
  });
}, 60_000);
afterAll(async () => {
  await server.close();
  await rm(tmp, { recursive: true, force: true });
});

describe("tiller chat", () => {
  it("shows acks, streamed drafts, tools and deliveries; /queue, /stop and /new act", async () => {
    const chat = runTiller(tiller, ["chat", "--url", server.url, "--session", "chat:t1"]);
    const type = (line: string) => chat.proc.stdin!.write(`${line}\n`);
    const since = (mark: number) => () => chat.stdout().slice(mark);
    try {
      await waitForOutput(chat, chat.stdout, /connected to .* as session chat:t1/);

      let mark = chat.stdout().length;
      type("hello from the terminal");
      await waitForOutput(chat, since(mark), /\[ack\] started: Got it, working on it\./);
      await waitForOutput(chat, since(mark), /\[draft\] \[demo\]/);
      await waitForOutput(chat, since(mark), /tiller> \[demo\][^\n]*\n\nYou said: "hello from the terminal"/);

      mark = chat.stdout().length;
      type("please run a task");
      await waitForOutput(chat, since(mark), /\[tool\] demo_task started/);
      type("and make it quick");
      await waitForOutput(chat, since(mark), /\[ack\] steered: Got it\. demo_task is running/);
      taskTime.release();
      await waitForOutput(chat, since(mark), /\[tool\] demo_task done/);
      await waitForOutput(
        chat,
        since(mark),
        /tiller> demo_task finished.*While it ran you wrote: "and make it quick"/,
      );

      mark = chat.stdout().length;
      type("/queue followup");
      await waitForOutput(chat, since(mark), /\[ack\] control: .*followup/i);

      mark = chat.stdout().length;
      taskTime.hold();
      type("run a task again");
      await waitForOutput(chat, since(mark), /\[tool\] demo_task started/);
      type("/stop");
      await waitForOutput(chat, since(mark), /\[ack\] control: /);
      await waitForOutput(chat, since(mark), /\[tool\] demo_task cancelled/);

      mark = chat.stdout().length;
      type("/new");
      await waitForOutput(chat, since(mark), /\[ack\] control: /);
      type("hi again");
      // A new conversation: the demo introduces itself again.
      await waitForOutput(chat, since(mark), /tiller> \[demo\]/);
      expect(since(mark)()).not.toContain("demo_task finished");

      chat.proc.stdin!.end();
      expect((await chat.exited).code).toBe(0);
    } finally {
      chat.proc.kill("SIGKILL");
    }
  }, 60_000);

  it("says so and exits 1 when no server answers", async () => {
    const chat = runTiller(tiller, ["chat", "--url", "http://127.0.0.1:9"]);
    expect((await chat.exited).code).toBe(1);
    expect(chat.stderr()).toMatch(/cannot reach http:\/\/127\.0\.0\.1:9/);
  }, 30_000);
});
