import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseScenario } from "../../src/scenario/load.js";
import { runScenario } from "../../src/scenario/runner.js";
import { tillerCommand } from "../support/serve-process.js";

// "What happened to my message?": gateway.explain(session, id) reports when a message arrived, its mode
// and where that came from, where it waited, the first model call that saw it, the reply that answered
// it and whether that reply reached the user; `tiller run FILE --explain ID` prints the same.

// m1 "deploy …" at 0: call 1 streams 0–100, deploy (not cancellable) runs 100–3100, then notify is
// skipped for the steer m2 and call 2 drafts 3100–3400; the reply is delivered at 3400.
const SCENARIO = `
name: explain
model:
  - when: { latestUser: "deploy", call: 1 }
    reply: { delayMs: 100, toolCalls: [{ name: deploy }, { name: notify }] }
  - when: { latestUser: "search", call: 1 }
    reply: { delayMs: 100, toolCalls: [{ name: search }] }
  - reply: { delayMs: 300, text: "Re: {{latestUser}}" }
tools:
  deploy: { durationMs: 3000, result: "deployed", cancellable: false }
  notify: { durationMs: 100, result: "notified", cancellable: false }
  search: { durationMs: 3000, result: "found", cancellable: true }
config: { queue: { byChannel: { web: collect } } }
inbound:
  - { at: 0, session: "s", channel: telegram, id: m1, text: "deploy the app" }
  - { at: 1000, session: "s", channel: telegram, id: m2, text: "use the staging server" }
  - { at: 1500, session: "s", channel: telegram, id: f1, text: "then what changed?", mode: follow-up }
  - { at: 1600, session: "s", channel: web, id: c1, text: "one" }
  - { at: 1700, session: "s", channel: web, id: c2, text: "two" }
  - { at: 1800, session: "s", channel: telegram, id: m2, text: "use the staging server" }
  - { at: 9000, session: "t", channel: telegram, id: m1, text: "search the archive" }
  - { at: 9500, session: "t", channel: telegram, id: i1, text: "never mind", mode: interrupt }
`;

async function explained() {
  const { result, gateway } = await runScenario(parseScenario(SCENARIO, "explain.yaml"));
  return { result, explain: (session: string, id: string) => gateway.explain(session, id) };
}

