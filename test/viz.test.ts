import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { and, createMachine, fromPromise, not, setup } from "xstate";
import {
  checkVisualizations,
  diffVisualizations,
  renderVisualizations,
  writeVisualizations,
} from "../scripts/viz.js";
import { toConfigJson } from "../src/viz/machine-config.js";
import { machineShape } from "../src/viz/machine-shape.js";
import { toMermaid } from "../src/viz/mermaid.js";

const repo = fileURLToPath(new URL("..", import.meta.url));

// Built by a function so determinism is checked across two separately constructed machines.
function makeFixture() {
  return setup({
    types: {} as { events: { type: "START" } | { type: "STOP" } | { type: "PING" } | { type: "NEXT" } },
    actions: { log: () => {} },
    guards: { isReady: () => true, canSkip: () => false },
    actors: { fetcher: fromPromise(async () => "ok") },
    delays: { slow: 5_000 },
  }).createMachine({
    id: "fixture",
    initial: "idle",
    states: {
      idle: {
        description: "Waiting for START",
        on: { START: { target: "loading", guard: "isReady", actions: "log" }, PING: { actions: "log" } },
        always: { target: "done", guard: and(["canSkip", not("isReady")]) },
      },
      loading: {
        invoke: { id: "fetch", src: "fetcher", onDone: "active", onError: "idle" },
        after: { 1000: "idle", slow: { target: "idle", guard: "isReady" } },
      },
      active: {
        type: "parallel",
        on: { STOP: "done" },
        states: {
          left: { initial: "x", states: { x: { on: { NEXT: "y" } }, y: {} } },
          right: { initial: "x", states: { x: { on: { NEXT: "finished" } }, finished: { type: "final" } } },
        },
      },
      done: { type: "final" },
    },
  });
}

describe("toMermaid", () => {
  const lines = toMermaid(makeFixture())
    .split("\n")
    .map((line) => line.trim());

  it("starts with the diagram header and marks initial and final states", () => {
    expect(lines[0]).toBe("stateDiagram-v2");
    expect(lines).toContain("[*] --> idle");
    expect(lines).toContain("done --> [*]");
    expect(lines).toContain("active__right__finished --> [*]");
  });

  it("nests compound states and separates parallel regions", () => {
    expect(lines).toContain("state active {");
    expect(lines).toContain("state active__left {");
    expect(lines).toContain("[*] --> active__left__x");
    expect(lines).toContain("--");
    // Same key `x` in both regions gets distinct, path-based ids with the key as label.
    expect(lines).toContain('state "x" as active__left__x');
    expect(lines).toContain('state "x" as active__right__x');
  });

  it("labels every kind of transition", () => {
    expect(lines).toContain("idle --> loading : START [isReady]");
    expect(lines).toContain("idle --> idle : PING");
    expect(lines).toContain("idle --> done : always [and(canSkip, not(isReady))]");
    expect(lines).toContain("loading --> idle : after 1000ms");
    expect(lines).toContain("loading --> idle : after slow [isReady]");
    // `:` is written as the entity #58; because a bare colon would end the Mermaid label.
    expect(lines).toContain("loading --> active : fetch done");
    expect(lines).toContain("loading --> idle : fetch error");
    expect(lines).toContain("active --> done : STOP");
    expect(lines).toContain("active__left__x --> active__left__y : NEXT");
  });

  it("turns descriptions into notes", () => {
    expect(lines).toContain("note right of idle : Waiting for START");
  });

  it("is byte-for-byte deterministic", () => {
    expect(toMermaid(makeFixture())).toBe(toMermaid(makeFixture()));
  });
});

