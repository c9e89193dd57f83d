import { expect } from "vitest";
import { createActor, fromPromise } from "xstate";
import {
  type CallModelInput,
  type CallModelOutput,
  type DetectStaleInput,
  type DetectStaleOutput,
  type RunEmitted,
  type RunInput,
  type RunToolInput,
  type RunToolOutput,
  runMachine,
} from "../../src/machines/run.machine.js";
import type { OwnedMessage, TurnItem } from "../../src/policy/turn-context.js";
import { type Deferred, deferred } from "./deferred.js";
import {
  eventLabel,
  type GraphConfig,
  type GraphEvent,
  type Path,
  runInput,
  type Snapshot,
  stateKey,
} from "./run-graph-cases.js";
import { outputViolations, stepViolations } from "./run-invariants.js";

// A path of the run machine's graph replayed on a real actor whose `callModel`, `runTool` and
// `detectStale` are deferreds the test settles, so a graph event becomes a real action: send the event,
// or resolve / reject the pending actor. After every step the real actor must be where the graph says,
// and the invariants (run-invariants.ts) must hold.

/** Lets promise callbacks and the actor's reactions to them run; no timer, no wall-clock wait. */
function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** Replays by run id: the fake actors are provided once and find their replay through their input. */
const replays = new Map<string, Replay>();

const testLogic = runMachine.provide({
  actors: {
    callModel: fromPromise<CallModelOutput, CallModelInput>(({ input }) =>
      replayOf(input.runId).startModel(input),
    ),
    runTool: fromPromise<RunToolOutput, RunToolInput>(({ input }) => replayOf(input.runId).startTool(input)),
    detectStale: fromPromise<DetectStaleOutput, DetectStaleInput>(({ input }) =>
      replayOf(input.runId).startDetect(input),
    ),
  },
});

function replayOf(runId: string): Replay {
  const replay = replays.get(runId);
  if (!replay) throw new Error(`no replay for run ${runId}`);
  return replay;
}

let replayCount = 0;

export class Replay {
  readonly input: RunInput;
  readonly calls: CallModelInput[] = [];
  readonly toolInputs: RunToolInput[] = [];
  readonly detectInputs: DetectStaleInput[] = [];
  readonly emitted: RunEmitted[] = [];
  /** Model calls and emitted events, in order. */
  readonly timeline: Array<{ kind: "call"; input: CallModelInput } | { kind: "emitted"; event: RunEmitted }> =
    [];
  /** What the fake actors stored: an actor stores its items when it succeeds, as one unit. */
  readonly stored: TurnItem[] = [];
  readonly given: OwnedMessage[];
  readonly drafts: string[] = [];
  private model: { input: CallModelInput; result: Deferred<CallModelOutput> } | null = null;
  private tool: { input: RunToolInput; result: Deferred<RunToolOutput> } | null = null;
  private detector: Deferred<DetectStaleOutput> | null = null;
  private steers = 0;
  readonly actor;

  constructor(input: RunInput) {
    replayCount++;
    this.input = { ...input, runId: `run-${replayCount}` };
    replays.set(this.input.runId, this);
    this.given = [...input.messages];
    this.actor = createActor(testLogic, { input: this.input });
    this.actor.on("*", (event) => {
      this.emitted.push(event);
      this.timeline.push({ kind: "emitted", event });
    });
  }

  startModel(input: CallModelInput): Promise<CallModelOutput> {
    const result = deferred<CallModelOutput>();
    this.calls.push(input);
    this.timeline.push({ kind: "call", input });
    this.model = { input, result };
    return result.promise;
  }

  startTool(input: RunToolInput): Promise<RunToolOutput> {
    const result = deferred<RunToolOutput>();
    this.toolInputs.push(input);
    this.tool = { input, result };
    return result.promise;
  }

  startDetect(input: DetectStaleInput): Promise<DetectStaleOutput> {
    const result = deferred<DetectStaleOutput>();
    this.detectInputs.push(input);
    this.detector = result;
    return result.promise;
  }

  async start(): Promise<void> {
    this.actor.start();
    await settle();
  }

