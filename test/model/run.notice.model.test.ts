import { describe, expect, it } from "vitest";
import { createActor, fromPromise, type SnapshotFrom } from "xstate";
import { getShortestPaths, getSimplePaths, type StatePath } from "xstate/graph";
import { parseConfig } from "../../src/config.js";
import type {
  CallModelInput,
  CallModelOutput,
  RunEmitted,
  RunInput,
  RunOutput,
  RunToolInput,
  RunToolOutput,
} from "../../src/machines/run.machine.js";
import { SUPERSEDED } from "../../src/machines/run.setup.js";
import type { OwnedMessage } from "../../src/policy/turn-context.js";
import {
  isPossibleRunEvent,
  RUN_GRAPH_TEXTS,
  type RunGraphEvent,
  runGraphEvents,
  runGraphInput,
  runMachine,
  runStateKey,
} from "../../src/testing/run-graph.js";
import { type Deferred, deferred } from "../support/deferred.js";

// Graph paths of a background turn (a cron turn) that is shown typed messages waiting for their own
// turn (`run.notice`) and that may end "superseded": xstate/graph enumerates every path with a notice
// or a steering message over the run's events, and each path is replayed on the real actor (its model
// and tools are deferreds the test settles), checking after every step and at the end that no reply
// ignores a user message it was given and that nothing given to the turn is lost.

type Snapshot = SnapshotFrom<typeof runMachine>;
type GraphEvent = RunGraphEvent;
type Path = StatePath<Snapshot, GraphEvent>;

const NOTICE_TEXT = "what is the deploy command?";

/** A cron turn, under the re-check settings of `recheck`. */
function cronInput(recheck: { maxPasses: number; enabled?: boolean }): RunInput {
  const base = runGraphInput(
    parseConfig({ staleReplyRecheck: { maxPasses: recheck.maxPasses, enabled: recheck.enabled ?? true } }),
  );
  return {
    ...base,
    runId: "cron-run",
    messages: [{ id: "c1", text: "Send the daily digest", channel: "web", at: 0, trigger: "cron" }],
  };
}

/** The run graph's events (steer, abort, /stop, model and tool results) plus a notice. */
function events(): GraphEvent[] {
  return [
    { type: "run.notice", message: { id: "n", text: NOTICE_TEXT, channel: "web", at: 5 } },
    ...runGraphEvents(),
  ];
}

/** The run graph's state key, plus what a notice and a superseded ending change. */
function stateKey(snapshot: Snapshot): string {
  const { context } = snapshot;
  return JSON.stringify([
    runStateKey(snapshot),
    context.noticeBuffer.length > 0,
    context.noticed.length > 0,
    context.owned.length,
    context.abortReason,
  ]);
}

function isPossible(snapshot: Snapshot, event: GraphEvent): boolean {
  if (!isPossibleRunEvent(snapshot, event)) return false;
  // One notice and one steering message per path keep the graph finite and every path readable.
  if (event.type === "run.notice")
    return snapshot.context.noticeBuffer.length + snapshot.context.noticed.length === 0;
  if (event.type === "run.steer")
    return !snapshot.context.steerBuffer.length && snapshot.context.owned.length === 1;
  return true;
}

function paths(input: RunInput, kind: "shortest" | "simple"): Path[] {
  const options = {
    input,
    events: events() as never,
    serializeState: stateKey,
    filterEvents: (snapshot: Snapshot, event: GraphEvent) => isPossible(snapshot, event),
    limit: 5_000,
  };
  const found = (kind === "shortest" ? getShortestPaths : getSimplePaths)(runMachine, options as never);
  // Only the paths on which a user message reaches the turn, and of simple paths only the complete
  // ones: a path that is the start of a longer one has every step checked on the longer one.
  const withUser = (found as unknown as Path[]).filter((path) =>
    path.steps.some((step) => step.event.type === "run.notice" || step.event.type === "run.steer"),
  );
  if (kind === "shortest") return withUser;
  const keys = withUser.map((path) => path.steps.map((step) => JSON.stringify(step.event)));
  const prefixes = new Set<string>();
  for (const key of keys) for (let n = 1; n < key.length; n++) prefixes.add(key.slice(0, n).join("\n"));
  return withUser.filter((_, i) => !prefixes.has(keys[i]!.join("\n")));
}

// ---------------------------------------------------------------------------------------------------
// Replay on the real actor

