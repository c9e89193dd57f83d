import { describe, expect, it } from "vitest";
import { parseScenario } from "../../src/scenario/load.js";
import { runScenario, type ScenarioResult } from "../../src/scenario/runner.js";
import type { Scenario } from "../../src/scenario/schema.js";
import { eventsOf as events, replies } from "../support/scenario.js";

// Inbound message policy (docs/architecture.md) end to end: every queue mode while the session is idle, while
// the model streams, while a tool runs, while the final is drafted and during a collect window; FIFO,
// cap and drop, duplicates, control commands, mode resolution and the acks. Every scenario also checks
// the ack contract: one readable ack per inbound message, and none claims that work stopped unless it did.

/**
 * Strips the common indentation, so scenarios read as YAML in the test; a multi-line value keeps the
 * indentation of the line it is put in.
 */
function yaml(strings: TemplateStringsArray, ...values: unknown[]): string {
  let text = strings[0] ?? "";
  values.forEach((value, index) => {
    const column = text.length - text.lastIndexOf("\n") - 1;
    text +=
      String(value)
        .split("\n")
        .join(`\n${" ".repeat(column)}`) + (strings[index + 1] ?? "");
  });
  const lines = text.replace(/^\n/, "").split("\n");
  const indent = Math.min(...lines.filter((line) => line.trim()).map((line) => line.match(/^ */)![0].length));
  return lines.map((line) => line.slice(indent)).join("\n");
}

// m1 "deploy …" at 0: model call 1 streams 0–100, deploy (not cancellable) runs 100–3100, notify
// 3100–3200, call 2 drafts 3200–3500, the reply is delivered at 3500. "search …" runs the cancellable
// search instead; "audit …" runs notify first (an effect that completes), then deploy.
const TOOLS = yaml`
  model:
    - when: { latestUser: "deploy", call: 1 }
      reply: { delayMs: 100, toolCalls: [{ name: deploy }, { name: notify }] }
    - when: { latestUser: "search", call: 1 }
      reply: { delayMs: 100, toolCalls: [{ name: search }, { name: notify }] }
    - when: { latestUser: "audit", call: 1 }
      reply: { delayMs: 100, toolCalls: [{ name: notify }, { name: deploy }] }
    - reply: { delayMs: 300, text: "Re: {{latestUser}}" }
  tools:
    deploy: { durationMs: 3000, result: "deployed", cancellable: false }
    search: { durationMs: 3000, result: "found", cancellable: true }
    notify: { durationMs: 100, result: "notified", cancellable: false }
`;

/** A scenario on the shared model and tools; `body` holds config and inbound. */
function withTools(body: string): string {
  return `${TOOLS}\n${body}`;
}

interface Played {
  result: ScenarioResult;
  scenario: Scenario;
  gateway: Awaited<ReturnType<typeof runScenario>>["gateway"];
}

async function play(text: string): Promise<Played> {
  const scenario = parseScenario(text, "modes.yaml");
  const { result, gateway } = await runScenario(scenario);
  expectHonestAcks(scenario, result);
  return { result, scenario, gateway };
}

