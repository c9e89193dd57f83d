import { execFile } from "node:child_process";
import { readdir, readFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import type { Channel } from "../../src/ports/channel.js";
import type { ModelProvider, ModelRequest } from "../../src/ports/model.js";
import { loadScenario } from "../../src/scenario/load.js";
import { runScenario } from "../../src/scenario/runner.js";
import { COMMITMENT_GRAPH_SUGGESTED } from "../../src/testing/commitment-graph.js";
import { machinePaths } from "../../src/testing/machine-paths.js";
import { pathsCommand } from "../../src/testing/paths-command.js";
import { replayPath, scenarioForPath } from "../../src/testing/replay-path.js";
import type { ScenarioFile } from "../../src/testing/run-path-scenario.js";
import { UnrealizablePathError } from "../../src/testing/session-path-scenario.js";
import { testPaths } from "../../src/testing/test-paths.js";
import { useTempDir } from "../support/temp-dir.js";

const ROOT = resolve(import.meta.dirname, "../..");
const CLI = [join(ROOT, "node_modules/tsx/dist/cli.mjs"), join(ROOT, "src/cli.ts")];
const run = promisify(execFile);

/** The three kinds of path the gateway cannot take, by the start of their reason. */
const UNREACHABLE = [
  /^a review that fails: /,
  /^a send that fails: /,
  /^a review that finds the daily limit used: /,
];

/** A decision the gateway sends: still pending, with a text of its own (not the stored suggestion). */
function wouldSend(args: Record<string, unknown>): boolean {
  const pending =
    args.classification === "still_pending_user" || args.classification === "still_pending_agent";
  return pending && typeof args.text === "string" && args.text !== COMMITMENT_GRAPH_SUGGESTED;
}

/** A review model that always says send: every decision becomes "still pending, here is a follow-up". */
function alwaysSends(scripted: ModelProvider): ModelProvider {
  return {
    async complete(request: ModelRequest) {
      const reply = await scripted.complete(request);
      if (!request.review) return reply;
      return {
        ...reply,
        toolCalls: reply.toolCalls.map((call) =>
          call.name === "commitment_decision" && !wouldSend(call.args)
            ? {
                ...call,
                args: { classification: "still_pending_user", text: "Any news on the competitor list?" },
              }
            : call,
        ),
      };
    },
  };
}

/** A channel that sends every follow-up twice, under two delivery ids, so nothing drops the second. */
function sendsFollowUpsTwice(inner: Channel): Channel {
  return {
    async send(message) {
      const receipt = await inner.send(message);
      if (message.kind === "commitment")
        await inner.send({ ...message, deliveryId: `${message.deliveryId ?? "follow-up"}:again` });
      return receipt;
    },
  };
}

/** Whether a scenario's review model is asked for a decision that must not send (and gets to answer). */
function expectsAModelReviewNotToSend(scenario: ScenarioFile): boolean {
  return (scenario.expect.events ?? []).some(
    (event) =>
      event.type === "commitment.reviewed" &&
      event.fields?.via === "model" &&
      event.fields.classification !== "still_pending_user" &&
      event.fields.classification !== "still_pending_agent",
  );
}

function realizable(kind: "shortest" | "simple") {
  const out: Array<{ path: ReturnType<typeof machinePaths>[number]; scenario: ScenarioFile }> = [];
  const unreachable: string[] = [];
  for (const path of machinePaths("commitment", { kind })) {
    try {
      out.push({ path, scenario: scenarioForPath(path) });
    } catch (error) {
      if (!(error instanceof UnrealizablePathError)) throw error;
      unreachable.push(error.message);
    }
  }
  return { paths: out, unreachable };
}

describe("generated commitment-machine scenarios", () => {
  const dir = useTempDir("tiller-commitment-paths");

  it("`tiller paths commitment --out` writes one scenario per shortest path, and each passes on the real gateway", async () => {
    const summary = await pathsCommand(["commitment", "--out", dir.path]);
    const files = (await readdir(dir.path)).sort();
    expect(files).toHaveLength(machinePaths("commitment").length);
    expect(summary).toContain(`${files.length} scenarios written to ${dir.path}`);
    for (const file of files) {
      const { result } = await runScenario(await loadScenario(join(dir.path, file)));
      const failed = (result.expectations ?? []).filter((expectation) => !expectation.ok);
      expect(failed, file).toEqual([]);
      expect(result.expectations!.length, file).toBeGreaterThan(4);
    }
    // What the stimuli cover: a proposal, the transcript, the review model, the limit, expiry, dismissal.
    const texts = await Promise.all(files.map((file) => readFile(join(dir.path, file), "utf8")));
    const scenarios = texts.map((text) => parseYaml(text) as ScenarioFile);
    expect(
      scenarios.every((scenario) => JSON.stringify(scenario.model).includes('"name":"commitment"')),
    ).toBe(true);
    expect(scenarios.some((scenario) => scenario.commitments.length > 0)).toBe(true);
    expect(scenarios.some((scenario) => (scenario.dismiss ?? []).length > 0)).toBe(true);
    expect(
      scenarios.some((scenario) =>
        scenario.expect.commitments?.some((commitment) => commitment.status === "expired"),
      ),
    ).toBe(true);
  }, 120_000);

  it("every simple path replays on the real gateway, or is reported as one it cannot take, saying why", async () => {
    const { paths, unreachable } = realizable("simple");
    expect(paths.length + unreachable.length).toBe(machinePaths("commitment", { kind: "simple" }).length);
    expect(paths.length).toBeGreaterThan(40);
    for (const reason of unreachable)
      expect(
        UNREACHABLE.some((pattern) => pattern.test(reason)),
        reason,
      ).toBe(true);
    for (const { path } of paths) {
      const replay = await replayPath(path);
      expect(replay.ok, replay.story).toBe(true);
    }
    // The paths a scenario can drive include each way a commitment can go.
    const names = paths.map(({ path }) => path.name).join("\n");
    for (const step of [
      "review completed (transcript)",
      "review still_pending_user voided",
      "send not committed",
      "due over maxPerDay",
      "review unclear past window",
      "= suggestion",
      "review superseded",
    ])
      expect(names).toContain(step);
  }, 120_000);

  it("paths under another config replay too (one send a day, short reviews)", async () => {
    const config = { commitments: { maxPerDay: 1, reviewTimeoutMs: 4_000 } };
    for (const path of machinePaths("commitment", { config, kind: "simple" })) {
      let replay: Awaited<ReturnType<typeof replayPath>>;
      try {
        replay = await replayPath(path, { config });
      } catch (error) {
        if (error instanceof UnrealizablePathError) continue;
        throw error;
      }
      expect(replay.ok, replay.story).toBe(true);
    }
  }, 120_000);

  it("a review model that always says send fails exactly the paths where a review must not send, readably", async () => {
    const { paths } = realizable("simple");
    let failures = 0;
    let settledByTranscript = 0;
    for (const { path, scenario } of paths) {
      const broken = await replayPath(path, { model: alwaysSends });
      if (expectsAModelReviewNotToSend(scenario)) {
        expect(broken.ok, path.name).toBe(false);
        expect(broken.story).toMatch(
          /expected (event commitment\.reviewed \{ id: commitment-1, classification: (unclear|superseded)|commitment commitment-1 ends (dismissed|expired|pending)|0 commitment deliveries; found 1|a commitment "[^"]+" is delivered)/,
        );
        failures++;
      } else {
        expect(broken.ok, broken.story).toBe(true);
        if (path.name.includes("(transcript)")) settledByTranscript++;
      }
    }
    expect(failures).toBeGreaterThan(10);
    // The transcript settles those before any model is asked: a model that always says send cannot spoil them.
    expect(settledByTranscript).toBeGreaterThan(0);
  }, 120_000);

  it("a channel that sends a follow-up twice fails exactly the paths that send one, readably", async () => {
    const { paths } = realizable("shortest");
    let failures = 0;
    for (const { path, scenario } of paths) {
      const broken = await replayPath(path, { channel: sendsFollowUpsTwice });
      const expected = scenario.expect.deliveryCount!.count;
      if (expected > 0) {
        expect(broken.ok, path.name).toBe(false);
        expect(broken.story).toContain(`expected ${expected} commitment deliveries; found ${expected * 2}`);
        failures++;
      } else {
        expect(broken.ok, broken.story).toBe(true);
      }
    }
    expect(failures).toBeGreaterThan(1);
  }, 120_000);

  it("the CLI writes the scenarios, reports in --json what it could not write, and `tiller run DIR` passes them", async () => {
    const simplePaths = [...CLI, "paths", "commitment", "--kind", "simple", "--out", dir.path];
    const json = await run(process.execPath, [...simplePaths, "--json"]);
    const listed = JSON.parse(json.stdout) as {
      machine: string;
      paths: Array<{ name: string; states: string[]; events: string[] }>;
      scenarios: { dir: string; written: number; unreachable: Array<{ path: string; reason: string }> };
    };
    expect(listed.machine).toBe("commitment");
    const files = await readdir(dir.path);
    expect(listed.scenarios.written).toBe(files.length);
    expect(listed.scenarios.written + listed.scenarios.unreachable.length).toBe(listed.paths.length);
    const failing = listed.scenarios.unreachable.find((entry) => entry.path.includes("review fails"));
    expect(failing?.reason).toMatch(/^a review that fails: the gateway's review never fails/);
    expect(listed.paths.find((path) => path.name === failing?.path)?.events).toContain(
      "xstate.error.actor.review",
    );

    const text = await run(process.execPath, simplePaths);
    expect(text.stdout).toContain("not written, the gateway cannot take these paths:");
    expect(text.stdout).toMatch(
      new RegExp(
        `${files.length} scenarios written to .* \\(${listed.scenarios.unreachable.length} paths the gateway cannot take\\)$`,
        "m",
      ),
    );

    const suite = await run(process.execPath, [...CLI, "run", dir.path], { maxBuffer: 64 * 1024 * 1024 });
    expect(suite.stdout).toMatch(new RegExp(`^${files.length} passed, 0 failed$`, "m"));
  }, 120_000);
});

// As a gateway author would: one test per commitment path under their config (one send a day).
const oneADay = { commitments: { maxPerDay: 1 } };
describe("commitment paths with maxPerDay 1, one test each", () => {
  testPaths(it, machinePaths("commitment", { config: oneADay }), { config: oneADay });
});