describe("gateway.explain", () => {
  it("a message that started a turn: arrival, mode and source, first model call, the delivered reply", async () => {
    const { explain } = await explained();
    expect(explain("s", "m1")).toMatchObject({
      session: "s",
      messageId: "m1",
      arrivedAt: 0,
      disposition: "started",
      mode: "steer",
      modeSource: "default",
      ackText: "Got it, working on it.",
      waited: [],
      firstSeenBy: { runId: "s#1", call: 1, at: 0, recheck: false },
      answeredBy: { runId: "s#1", delivered: true, at: 3400 },
    });
  });

  it("a steer mid-tool waited for the tool, was first seen by the turn's next model call, answered by that turn", async () => {
    const { explain } = await explained();
    const steer = explain("s", "m2");
    expect(steer).toMatchObject({
      arrivedAt: 1000,
      disposition: "steered",
      mode: "steer",
      waited: [{ where: "tool-to-finish", from: 1000, until: 3100 }],
      firstSeenBy: { runId: "s#1", call: 2, at: 3100 },
      answeredBy: { runId: "s#1", delivered: true, at: 3400 },
    });
    expect(steer?.ackText).toContain("deploy is running");
    // The redelivery of m2 at 1800 is on its timeline, and did not change what happened to it.
    expect(steer?.timeline.map((entry) => entry.what)).toContain("redelivered: acked duplicate");
  });

  it("a follow-up waited for its own turn; an alias resolves and keeps its source", async () => {
    const { explain } = await explained();
    expect(explain("s", "f1")).toMatchObject({
      arrivedAt: 1500,
      disposition: "queued",
      mode: "followup",
      modeSource: "inline",
      waited: [{ where: "own-turn", from: 1500, until: 3400 }],
      firstSeenBy: { runId: "s#2", call: 1, at: 3400 },
      answeredBy: { runId: "s#2", delivered: true, at: 3700 },
    });
  });

  it("a collected message waited for the quiet window, with the mode its channel sets", async () => {
    const { result, explain } = await explained();
    const burst = result.modelCalls.find((call) => call.userTexts.includes("one"));
    expect(burst?.userTexts).toEqual(["one", "two"]);
    for (const id of ["c1", "c2"]) {
      const entry = explain("s", id);
      expect(entry).toMatchObject({
        disposition: "collected",
        mode: "collect",
        modeSource: "channel",
        firstSeenBy: { runId: burst?.runId, call: 1, at: burst?.at },
        answeredBy: { runId: burst?.runId, delivered: true },
      });
      // s#2 (the follow-up) ends at 3700; the burst waits 500 ms more.
      expect(entry?.waited).toEqual([{ where: "quiet-window", from: entry?.arrivedAt, until: 4200 }]);
    }
  });

  it("the message of an interrupted turn was seen but never answered; the interrupting one was", async () => {
    const { explain } = await explained();
    const cutOff = explain("t", "m1");
    expect(cutOff).toMatchObject({ arrivedAt: 9000, firstSeenBy: { call: 1, at: 9000 } });
    expect(cutOff?.answeredBy).toBeUndefined();
    expect(explain("t", "i1")).toMatchObject({
      disposition: "interrupted",
      mode: "interrupt",
      modeSource: "inline",
      answeredBy: { delivered: true },
    });
    // Sessions do not share messages: m1 of "t" is not m1 of "s".
    expect(explain("s", "m1")?.arrivedAt).toBe(0);
    expect(explain("nobody", "m1")).toBeUndefined();
    expect(explain("s", "missing")).toBeUndefined();
  });

  it("a reply that did not reach the user is reported as not delivered; a dropped message says why", async () => {
    const { result, gateway } = await runScenario(
      parseScenario(
        `
model:
  - reply: { delayMs: 300, text: "Re: {{latestUser}}" }
channels:
  telegram: { failSends: 2 }
config: { queue: { mode: followup, cap: 1, drop: old }, delivery: { visibleAcks: none } }
inbound:
  - { at: 0, session: "s", channel: telegram, id: m1, text: "first" }
  - { at: 100, session: "s", channel: telegram, id: m2, text: "second" }
  - { at: 200, session: "s", channel: telegram, id: m3, text: "third" }
`,
        "undelivered.yaml",
      ),
    );
    expect(result.events.filter((event) => event.type === "final.undelivered")).toHaveLength(1);
    // The reply and its one resend both failed: the user got only the could-not-deliver notice.
    expect(result.events.filter((event) => event.type === "recovery.failed")).toHaveLength(1);
    expect(gateway.explain("s", "m1")).toMatchObject({
      answeredBy: { runId: "s#1", delivered: false, at: 300 },
    });
    const dropped = gateway.explain("s", "m2");
    expect(dropped).toMatchObject({
      disposition: "queued",
      dropped: { reason: "queue cap: dropped oldest", at: 200 },
    });
    expect(dropped?.firstSeenBy).toBeUndefined();
    expect(dropped?.answeredBy).toBeUndefined();
    expect(gateway.explain("s", "m3")).toMatchObject({ answeredBy: { delivered: true } });
  });
});

