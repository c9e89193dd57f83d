import { describe, expect, it } from "vitest";
import { runMachine } from "../../src/machines/run.machine.js";
import { sessionMachine } from "../../src/machines/session.machine.js";
import { toMachineConfig } from "../../src/viz/machine-config.js";
import { activeStates, machineGraph, type StateConfig, takenEdges } from "../../web/src/machine-graph.js";

// The page draws the configs the server serves (the same JSON as visualizations/*.json).
const run = machineGraph(toMachineConfig(runMachine) as StateConfig);
const session = machineGraph(toMachineConfig(sessionMachine) as StateConfig);

describe("machineGraph", () => {
  it("nests states inside their parents and starts at the machine's initial state", () => {
    expect(run.roots).toEqual([
      "run.streaming",
      "run.toolBatch",
      "run.finalizing",
      "run.recheck",
      "run.done",
      "run.aborted",
      "run.failed",
    ]);
    expect(run.states.get("run.toolBatch")!.children).toEqual([
      "run.toolBatch.nextTool",
      "run.toolBatch.toolRunning",
    ]);
    expect(run.states.get("run.toolBatch.toolRunning.working")!.parent).toBe("run.toolBatch.toolRunning");
    expect(run.initial).toBe("run.streaming");
    expect(session.initial).toBe("session.next");
    expect(run.states.get("run.streaming")!.invokes).toEqual(["callModel"]);
  });

  it("joins the transitions between two states into one edge, and lists the others apart", () => {
    const streamingToTools = run.edges.find(
      (e) => e.source === "run.streaming" && e.target === "run.toolBatch",
    )!;
    expect(streamingToTools.labels).toEqual(["callModel done [hasToolCalls]"]);
    const toAborted = run.edges.find((e) => e.source === "run.streaming" && e.target === "run.aborted")!;
    expect(toAborted.labels).toEqual(["run.abort", "run.stop"]);
    // An edge out of a nested state keeps its real ends.
    expect(run.edges.some((e) => e.source === "run.toolBatch.nextTool" && e.target === "run.streaming")).toBe(
      true,
    );
    expect(session.notes).toContain("any state: session.new → resetting");
    expect(run.notes).toContain("any state: run.steer");
  });
});

describe("activeStates and takenEdges", () => {
  it("names every state of a nested value, outermost first", () => {
    expect(activeStates("run", { toolBatch: { toolRunning: "working" } })).toEqual([
      "run.toolBatch",
      "run.toolBatch.toolRunning",
      "run.toolBatch.toolRunning.working",
    ]);
  });

  it("finds the edges a step took, through a state that only lasted a moment", () => {
    const ends = (from: unknown, to: unknown, graph = run) =>
      takenEdges(graph, from, to).map((edge) => `${edge.source} -> ${edge.target}`);
    expect(ends("streaming", { toolBatch: { toolRunning: "working" } })).toEqual([
      "run.streaming -> run.toolBatch",
    ]);
    // toolRunning → nextTool → streaming happens in one step: nextTool never shows in a snapshot.
    expect(ends({ toolBatch: { toolRunning: "working" } }, "streaming")).toEqual([
      "run.toolBatch.toolRunning -> run.toolBatch.nextTool",
      "run.toolBatch.nextTool -> run.streaming",
    ]);
    expect(ends({ turn: "delivering" }, "idle", session)).toEqual([
      "session.turn.delivering -> session.next",
      "session.next -> session.idle",
    ]);
    expect(ends({ turn: "running" }, { turn: "delivering" }, session)).toEqual([
      "session.turn.running -> session.turn.delivering",
    ]);
    expect(ends("done", "idle")).toEqual([]);
  });
});
