import { execFile } from "node:child_process";
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import type { ModelProvider, ModelRequest } from "../../src/ports/model.js";
import { loadScenario } from "../../src/scenario/load.js";
import { runScenario } from "../../src/scenario/runner.js";
import { machinePaths } from "../../src/testing/machine-paths.js";
import { pathsCommand } from "../../src/testing/paths-command.js";
import { replayPath } from "../../src/testing/replay-path.js";
import { tillerCommand } from "../support/serve-process.js";
import { useTempDir } from "../support/temp-dir.js";

const run = promisify(execFile);

/** A model adapter that loses steering: it answers as if only the turn's first message was sent. */
function ignoresSteering(scripted: ModelProvider): ModelProvider {
  return {
    complete(request: ModelRequest) {
      const turn = request.context.slice(request.turnStart);
      const firstUser = turn.findIndex((message) => message.role === "user");
      const context = [
        ...request.context.slice(0, request.turnStart),
        ...turn.filter((message, index) => message.role !== "user" || index === firstUser),
      ];
      return scripted.complete({ ...request, context });
    },
  };
}

describe("generated run-machine scenarios", () => {
  const dir = useTempDir("tiller-paths");

  it("every shortest-path scenario `tiller paths run --out` writes passes on the real gateway", async () => {
    await pathsCommand(["run", "--out", dir.path]);
    const files = (await readdir(dir.path)).sort();
    expect(files).toHaveLength(machinePaths("run").length);
    for (const file of files) {
      const { result } = await runScenario(await loadScenario(join(dir.path, file)));
      const failed = (result.expectations ?? []).filter((expectation) => !expectation.ok);
      expect(failed, file).toEqual([]);
      expect(result.expectations!.length).toBeGreaterThan(1);
    }
  }, 120_000);

  it("every complete simple path replays on the real gateway", async () => {
    const paths = machinePaths("run", { kind: "simple", maxPaths: 120 });
    for (const path of paths) {
      const replay = await replayPath(path);
      expect(replay.ok, replay.story).toBe(true);
    }
  }, 120_000);

  it("paths under another config replay too (two re-check passes, followup mode)", async () => {
    for (const config of [
      { staleReplyRecheck: { maxPasses: 2 } },
      { queue: { mode: "followup" as const } },
    ]) {
      for (const path of machinePaths("run", { config })) {
        const replay = await replayPath(path, { config });
        expect(replay.ok, replay.story).toBe(true);
      }
    }
  }, 120_000);

  it("a model that ignores steering fails exactly the paths whose answer depends on a later message, readably", async () => {
    let failures = 0;
    for (const path of machinePaths("run")) {
      const correct = await replayPath(path);
      // Turns whose delivered reply answers a message that came after the turn's first one.
      const dependsOnLater = correct.result.deliveries
        .filter((delivery) => delivery.kind === "reply")
        .some((delivery) => {
          const calls = correct.result.modelCalls.filter((call) => call.runId === delivery.runId);
          const texts = calls[calls.length - 1]?.userTexts ?? [];
          return texts.length > 1 && texts[texts.length - 1] !== texts[0];
        });
      const broken = await replayPath(path, { model: ignoresSteering });
      if (dependsOnLater) {
        expect(broken.ok, path.name).toBe(false);
        expect(broken.story).toMatch(/expected a reply "Re: .+" is delivered; found .*reply "Re: /);
        failures++;
      } else {
        expect(broken.ok, broken.story).toBe(true);
      }
    }
    expect(failures).toBeGreaterThan(5);
  }, 120_000);

  it("every session-machine scenario `tiller paths session --out` writes passes on the real gateway", async () => {
    const summary = await pathsCommand(["session", "--out", dir.path]);
    const paths = machinePaths("session");
    const files = (await readdir(dir.path)).sort();
    // Only the path with no event at all (a session before its first message) has no scenario.
    expect(files).toHaveLength(paths.length - 1);
    expect(summary).toContain(`${files.length} scenarios written`);
    for (const file of files) {
      const { result } = await runScenario(await loadScenario(join(dir.path, file)));
      const failed = (result.expectations ?? []).filter((expectation) => !expectation.ok);
      expect(failed, file).toEqual([]);
    }
  }, 120_000);

  it("session paths replay in every configured queue mode, and simple session paths too", async () => {
    for (const mode of ["steer", "followup", "collect", "interrupt"] as const) {
      const config = { queue: { mode } };
      for (const path of machinePaths("session", { config }).filter(
        (candidate) => candidate.events.length > 0,
      )) {
        const replay = await replayPath(path, { config });
        expect(replay.ok, replay.story).toBe(true);
      }
    }
    for (const path of machinePaths("session", { kind: "simple", maxPaths: 60 })) {
      const replay = await replayPath(path);
      expect(replay.ok, replay.story).toBe(true);
    }
  }, 120_000);

  it("`tiller run DIR` is a test suite: a summary line, exit 0 when all pass and 3 when one fails", async () => {
    await pathsCommand(["run", "--out", dir.path]);
    // Bundled once (a subfolder `tiller run DIR` does not read): tsx compiled the CLI on each of three
    // runs, which took this test past its 60 s at load 20.
    const cli = await tillerCommand(join(dir.path, "cli"));
    const passing = await run(process.execPath, [...cli, "run", dir.path]);
    expect(passing.stdout).toMatch(new RegExp(`^${machinePaths("run").length} passed, 0 failed$`, "m"));
    const broken = join(dir.path, "zz-broken.yaml");
    const { writeFile } = await import("node:fs/promises");
    await writeFile(
      broken,
      [
        "model: [{ reply: { text: 'Re: {{latestUser}}' } }]",
        "inbound: [{ at: 0, session: s, channel: web, id: m1, text: hello }]",
        "expect: { deliveries: [{ kind: reply, text: 'Re: goodbye' }] }",
      ].join("\n"),
    );
    const failing = await run(process.execPath, [...cli, "run", dir.path]).catch((error) => error);
    expect(failing.code).toBe(3);
    expect(failing.stdout).toContain(`FAIL  a reply "Re: goodbye" is delivered`);
    expect(failing.stdout).toContain(`found: reply "Re: hello"`);
    expect(failing.stdout).toMatch(new RegExp(`^${machinePaths("run").length} passed, 1 failed$`, "m"));
    const json = await run(process.execPath, [...cli, "paths", "run", "--json"]);
    const listed = JSON.parse(json.stdout) as { machine: string; paths: Array<{ name: string }> };
    expect(listed.machine).toBe("run");
    expect(listed.paths.some((path) => path.name.endsWith("streaming (re-check 1)"))).toBe(true);
    expect(listed.paths.some((path) => path.name.includes("stale draft shipped: limit"))).toBe(true);
  }, 60_000);
});