describe("toConfigJson", () => {
  const text = toConfigJson(makeFixture());
  const json = JSON.parse(text);

  it("writes a config with actions, guards, actors and delays by name and targets as keys", () => {
    expect(json.id).toBe("fixture");
    expect(json.initial).toBe("idle");
    expect(json.states.idle.on.START).toEqual([{ target: "loading", guard: "isReady", actions: ["log"] }]);
    expect(json.states.idle.always[0]).toEqual({ target: "done", guard: "and(canSkip, not(isReady))" });
    expect(json.states.loading.invoke).toEqual([
      { id: "fetch", src: "fetcher", onDone: [{ target: "active" }], onError: [{ target: "idle" }] },
    ]);
    expect(json.states.loading.after).toEqual({
      1000: [{ target: "idle" }],
      slow: [{ target: "idle", guard: "isReady" }],
    });
    // The timers `after` creates are not written as entry/exit actions: loading the config recreates them.
    expect(json.states.loading.entry).toBeUndefined();
    expect(json.states.active.type).toBe("parallel");
    expect(json.states.active.states.left.initial).toBe("x");
  });

  it("holds no functions and loads into a machine of the same shape", () => {
    expect(text).not.toMatch(/=>|function/);
    const loaded = createMachine(JSON.parse(text));
    expect(machineShape(loaded)).toEqual(machineShape(makeFixture()));
  });

  it("is pretty-printed and deterministic", () => {
    expect(text.endsWith("}\n")).toBe(true);
    expect(toConfigJson(makeFixture())).toBe(text);
  });
});

describe("drift check", () => {
  it("reports nothing for the real src/machines and visualizations/", async () => {
    const problems = await checkVisualizations(
      path.join(repo, "src/machines"),
      path.join(repo, "visualizations"),
    );
    expect(problems, "visualizations/ is out of date: run `npm run viz`").toEqual([]);
  });

  it("classifies missing, stale and orphaned files", () => {
    const expected = new Map([
      ["a.mmd", "new"],
      ["b.mmd", "same"],
    ]);
    const actual = new Map([
      ["b.mmd", "same"],
      ["c.json", "old"],
    ]);
    expect(diffVisualizations(expected, actual)).toEqual([
      { kind: "missing", file: "a.mmd" },
      { kind: "orphaned", file: "c.json" },
    ]);
    expect(diffVisualizations(new Map([["a.mmd", "new"]]), new Map([["a.mmd", "old"]]))).toEqual([
      { kind: "stale", file: "a.mmd" },
    ]);
  });

  describe("on temp directories", () => {
    // Under the repo (tmp/ is git-ignored) so the machine file can resolve `xstate` from node_modules.
    const sandbox = mkdir(path.join(repo, "tmp"), { recursive: true }).then(() =>
      mkdtemp(path.join(repo, "tmp", "viz-test-")),
    );
    afterAll(async () => rm(await sandbox, { recursive: true, force: true }));

    it("detects and repairs drift end to end", async () => {
      const root = await sandbox;
      const machines = path.join(root, "machines");
      const viz = path.join(root, "visualizations");
      await mkdir(machines);
      await writeFile(
        path.join(machines, "toggle.machine.ts"),
        [
          'import { createMachine } from "xstate";',
          "export const toggle = createMachine({",
          '  id: "toggle",',
          '  initial: "off",',
          '  states: { off: { on: { FLIP: "on" } }, on: { on: { FLIP: "off" } } },',
          "});",
          "export default toggle;",
          "export const notAMachine = 42;",
          "",
        ].join("\n"),
      );
      await writeFile(path.join(machines, "helpers.ts"), "export const ignored = true;\n");

      expect(await checkVisualizations(machines, viz)).toEqual([
        { kind: "missing", file: "toggle.json" },
        { kind: "missing", file: "toggle.mmd" },
      ]);

      await writeVisualizations(machines, viz);
      expect(await checkVisualizations(machines, viz)).toEqual([]);

      await writeFile(path.join(viz, "toggle.mmd"), "stateDiagram-v2\n  hand --> edited\n");
      await writeFile(path.join(viz, "removed-machine.json"), "{}\n");
      await writeFile(path.join(viz, "README.md"), "not generated\n");
      expect(await checkVisualizations(machines, viz)).toEqual([
        { kind: "orphaned", file: "removed-machine.json" },
        { kind: "stale", file: "toggle.mmd" },
      ]);

      expect(await writeVisualizations(machines, viz)).toHaveLength(2);
      expect(await checkVisualizations(machines, viz)).toEqual([]);
    });
  });

  it("refuses two machines that would write the same files", () => {
    const machine = makeFixture();
    const twin = makeFixture();
    expect(() =>
      renderVisualizations([
        { file: "a.machine.ts", exportName: "a", machine },
        { file: "b.machine.ts", exportName: "b", machine: twin },
      ]),
    ).toThrow(/both map to visualizations\/fixture/);
  });
});