const settle = () => new Promise<void>((resolve) => setImmediate(resolve));
const replays = new Map<string, Replay>();
const logic = runMachine.provide({
  actors: {
    callModel: fromPromise<CallModelOutput, CallModelInput>(({ input }) =>
      replays.get(input.runId)!.model(input),
    ),
    runTool: fromPromise<RunToolOutput, RunToolInput>(({ input }) => replays.get(input.runId)!.tool(input)),
  },
});
let count = 0;

class Replay {
  readonly input: RunInput;
  readonly actor;
  readonly calls: CallModelInput[] = [];
  readonly emitted: RunEmitted[] = [];
  readonly given: OwnedMessage[] = [];
  /** The model call each delivered-candidate draft came from. */
  readonly drafts: Array<{ call: CallModelInput; text: string }> = [];
  private pendingModel: { input: CallModelInput; result: Deferred<CallModelOutput> } | null = null;
  private pendingTool: Deferred<RunToolOutput> | null = null;

  constructor(input: RunInput) {
    this.input = { ...input, runId: `cron-run-${++count}` };
    replays.set(this.input.runId, this);
    this.actor = createActor(logic, { input: this.input });
    this.actor.on("*", (event) => this.emitted.push(event));
  }

  model(input: CallModelInput): Promise<CallModelOutput> {
    const result = deferred<CallModelOutput>();
    this.calls.push(input);
    this.pendingModel = { input, result };
    return result.promise;
  }

  tool(_input: RunToolInput): Promise<RunToolOutput> {
    this.pendingTool = deferred<RunToolOutput>();
    return this.pendingTool.promise;
  }

  async apply(event: GraphEvent): Promise<void> {
    switch (event.type) {
      case "run.notice":
      case "run.steer": {
        const message = {
          ...event.message,
          id: `${event.type === "run.notice" ? "n" : "s"}${this.given.length + 1}`,
        };
        this.given.push(message);
        this.actor.send({ ...event, message });
        break;
      }
      case "xstate.done.actor.callModel": {
        const pending = this.pendingModel!;
        this.pendingModel = null;
        if (event.output.toolCalls.length === 0)
          this.drafts.push({ call: pending.input, text: event.output.text });
        pending.result.resolve({ ...event.output, persisted: pending.input.unpersisted.length });
        break;
      }
      case "xstate.error.actor.callModel":
        this.pendingModel!.result.reject(event.error);
        this.pendingModel = null;
        break;
      case "xstate.done.actor.runTool":
        this.pendingTool!.resolve({ ...event.output, persisted: 0 });
        this.pendingTool = null;
        break;
      case "xstate.error.actor.runTool":
        this.pendingTool!.reject(event.error);
        this.pendingTool = null;
        break;
      default:
        this.actor.send(event);
    }
    await settle();
  }

  dispose(): void {
    this.actor.stop();
    replays.delete(this.input.runId);
  }
}

/** Whether a model call's context shows a given message's text (as a user message or a notice). */
function saw(call: CallModelInput, message: OwnedMessage): boolean {
  return JSON.stringify(call.context.slice(call.turnStart)).includes(message.text);
}