  /** The run is over: forget it (its stopped actors' promises never settle). */
  dispose(): void {
    this.actor.stop();
    replays.delete(this.input.runId);
  }

  /** Performs the real action a graph event stands for. */
  async apply(event: GraphEvent): Promise<void> {
    switch (event.type) {
      case "run.abort":
      case "run.stop":
        this.actor.send(event);
        break;
      case "run.steer": {
        this.steers++;
        const message = { ...event.message, id: `s${this.steers}`, at: 10 + this.steers };
        this.given.push(message);
        this.actor.send({ type: "run.steer", message });
        break;
      }
      case "xstate.done.actor.callModel": {
        const pending = this.takeModel();
        const toolCalls = event.output.toolCalls.map((call) => ({
          ...call,
          callId: `${call.callId}-call${pending.input.call}`,
        }));
        if (toolCalls.length === 0) this.drafts.push(event.output.text);
        this.stored.push(...pending.input.unpersisted);
        pending.result.resolve({
          text: event.output.text,
          toolCalls,
          persisted: pending.input.unpersisted.length,
        });
        break;
      }
      case "xstate.error.actor.callModel":
        this.takeModel().result.reject(event.error);
        break;
      case "xstate.done.actor.runTool": {
        const pending = this.takeTool();
        this.stored.push(...pending.input.unpersisted);
        pending.result.resolve({ ...event.output, persisted: pending.input.unpersisted.length });
        break;
      }
      case "xstate.error.actor.runTool":
        this.takeTool().result.reject(event.error);
        break;
      case "xstate.done.actor.detectStale":
        this.takeDetector().resolve(event.output);
        break;
      case "xstate.error.actor.detectStale":
        this.takeDetector().reject(event.error);
        break;
    }
    await settle();
  }

  get snapshot(): Snapshot {
    return this.actor.getSnapshot();
  }

  /** Ids of user messages in each model call's view of this turn, in order. */
  shownPerCall(): string[][] {
    return this.calls.map((call) =>
      call.context
        .slice(call.turnStart)
        .flatMap((message) => (message.role === "user" ? [message.messageId] : [])),
    );
  }

  shown(): Set<string> {
    return new Set(this.shownPerCall().flat());
  }

  private takeModel() {
    const pending = this.model;
    if (!pending) throw new Error("the graph settles a model call, but none is running on the real actor");
    this.model = null;
    return pending;
  }

  private takeDetector() {
    const pending = this.detector;
    if (!pending) throw new Error("the graph settles the detector, but none is running on the real actor");
    this.detector = null;
    return pending;
  }

  private takeTool() {
    const pending = this.tool;
    if (!pending) throw new Error("the graph settles a tool, but none is running on the real actor");
    this.tool = null;
    return pending;
  }
}

export async function replayPath(config: GraphConfig, path: Path): Promise<Replay> {
  const replay = new Replay(runInput(config));
  try {
    await replay.start();
    await followPath(replay, path);
  } finally {
    replay.dispose();
  }
  return replay;
}

async function followPath(replay: Replay, path: Path): Promise<void> {
  const [first, ...rest] = path.steps;
  expect(first).toBeDefined();
  expect(stateKey(replay.snapshot)).toBe(stateKey(first!.state));
  expect(stepViolations(replay, 0)).toEqual([]);
  for (const [index, step] of rest.entries()) {
    const passes = replay.snapshot.context.passes;
    await replay.apply(step.event);
    const where = `step ${index + 1} (${eventLabel(step.event)})`;
    const problems = stepViolations(replay, passes);
    if (stateKey(replay.snapshot) !== stateKey(step.state)) {
      problems.unshift(
        `the actor is in ${stateKey(replay.snapshot)}, the graph says ${stateKey(step.state)}`,
      );
    }
    expect(problems, where).toEqual([]);
  }
  if (replay.snapshot.status === "done") expect(outputViolations(replay, path), "the output").toEqual([]);
  else expect(replay.snapshot.status).toBe("active");
}

export function recheckEventsOf(replay: Replay) {
  return replay.emitted.filter((event) => event.type === "recheck.fired" || event.type === "recheck.skipped");
}