describe("tiller run FILE --explain ID", () => {
  const root = resolve(import.meta.dirname, "../..");
  const dir = mkdtempSync(join(tmpdir(), "tiller-explain-"));
  const file = join(dir, "explain.yaml");
  writeFileSync(file, SCENARIO);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  // The command bundled once: `npx tsx` compiled the CLI on each of three runs (55 s at load 20).
  let command: string[] = [];
  beforeAll(async () => {
    command = await tillerCommand(dir);
  }, 60_000);

  const tiller = (...args: string[]) =>
    spawnSync(process.execPath, [...command, "run", file, ...args], {
      cwd: root,
      encoding: "utf8",
      timeout: 60_000,
    });

  it("prints the explanation as JSON after the scenario's JSON", async () => {
    const { explain } = await explained();
    const run = tiller("--json", "--explain", "m2");
    expect(run.status, run.stderr).toBe(0);
    const lines = run.stdout.trim().split("\n");
    expect(lines).toHaveLength(2);
    expect(JSON.parse(lines[0]!)).toHaveProperty("acks");
    expect(JSON.parse(lines[1]!)).toEqual(explain("s", "m2"));
  }, 60_000);

  it("prints it readably after the timeline, and says when no message has that id", async () => {
    const readable = tiller("--explain", "f1");
    expect(readable.status, readable.stderr).toBe(0);
    const json = readable.stdout.slice(readable.stdout.indexOf("\n{") + 1);
    expect(JSON.parse(json)).toMatchObject({
      messageId: "f1",
      mode: "followup",
      waited: [{ where: "own-turn" }],
    });
    expect(readable.stdout).toContain('"arrivedAt": 1500');

    const missing = tiller("--json", "--explain", "nope");
    expect(missing.status, missing.stderr).toBe(0);
    expect(JSON.parse(missing.stdout.trim().split("\n")[1]!)).toEqual({ messageId: "nope", found: false });
  }, 60_000);
});

describe("gateway.explain memory", () => {
  const inbound = (sessions: number, perSession: number) =>
    Array.from({ length: sessions * perSession }, (_, i) => {
      const session = `u${Math.floor(i / perSession)}`;
      return `  - { at: ${i * 1000}, session: "${session}", channel: telegram, id: m${i % perSession}, text: "question ${i}" }`;
    }).join("\n");
  const scenario = (explainMessages: number, sessions: number, perSession: number) => `
name: bounded
model:
  - reply: { delayMs: 10, text: "Re: {{latestUser}}" }
config: { limits: { explainMessages: ${explainMessages} } }
inbound:
${inbound(sessions, perSession)}
`;

  it("forgets the sessions least recently active first once limits.explainMessages are held", async () => {
    const { gateway } = await runScenario(parseScenario(scenario(6, 4, 3), "bounded.yaml"));
    // 12 messages in 4 sessions of 3, one session after the other: the last two sessions fit.
    expect(gateway.explain("u0", "m0")).toBeUndefined();
    expect(gateway.explain("u1", "m2")).toBeUndefined();
    for (const session of ["u2", "u3"])
      for (const id of ["m0", "m1", "m2"])
        expect(gateway.explain(session, id)).toMatchObject({ answeredBy: { delivered: true } });
  });

  it("keeps the newest session's messages even past the limit, and the default keeps thousands", async () => {
    const tight = await runScenario(parseScenario(scenario(1, 2, 3), "tight.yaml"));
    expect(tight.gateway.explain("u0", "m2")).toBeUndefined();
    expect(tight.gateway.explain("u1", "m0")).toMatchObject({ disposition: "started" });
    expect(tight.gateway.explain("u1", "m2")).toMatchObject({ disposition: "started" });

    const roomy = await runScenario(parseScenario(scenario(20_000, 40, 3), "roomy.yaml"));
    expect(roomy.gateway.explain("u0", "m0")).toMatchObject({ answeredBy: { delivered: true } });
  });

  it("a steered message that came too late for its run is answered by the next turn, and says so", async () => {
    const { gateway, result } = await runScenario(
      parseScenario(
        `
name: too late to steer
config: { staleReplyRecheck: { enabled: false } }
model:
  - reply: { delayMs: 300, text: "Re: {{latestUser}}" }
inbound:
  - { at: 0, session: "s", channel: web, id: m1, text: "first question" }
  - { at: 100, session: "s", channel: web, id: m2, text: "second question" }
`,
        "late.yaml",
      ),
    );
    const [first, second] = [...new Set(result.modelCalls.map((call) => call.runId))];
    const story = gateway.explain("s", "m2")!;
    expect(story.disposition).toBe("steered");
    expect(story.answeredBy).toMatchObject({ runId: second, delivered: true });
    expect(story.timeline.map((entry) => entry.what).join("\n")).not.toContain(`answered by ${first}`);
    expect(gateway.explain("s", "m1")!.answeredBy).toMatchObject({ runId: first });
  });
});