/** Replays `path` and returns every broken rule (empty: all held). */
async function replay(path: Path, input: RunInput): Promise<{ problems: string[]; output?: RunOutput }> {
  const run = new Replay(input);
  const problems: string[] = [];
  try {
    run.actor.start();
    await settle();
    for (const step of path.steps.slice(1)) {
      await run.apply(step.event);
      const snapshot = run.actor.getSnapshot();
      if (JSON.stringify(snapshot.value) !== JSON.stringify(step.state.value))
        problems.push(
          `after ${step.event.type}: real ${JSON.stringify(snapshot.value)}, graph ${JSON.stringify(step.state.value)}`,
        );
      const { context } = snapshot;
      // A notice is shown, never owned: its own turn answers it.
      for (const message of run.given.filter((m) => m.id.startsWith("n"))) {
        const places = [context.noticed, context.noticeBuffer].filter((list) =>
          list.some((m) => m.id === message.id),
        );
        if (places.length !== 1) problems.push(`notice ${message.id} is in ${places.length} places`);
        if (context.owned.some((m) => m.id === message.id)) problems.push(`notice ${message.id} is owned`);
      }
    }
    const snapshot = run.actor.getSnapshot();
    if (snapshot.status !== "done") return { problems };
    const output = snapshot.output as RunOutput;
    if (output.status === "done") {
      // The reply that ships was drafted by a call that saw every user message given to the turn.
      const last = run.drafts.at(-1);
      if (!last) problems.push("done without a draft");
      for (const message of run.given)
        if (last && !saw(last.call, message)) problems.push(`the final ignores ${message.id}`);
      if (output.final !== last?.text) problems.push("the final is not the last draft");
    }
    if (output.abortReason === SUPERSEDED) {
      if (output.final !== "") problems.push("a superseded turn has a final");
      const skipped = run.emitted.filter((e) => e.type === "recheck.skipped");
      if (skipped.length !== 1) problems.push(`superseded with ${skipped.length} recheck.skipped events`);
      // The steered messages it held go back to the session for a turn of their own; the task does not.
      const typed = run.given.filter((m) => m.id.startsWith("s")).map((m) => m.id);
      if (JSON.stringify(output.leftover.map((m) => m.id).sort()) !== JSON.stringify(typed.sort()))
        problems.push(`leftover ${output.leftover.map((m) => m.id)} is not the steered ${typed}`);
      if (output.answered.some((id) => id !== "c1")) problems.push(`it answers ${output.answered}`);
    }
    return { problems, output };
  } finally {
    run.dispose();
  }
}

function pathName(path: Path): string {
  return path.steps
    .slice(1)
    .map((step) => step.event.type.replace("xstate.", ""))
    .join(" → ");
}

describe.each([
  { title: "maxPasses 1", recheck: { maxPasses: 1 }, kind: "shortest" as const },
  { title: "maxPasses 0", recheck: { maxPasses: 0 }, kind: "simple" as const },
  { title: "the re-check disabled", recheck: { maxPasses: 1, enabled: false }, kind: "shortest" as const },
])("a cron turn's paths with a notice or a steering message, $title", ({ recheck, kind }) => {
  const input = cronInput(recheck);
  let cached: Path[] | undefined;
  const found = () => {
    cached ??= paths(input, kind);
    return cached;
  };

  it("replays every path on the real actor with no rule broken", async () => {
    expect(found().length).toBeGreaterThan(10);
    const failures: string[] = [];
    for (const path of found()) {
      const { problems } = await replay(path, input);
      if (problems.length > 0) failures.push(`${pathName(path)}: ${problems.join("; ")}`);
    }
    expect(failures).toEqual([]);
  }, 120_000);

  it("reaches the endings the rule names", async () => {
    const endings = new Set<string>();
    for (const path of found()) {
      const last = path.steps.at(-1)!.state;
      if (last.status !== "done") continue;
      const output = last.output as RunOutput;
      endings.add(output.abortReason === SUPERSEDED ? "superseded" : output.status);
    }
    const noticeThenRecheck = found().some((path) =>
      path.steps.some(
        (step, i) =>
          step.state.context.passes > 0 && path.steps.slice(0, i).some((s) => s.event.type === "run.notice"),
      ),
    );
    if (recheck.maxPasses > 0 && recheck.enabled !== false) {
      // A notice makes the first draft stale; the re-draft sees it and ships.
      expect(noticeThenRecheck).toBe(true);
      expect([...endings]).toEqual(expect.arrayContaining(["done", "aborted", "failed"]));
    } else {
      // Out of passes: a draft that missed a user message never ships.
      expect(noticeThenRecheck).toBe(false);
      expect([...endings]).toEqual(expect.arrayContaining(["superseded", "done", "aborted", "failed"]));
    }
  });
});

describe("a superseded cron turn", () => {
  it("never delivers its draft and hands a steered message back, on a path the graph found", async () => {
    const input = cronInput({ maxPasses: 0 });
    const path = paths(input, "shortest").find(
      (p) =>
        (p.steps.at(-1)!.state.output as RunOutput | undefined)?.abortReason === SUPERSEDED &&
        p.steps.some((s) => s.event.type === "run.steer"),
    );
    expect(path, "a path that steers and ends superseded").toBeDefined();
    const { problems, output } = await replay(path!, input);
    expect(problems).toEqual([]);
    expect(output).toMatchObject({ status: "aborted", final: "", abortReason: SUPERSEDED });
    expect(output!.leftover.map((m) => m.text)).toEqual([RUN_GRAPH_TEXTS.steer]);
  });
});