/** One readable ack per inbound message; an ack that says work stops only where a turn was aborted. */
function expectHonestAcks(scenario: Scenario, result: ScenarioResult): void {
  const sent = scenario.inbound.map((message) => `${message.session}/${message.id}`).sort();
  const acked = result.acks.map((ack) => `${ack.session}/${ack.messageId}`).sort();
  expect(acked, "one ack per inbound message").toEqual(sent);
  for (const ack of result.acks) {
    expect(ack.text.trim().length, `ack of ${ack.messageId} has text`).toBeGreaterThan(5);
    expect(ack.text, `ack of ${ack.messageId} is prose`).not.toMatch(/undefined|\[object|NaN/);
    if (/^Stopping the current reply/.test(ack.text)) {
      const aborted = result.events.some(
        (event) =>
          event.type === "turn.ended" &&
          event.session === ack.session &&
          event.status === "aborted" &&
          event.at >= ack.at,
      );
      expect(aborted, `ack of ${ack.messageId} says the reply stops: "${ack.text}"`).toBe(true);
    }
    const cancelling = /cancelling (\w+)/.exec(ack.text)?.[1];
    if (cancelling) {
      expect(
        result.toolCalls.some((call) => call.name === cancelling && call.status === "cancelled"),
        `ack of ${ack.messageId} says ${cancelling} is cancelled`,
      ).toBe(true);
    }
  }
}

function ack(result: ScenarioResult, id: string, session?: string) {
  const found = result.acks.find(
    (entry) => entry.messageId === id && (!session || entry.session === session),
  );
  if (!found) throw new Error(`no ack for ${id}`);
  return found;
}

function acksOf(result: ScenarioResult, id: string) {
  return result.acks.filter((entry) => entry.messageId === id);
}

/** Each turn (run) in start order with the user texts its last model call saw. */
function turns(
  result: ScenarioResult,
  session?: string,
): Array<{ runId: string; userTexts: string[]; at: number }> {
  const byRun = new Map<string, { runId: string; userTexts: string[]; at: number }>();
  for (const call of result.modelCalls) {
    if (session && call.session !== session) continue;
    const turn = byRun.get(call.runId) ?? { runId: call.runId, userTexts: [], at: call.at };
    turn.userTexts = call.userTexts;
    byRun.set(call.runId, turn);
  }
  return [...byRun.values()];
}

function userTextsByTurn(result: ScenarioResult, session?: string): string[][] {
  return turns(result, session).map((turn) => turn.userTexts);
}

function inbound(...lines: string[]): string {
  return `inbound:\n${lines.map((line) => `  - ${line}`).join("\n")}`;
}

function msg(at: number, id: string, text: string, extra = "", session = "s", channel = "telegram"): string {
  return `{ at: ${at}, session: "${session}", channel: ${channel}, id: ${id}, text: "${text}"${extra ? `, ${extra}` : ""} }`;
}

// ---------------------------------------------------------------------------------------------------

describe("steer (the default)", () => {
  it("starts a turn at once when the session is idle", async () => {
    const { result } = await play(withTools(inbound(msg(0, "m1", "hello there"))));
    expect(ack(result, "m1")).toMatchObject({ disposition: "started", mode: "steer", modeSource: "default" });
    expect(userTextsByTurn(result)).toEqual([["hello there"]]);
    expect(replies(result).map((reply) => reply.text)).toEqual(["Re: hello there"]);
  });

  it("joins the turn while the model streams: the draft is re-checked with both messages, one reply", async () => {
    const { result } = await play(
      withTools(inbound(msg(0, "m1", "what is the weather in Paris"), msg(150, "m2", "actually Berlin"))),
    );
    expect(ack(result, "m2")).toMatchObject({ disposition: "steered" });
    expect(ack(result, "m2").text).toContain("next step");
    expect(turns(result)).toHaveLength(1);
    expect(result.modelCalls.at(-1)?.userTexts).toEqual(["what is the weather in Paris", "actually Berlin"]);
    expect(replies(result).map((reply) => reply.text)).toEqual(["Re: actually Berlin"]);
  });

  it("joins the turn mid-tool: the running tool finishes, the rest of the batch is skipped, the next model call sees it", async () => {
    const { result } = await play(
      withTools(inbound(msg(0, "m1", "deploy the app"), msg(1000, "m2", "wait, use the staging server"))),
    );
    const steer = ack(result, "m2");
    expect(steer.disposition).toBe("steered");
    expect(steer.text).toContain("deploy is running");
    expect(steer.text).toContain("cannot be cancelled");
    expect(result.toolCalls.map((call) => [call.name, call.status])).toEqual([
      ["deploy", "done"],
      ["notify", "skipped"],
    ]);
    const [first, second] = result.modelCalls;
    expect(first?.userTexts).toEqual(["deploy the app"]);
    expect(second).toMatchObject({
      at: 3100,
      call: 2,
      userTexts: ["deploy the app", "wait, use the staging server"],
    });
    expect(replies(result).map((reply) => reply.text)).toEqual(["Re: wait, use the staging server"]);
    expect(events(result, "steer.injected")).toMatchObject([{ messageIds: ["m2"] }]);
  });

  it("says a running cancellable tool can be cancelled, and lists the effects that already happened", async () => {
    const { result } = await play(
      withTools(
        inbound(
          msg(0, "m1", "audit the release"),
          msg(1000, "m2", "also check the changelog"),
          msg(4000, "m3", "search for the docs"),
          msg(5000, "m4", "only the public docs"),
        ),
      ),
    );
    // m1: notify 100–200 completes, then deploy runs 200–3200; m2 arrives mid-deploy.
    const midDeploy = ack(result, "m2");
    expect(midDeploy.text).toContain("deploy is running (it cannot be cancelled)");
    expect(midDeploy.text).toContain("Already done in this turn: notify.");
    // m3 starts a new turn (m1's was delivered); m4 arrives while the cancellable search runs.
    const midSearch = ack(result, "m4");
    expect(midSearch.disposition).toBe("steered");
    expect(midSearch.text).toContain("search is running (it can be cancelled)");
    expect(midSearch.text).not.toContain("Already done");
  });

  it("becomes a follow-up when the run can no longer take it (re-check limit reached while drafting)", async () => {
    const { result } = await play(
      withTools(
        yaml`
          config: { staleReplyRecheck: { enabled: true, maxPasses: 0 } }
          ${inbound(msg(0, "m1", "first question"), msg(100, "m2", "second thought"))}
        `,
      ),
    );
    expect(ack(result, "m2").disposition).toBe("steered");
    // The draft of m1 was already written when m2 arrived and no re-check was left: m2 gets its own turn.
    expect(userTextsByTurn(result)).toEqual([["first question"], ["second thought"]]);
    expect(replies(result).map((reply) => reply.text)).toEqual(["Re: first question", "Re: second thought"]);
    expect(events(result, "recheck.skipped")).toMatchObject([{ reason: "limit" }]);
  });

  it("a steer the run could not take waits behind follow-ups queued before it", async () => {
    const { result } = await play(
      withTools(
        yaml`
          config: { staleReplyRecheck: { enabled: true, maxPasses: 0 } }
          ${inbound(
            msg(0, "m1", "first question"),
            msg(50, "f1", "a follow-up", "mode: followup"),
            msg(100, "s1", "a late correction"),
            msg(400, "f2", "a later follow-up", "mode: followup"),
          )}
        `,
      ),
    );
    expect(userTextsByTurn(result)).toEqual([
      ["first question"],
      ["a follow-up"],
      ["a late correction"],
      ["a later follow-up"],
    ]);
  });

  it("does not join a recovery turn (it only resends an earlier reply): it waits for its own turn", async () => {
    const { result } = await play(yaml`
      config: { delivery: { visibleReplies: message_tool } }
      model:
        - when: { recovery: true, call: 1 }
          reply: { delayMs: 500, toolCalls: [{ name: message, args: { action: send, text: "The answer I owed you." } }] }
        - when: { hasToolResult: message }
          reply: { delayMs: 10, text: "" }
        - when: { latestUser: "quick" }
          reply: { delayMs: 100, toolCalls: [{ name: message, args: { action: send, text: "Quick answer." } }] }
        - reply: { delayMs: 100, text: "${"A substantive answer that was written but never sent. ".repeat(6)}" }
      ${inbound(msg(0, "m1", "explain it"), msg(300, "m2", "quick, are you there?"))}
    `);
    // m1's final is stranded at 100; the recovery turn resends it 100–600; m2 arrives in between.
    expect(events(result, "recovery.queued")).toHaveLength(1);
    expect(ack(result, "m2")).toMatchObject({ disposition: "queued", mode: "steer" });
    expect(ack(result, "m2").text).toContain("being resent first");
    const recovery = result.modelCalls.filter((call) => call.recovery);
    expect(recovery.every((call) => call.userTexts.length === 0)).toBe(true);
    expect(userTextsByTurn(result).at(-1)).toEqual(["quick, are you there?"]);
    expect(result.deliveries.map((delivery) => [delivery.kind, delivery.text])).toEqual([
      ["recovery", "The answer I owed you."],
      ["reply", "Quick answer."],
    ]);
  });

  it("is not switched off by a queued follow-up: a later steer still joins the running turn", async () => {
    const { result } = await play(
      withTools(
        inbound(
          msg(0, "m1", "deploy the app"),
          msg(500, "f1", "then write the release notes", "mode: followup"),
          msg(1000, "m3", "use the staging server"),
        ),
      ),
    );
    expect(ack(result, "f1").disposition).toBe("queued");
    expect(ack(result, "m3").disposition).toBe("steered");
    expect(userTextsByTurn(result)).toEqual([
      ["deploy the app", "use the staging server"],
      ["then write the release notes"],
    ]);
  });

  it("waits behind a collect burst during its quiet window instead of starting a turn", async () => {
    const { result } = await play(
      withTools(
        inbound(
          msg(0, "m1", "first question"),
          msg(100, "c1", "one", "mode: collect"),
          msg(200, "c2", "two", "mode: collect"),
          msg(500, "m4", "and a steer"),
        ),
      ),
    );
    // m1's reply lands at 300; the burst waits until 800; m4 arrives inside the window.
    expect(ack(result, "m4")).toMatchObject({ disposition: "queued" });
    expect(ack(result, "m4").text).toContain("answered first");
    expect(ack(result, "m4").text).not.toContain("finalized");
    expect(userTextsByTurn(result)).toEqual([["first question"], ["one", "two"], ["and a steer"]]);
  });
});

describe("followup", () => {
  it("starts a turn at once when the session is idle", async () => {
    const { result } = await play(withTools(inbound(msg(0, "m1", "hello", "mode: followup"))));
    expect(ack(result, "m1")).toMatchObject({
      disposition: "started",
      mode: "followup",
      modeSource: "inline",
    });
  });

  it("gives each message its own turn, first in first out, whether it arrived while streaming or mid-tool", async () => {
    const { result } = await play(
      withTools(
        yaml`
          config: { queue: { mode: followup } }
          ${inbound(
            msg(0, "m1", "deploy the app"),
            msg(50, "m2", "question two"),
            msg(1000, "m3", "question three"),
            msg(1001, "m4", "question four"),
          )}
        `,
      ),
    );
    expect(result.acks.map((entry) => [entry.messageId, entry.disposition])).toEqual([
      ["m1", "started"],
      ["m2", "queued"],
      ["m3", "queued"],
      ["m4", "queued"],
    ]);
    expect(ack(result, "m4").text).toContain("(2 ahead)");
    expect(userTextsByTurn(result)).toEqual([
      ["deploy the app"],
      ["question two"],
      ["question three"],
      ["question four"],
    ]);
    expect(replies(result).map((reply) => reply.text)).toEqual([
      "Re: deploy the app",
      "Re: question two",
      "Re: question three",
      "Re: question four",
    ]);
    // The first turn was not disturbed: its whole batch ran.
    expect(result.toolCalls.map((call) => call.status)).toEqual(["done", "done"]);
  });

  it("waits for its own turn while the final is drafted, without making the draft stale", async () => {
    const { result } = await play(
      withTools(inbound(msg(0, "m1", "deploy the app"), msg(3300, "m2", "what changed?", "mode: followup"))),
    );
    expect(ack(result, "m2").disposition).toBe("queued");
    expect(events(result, "recheck.fired")).toEqual([]);
    expect(userTextsByTurn(result)).toEqual([["deploy the app"], ["what changed?"]]);
    expect(replies(result).map((reply) => reply.text)).toEqual(["Re: deploy the app", "Re: what changed?"]);
  });

  it("waits behind a collect burst in its quiet window, then runs in arrival order", async () => {
    const { result } = await play(
      withTools(
        inbound(
          msg(0, "m1", "first question"),
          msg(100, "c1", "one", "mode: collect"),
          msg(500, "f1", "a follow-up", "mode: followup"),
          msg(600, "c2", "two", "mode: collect"),
        ),
      ),
    );
    expect(ack(result, "f1").disposition).toBe("queued");
    expect(userTextsByTurn(result)).toEqual([["first question"], ["one", "two"], ["a follow-up"]]);
  });

  it("is never overtaken: neither a newer follow-up nor a newer interrupt runs ahead of it", async () => {
    const { result } = await play(
      withTools(
        inbound(
          msg(0, "m1", "deploy the app"),
          msg(500, "f1", "first follow-up", "mode: followup"),
          msg(600, "f2", "second follow-up", "mode: followup"),
          msg(700, "i1", "urgent: stop that", "mode: interrupt"),
        ),
      ),
    );
    // The interrupt folds the waiting follow-ups into its turn, in arrival order.
    expect(userTextsByTurn(result)).toEqual([
      ["deploy the app"],
      ["first follow-up", "second follow-up", "urgent: stop that"],
    ]);
  });
});

describe("collect", () => {
  it("starts a turn at once when the session is idle", async () => {
    const { result } = await play(withTools(inbound(msg(0, "m1", "hello", "mode: collect"))));
    expect(ack(result, "m1")).toMatchObject({ disposition: "started", mode: "collect" });
    expect(userTextsByTurn(result)).toEqual([["hello"]]);
  });

  it("answers a burst sent while the model streams as one turn that sees every message in order", async () => {
    const { result } = await play(
      withTools(
        yaml`
          config: { queue: { mode: collect } }
          ${inbound(
            msg(0, "m1", "first question"),
            msg(100, "m2", "one"),
            msg(150, "m3", "two"),
            msg(200, "m4", "three"),
          )}
        `,
      ),
    );
    expect(result.acks.slice(1).map((entry) => entry.disposition)).toEqual([
      "collected",
      "collected",
      "collected",
    ]);
    expect(ack(result, "m2").text).toContain("once you pause");
    const collected = turns(result)[1]!;
    expect(collected.userTexts).toEqual(["one", "two", "three"]);
    // The burst waits for a quiet window of 500 ms after the turn that was busy ends (at 300).
    expect(collected.at).toBe(800);
    expect(replies(result)).toHaveLength(2);
  });

  it("collects messages sent mid-tool and waits for the quiet window after the turn ends", async () => {
    const { result } = await play(
      withTools(
        inbound(
          msg(0, "m1", "deploy the app"),
          msg(1000, "m2", "one", "mode: collect"),
          msg(2000, "m3", "two", "mode: collect"),
        ),
      ),
    );
    expect(result.toolCalls.map((call) => call.status)).toEqual(["done", "done"]);
    expect(turns(result).map((turn) => [turn.at, turn.userTexts])).toEqual([
      [0, ["deploy the app"]],
      [4000, ["one", "two"]],
    ]);
  });

  it("restarts the quiet window with each message of the burst, and honours debounceMs", async () => {
    const { result } = await play(
      withTools(
        yaml`
          config: { queue: { mode: collect, debounceMs: 1000 } }
          ${inbound(
            msg(0, "m1", "first question"),
            msg(100, "m2", "one"),
            msg(900, "m3", "two, inside the window"),
            msg(1800, "m4", "three, inside the restarted window"),
          )}
        `,
      ),
    );
    expect(turns(result).map((turn) => [turn.at, turn.userTexts])).toEqual([
      [0, ["first question"]],
      [2800, ["one", "two, inside the window", "three, inside the restarted window"]],
    ]);
  });

  it("drains the bursts of different channels separately", async () => {
    const { result } = await play(
      withTools(
        yaml`
          config: { queue: { mode: collect } }
          ${inbound(
            msg(0, "m1", "first question"),
            msg(100, "t1", "telegram one"),
            msg(120, "w1", "web one", "", "s", "web"),
            msg(140, "t2", "telegram two"),
            msg(160, "w2", "web two", "", "s", "web"),
          )}
        `,
      ),
    );
    expect(userTextsByTurn(result)).toEqual([
      ["first question"],
      ["telegram one", "telegram two"],
      ["web one", "web two"],
    ]);
  });
});

describe("interrupt", () => {
  it("starts a turn at once when the session is idle, and says nothing about stopping", async () => {
    const { result } = await play(withTools(inbound(msg(0, "m1", "hello", "mode: interrupt"))));
    expect(ack(result, "m1")).toMatchObject({ disposition: "started", mode: "interrupt" });
    expect(ack(result, "m1").text).not.toMatch(/stop/i);
  });

  it("during a collect window there is nothing to stop: it waits behind the burst", async () => {
    const { result } = await play(
      withTools(
        inbound(
          msg(0, "m1", "first question"),
          msg(100, "c1", "one", "mode: collect"),
          msg(500, "i1", "urgent", "mode: interrupt"),
        ),
      ),
    );
    expect(ack(result, "i1").disposition).toBe("queued");
    expect(ack(result, "i1").text).not.toMatch(/stopping/i);
    expect(events(result, "turn.ended").map((event) => event.status)).toEqual(["done", "done", "done"]);
    expect(userTextsByTurn(result)).toEqual([["first question"], ["one"], ["urgent"]]);
  });

  it("aborts a streaming turn: it delivers nothing, and the newest message runs next", async () => {
    const { result } = await play(
      withTools(
        inbound(
          msg(0, "m1", "tell me a long story"),
          msg(150, "m2", "never mind, what time is it", "mode: interrupt"),
        ),
      ),
    );
    expect(ack(result, "m2")).toMatchObject({ disposition: "interrupted" });
    expect(ack(result, "m2").text).toContain("Stopping the current reply");
    expect(events(result, "turn.ended").map((event) => event.status)).toEqual(["aborted", "done"]);
    expect(replies(result).map((reply) => reply.text)).toEqual(["Re: never mind, what time is it"]);
    expect(userTextsByTurn(result)).toEqual([["tell me a long story"], ["never mind, what time is it"]]);
  });

  it("cancels a cancellable tool: the call is cancelled, the transcript closes it with a synthetic result", async () => {
    const { result } = await play(
      withTools(inbound(msg(0, "m1", "search the archive"), msg(1000, "m2", "forget it", "mode: interrupt"))),
    );
    expect(result.toolCalls.map((call) => [call.name, call.status])).toEqual([["search", "cancelled"]]);
    const transcript = result.transcripts.s ?? [];
    const records = transcript as Array<Record<string, unknown>>;
    const call = records.find((record) => record.role === "toolCall" && record.name === "search");
    expect(call?.callId).toBeTruthy();
    const closing = records.filter(
      (record) => record.role === "toolResult" && record.callId === call?.callId,
    );
    expect(closing).toMatchObject([{ status: "cancelled" }]);
    // The aborted turn delivers nothing; the interrupting message is answered at once.
    expect(replies(result).map((reply) => [reply.at, reply.text])).toEqual([[1300, "Re: forget it"]]);
    expect(turns(result)[1]).toMatchObject({ at: 1000, userTexts: ["forget it"] });
  });

  it("lets a tool that cannot be cancelled finish first, and the ack says so", async () => {
    const { result } = await play(
      withTools(
        inbound(msg(0, "m1", "deploy the app"), msg(1000, "m2", "stop, wrong app", "mode: interrupt")),
      ),
    );
    const interrupt = ack(result, "m2");
    expect(interrupt.disposition).toBe("interrupted");
    expect(interrupt.text).toContain("deploy cannot be cancelled, so it finishes first");
    // deploy completes; notify (not started) never runs; nothing of the aborted turn is delivered.
    expect(result.toolCalls.map((call) => [call.name, call.status])).toEqual([["deploy", "done"]]);
    expect(turns(result)[1]).toMatchObject({ at: 3100, userTexts: ["stop, wrong app"] });
    expect(replies(result).map((reply) => reply.text)).toEqual(["Re: stop, wrong app"]);
    const transcript = result.transcripts.s ?? [];
    expect(
      transcript.some((record) => record.role === "assistant" && record.runId === turns(result)[0]?.runId),
    ).toBe(false);
  });

  it("folds a steer the aborted run had not shown to the model into the interrupting turn", async () => {
    const { result } = await play(
      withTools(
        inbound(
          msg(0, "m1", "deploy the app"),
          msg(1000, "m2", "also bump the version"),
          msg(2000, "m3", "no, roll back instead", "mode: interrupt"),
        ),
      ),
    );
    expect(ack(result, "m2").disposition).toBe("steered");
    expect(userTextsByTurn(result)).toEqual([
      ["deploy the app"],
      ["also bump the version", "no, roll back instead"],
    ]);
    expect(replies(result).map((reply) => reply.text)).toEqual(["Re: no, roll back instead"]);
  });
});

describe("cap and drop", () => {
  const busy = (config: string, ...lines: string[]) =>
    withTools(
      yaml`
        config: { queue: ${config} }
        ${inbound(msg(0, "m1", "deploy the app"), ...lines)}
      `,
    );

  it("drop old: the oldest waiting message makes room and is never run", async () => {
    const { result } = await play(
      busy(
        "{ mode: followup, cap: 2, drop: old }",
        msg(100, "m2", "two"),
        msg(200, "m3", "three"),
        msg(300, "m4", "four"),
      ),
    );
    expect(ack(result, "m4").disposition).toBe("queued");
    expect(events(result, "message.dropped")).toMatchObject([
      { messageId: "m2", reason: "queue cap: dropped oldest" },
    ]);
    expect(events(result, "message.acked").find((event) => event.messageId === "m4")).toMatchObject({
      dropped: ["m2"],
    });
    expect(userTextsByTurn(result)).toEqual([["deploy the app"], ["three"], ["four"]]);
  });

  it("drop new: the newest message is rejected with the reason", async () => {
    const { result } = await play(
      busy(
        "{ mode: followup, cap: 2, drop: new }",
        msg(100, "m2", "two"),
        msg(200, "m3", "three"),
        msg(300, "m4", "four"),
      ),
    );
    expect(ack(result, "m4")).toMatchObject({ disposition: "rejected" });
    expect(ack(result, "m4").text).toBe("Not accepted: the queue is full (2 messages waiting).");
    expect(userTextsByTurn(result)).toEqual([["deploy the app"], ["two"], ["three"]]);
  });

  it("summarize (the default): the dropped message reaches the next turn as a one-line note", async () => {
    const { result } = await play(
      busy(
        "{ mode: collect, cap: 2 }",
        msg(100, "m2", "two"),
        msg(200, "m3", "three"),
        msg(300, "m4", "four"),
      ),
    );
    expect(events(result, "message.dropped")).toMatchObject([
      { messageId: "m2", reason: "queue cap: summarized" },
    ]);
    expect(userTextsByTurn(result)).toEqual([["deploy the app"], ["three", "four"]]);
    const note = (result.transcripts.s ?? []).find(
      (record) => record.role === "custom" && record.customType === "tiller.dropped-summary",
    );
    expect(note).toMatchObject({ details: { text: "[dropped while busy] two" } });
    // The note is stored with the turn that saw it, before that turn's user messages.
    const seqOf = (predicate: (record: ScenarioResult["transcripts"][string][number]) => boolean) =>
      (result.transcripts.s ?? []).find(predicate)?.seq ?? -1;
    expect(seqOf((record) => record === note)).toBeLessThan(
      seqOf((record) => record.role === "user" && record.text === "three"),
    );
  });
});

describe("duplicates", () => {
  it("acks a redelivered message id as a duplicate and never runs it again", async () => {
    const { result } = await play(
      withTools(
        inbound(
          msg(0, "m1", "hello there"),
          msg(100, "m1", "hello there"),
          msg(1000, "m1", "hello there"),
          msg(1100, "m2", "something else", "mode: followup"),
          msg(1200, "m2", "something else", "mode: followup"),
        ),
      ),
    );
    expect(acksOf(result, "m1").map((entry) => entry.disposition)).toEqual([
      "started",
      "duplicate",
      "duplicate",
    ]);
    expect(acksOf(result, "m2").map((entry) => entry.disposition)).toEqual(["started", "duplicate"]);
    expect(acksOf(result, "m1")[1]?.text).toBe("Already received this message; it is not run again.");
    expect(userTextsByTurn(result)).toEqual([["hello there"], ["something else"]]);
  });
});

describe("control commands", () => {
  const neverSentToTheModel = (result: ScenarioResult) => {
    for (const call of result.modelCalls) for (const text of call.userTexts) expect(text).not.toMatch(/^\//);
    for (const records of Object.values(result.transcripts)) {
      for (const record of records) if (record.role === "user") expect(record.text).not.toMatch(/^\//);
    }
  };

  it("/queue sets this session's mode and settings; /queue reset returns to the configured ones", async () => {
    const { result } = await play(
      withTools(
        yaml`
          config: { queue: { mode: steer } }
          ${inbound(
            msg(0, "q1", "/queue followup cap:5 drop:new"),
            msg(10, "m1", "deploy the app"),
            msg(500, "m2", "question two"),
            msg(600, "o1", "other session", "", "other"),
            msg(4000, "q2", "/queue reset"),
            msg(4100, "m3", "question three"),
          )}
        `,
      ),
    );
    expect(ack(result, "q1").text).toContain("followup");
    expect(ack(result, "m1")).toMatchObject({ mode: "followup", modeSource: "session" });
    expect(ack(result, "m2")).toMatchObject({
      disposition: "queued",
      mode: "followup",
      modeSource: "session",
    });
    expect(ack(result, "o1")).toMatchObject({ mode: "steer", modeSource: "global" });
    expect(ack(result, "q2").text).toContain("back to the defaults");
    expect(ack(result, "m3")).toMatchObject({ mode: "steer", modeSource: "global" });
    neverSentToTheModel(result);
  });

  it("/queue with an unknown option is rejected with what was wrong", async () => {
    const { result } = await play(
      withTools(inbound(msg(0, "q1", "/queue sometimes"), msg(10, "q2", "/queue collect cap:0"))),
    );
    expect(ack(result, "q1")).toMatchObject({ disposition: "rejected" });
    expect(ack(result, "q1").text).toContain("sometimes");
    expect(ack(result, "q2")).toMatchObject({ disposition: "rejected" });
    expect(ack(result, "q2").text).toContain("cap");
    expect(result.modelCalls).toEqual([]);
  });

  it("/stop aborts the running turn and drops what waits; nothing of it is delivered", async () => {
    const { result } = await play(
      withTools(
        inbound(
          msg(0, "m1", "search the archive"),
          msg(500, "f1", "and then summarise it", "mode: followup"),
          msg(1000, "x1", "/stop"),
          msg(5000, "m2", "new question"),
        ),
      ),
    );
    expect(ack(result, "x1").text).toBe("Stopping the current reply and dropping 1 waiting message(s).");
    expect(events(result, "message.dropped")).toMatchObject([
      { messageId: "f1", reason: "cleared by /stop" },
    ]);
    expect(result.toolCalls.map((call) => [call.name, call.status])).toEqual([["search", "cancelled"]]);
    expect(userTextsByTurn(result)).toEqual([["search the archive"], ["new question"]]);
    expect(replies(result).map((reply) => reply.text)).toEqual(["Re: new question"]);
    neverSentToTheModel(result);
  });

  it("/stop also drops a steer the stopped run had not shown to the model", async () => {
    const { result } = await play(
      withTools(
        inbound(
          msg(0, "m1", "deploy the app"),
          msg(1000, "m2", "also bump the version"),
          msg(2000, "x1", "/stop"),
        ),
      ),
    );
    expect(events(result, "message.dropped").map((event) => event.messageId)).toEqual(["m2"]);
    // The run held it back, and said so at once: the /stop's ack counts it.
    expect(ack(result, "x1").text).toContain("dropping 1 waiting message(s)");
    expect(userTextsByTurn(result)).toEqual([["deploy the app"]]);
    expect(replies(result)).toEqual([]);
  });

  it("a message sent after /stop, while a tool that cannot be cancelled finishes, is still answered", async () => {
    const { result } = await play(
      withTools(
        inbound(msg(0, "m1", "deploy the app"), msg(1000, "x1", "/stop"), msg(1500, "m2", "are you done?")),
      ),
    );
    // Its ack does not promise the stopped run reads it "before any further step".
    expect(ack(result, "m2").text).toBe(
      "Got it. The current reply is being stopped; deploy cannot be cancelled and finishes first, then I answer this.",
    );
    expect(events(result, "turn.ended").map((event) => event.status)).toEqual(["aborted", "done"]);
    expect(events(result, "message.dropped")).toEqual([]);
    expect(result.toolCalls.map((call) => [call.name, call.status])).toEqual([["deploy", "done"]]);
    expect(userTextsByTurn(result)).toEqual([["deploy the app"], ["are you done?"]]);
    expect(replies(result).map((reply) => reply.text)).toEqual(["Re: are you done?"]);
  });

  it("/stop with nothing running says so and stops nothing", async () => {
    const { result } = await play(withTools(inbound(msg(0, "m1", "hello"), msg(1000, "x1", "/stop"))));
    expect(ack(result, "x1").text).toBe("Nothing was running.");
    expect(events(result, "turn.ended").map((event) => event.status)).toEqual(["done"]);
  });

  it("/new starts a fresh context: the transcript revision bumps and earlier messages stay out of it", async () => {
    const { result } = await play(
      withTools(
        inbound(msg(0, "m1", "my name is Ada"), msg(1000, "n1", "/new"), msg(2000, "m2", "what is my name")),
      ),
    );
    expect(ack(result, "n1").text).toContain("fresh conversation");
    expect(events(result, "session.reset")).toHaveLength(1);
    const transcript = result.transcripts.s ?? [];
    const revisionOf = (text: string) =>
      transcript.find((record) => record.role === "user" && record.text === text)?.revision;
    expect(revisionOf("what is my name")).toBeGreaterThan(
      revisionOf("my name is Ada") ?? Number.POSITIVE_INFINITY,
    );
    expect(userTextsByTurn(result)).toEqual([["my name is Ada"], ["what is my name"]]);
    neverSentToTheModel(result);
  });
});

describe("mode resolution", () => {
  it("inline beats session beats channel beats global beats the default, and the ack names the source", async () => {
    const { result } = await play(
      withTools(
        yaml`
          config: { queue: { mode: followup, byChannel: { web: collect } } }
          ${inbound(
            msg(0, "g1", "global", "", "a"),
            msg(0, "c1", "channel", "", "b", "web"),
            msg(0, "x1", "/queue interrupt", "", "c"),
            msg(10, "s1", "session", "", "c", "web"),
            msg(20, "i1", "inline", "mode: steer", "c", "web"),
          )}
        `,
      ),
    );
    expect(ack(result, "g1")).toMatchObject({ mode: "followup", modeSource: "global" });
    expect(ack(result, "c1")).toMatchObject({ mode: "collect", modeSource: "channel" });
    expect(ack(result, "s1")).toMatchObject({ mode: "interrupt", modeSource: "session" });
    expect(ack(result, "i1")).toMatchObject({ mode: "steer", modeSource: "inline" });
    const { result: bare } = await play(withTools(inbound(msg(0, "d1", "default"))));
    expect(ack(bare, "d1")).toMatchObject({ mode: "steer", modeSource: "default" });
  });

  it.each([
    ["steering", "steer"],
    ["queue", "steer"],
    ["follow-up", "followup"],
    ["follow-ups", "followup"],
    ["followups", "followup"],
    ["steer-backlog", "followup"],
    ["coalesce", "collect"],
    ["abort", "interrupt"],
    ["interrupts", "interrupt"],
  ])("understands the alias %s as %s inline, in the config and in /queue", async (alias, mode) => {
    const { result } = await play(
      withTools(
        yaml`
          config: { queue: { mode: ${alias}, byChannel: { web: ${alias} } } }
          ${inbound(
            msg(0, "i1", "inline", `mode: ${alias}`, "a"),
            msg(0, "g1", "global", "", "b"),
            msg(0, "c1", "channel", "", "c", "web"),
            msg(0, "x1", `/queue ${alias}`, "", "d"),
            msg(10, "s1", "session", "", "d"),
          )}
        `,
      ),
    );
    expect(ack(result, "i1")).toMatchObject({ mode, modeSource: "inline" });
    expect(ack(result, "g1")).toMatchObject({ mode, modeSource: "global" });
    expect(ack(result, "c1")).toMatchObject({ mode, modeSource: "channel" });
    expect(ack(result, "s1")).toMatchObject({ mode, modeSource: "session" });
  });

  it("rejects an unknown inline mode and says which", async () => {
    const { result } = await play(withTools(inbound(msg(0, "m1", "hello", "mode: sometimes"))));
    expect(ack(result, "m1")).toMatchObject({ disposition: "rejected" });
    expect(ack(result, "m1").text).toContain('unknown queue mode "sometimes"');
    expect(result.modelCalls).toEqual([]);
  });
});

describe("acks", () => {
  it("every inbound message of a busy mixed session gets exactly one readable ack, in arrival order", async () => {
    const { result } = await play(
      withTools(
        inbound(
          msg(0, "m1", "deploy the app"),
          msg(100, "m2", "use staging"),
          msg(200, "m3", "then tell me", "mode: followup"),
          msg(300, "m4", "and also", "mode: collect"),
          msg(300, "m4", "and also", "mode: collect"),
          msg(400, "x1", "/queue collect"),
          msg(500, "m5", "collected"),
          msg(600, "m6", "stop everything", "mode: interrupt"),
          msg(700, "x2", "/stop"),
        ),
      ),
    );
    expect(result.acks.map((entry) => entry.messageId)).toEqual([
      "m1",
      "m2",
      "m3",
      "m4",
      "m4",
      "x1",
      "m5",
      "m6",
      "x2",
    ]);
    expect(result.acks.map((entry) => entry.disposition)).toEqual([
      "started",
      "steered",
      "queued",
      "collected",
      "duplicate",
      expect.any(String),
      "collected",
      "interrupted",
      expect.any(String),
    ]);
  });

  it("a steer ack never claims that work stopped, and an interrupt ack only where the turn was aborted", async () => {
    const { result } = await play(
      withTools(
        inbound(
          msg(0, "m1", "deploy the app"),
          msg(1000, "m2", "stop deploying"),
          msg(5000, "m3", "search the archive"),
          msg(6000, "m4", "cancel that", "mode: interrupt"),
        ),
      ),
    );
    expect(ack(result, "m2").text).not.toMatch(/stopping|stopped|cancelling/i);
    expect(ack(result, "m4").text).toMatch(/^Stopping the current reply/);
    expect(events(result, "turn.ended").map((event) => event.status)).toEqual(["done", "aborted", "done"]);
  });
});
