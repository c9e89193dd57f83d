import { describe, expect, it } from "vitest";
import {
  type AnyActorRef,
  assign,
  createActor,
  fromCallback,
  fromPromise,
  type SnapshotFrom,
  setup,
} from "xstate";
import { getAdjacencyMap, getShortestPaths, getSimplePaths } from "xstate/graph";
import { SimulatedClock } from "../../src/adapters/simulated-clock.js";
import type { RunEvent, RunInput, RunOutput, runMachine } from "../../src/machines/run.machine.js";
import { sessionMachine } from "../../src/machines/session.machine.js";
import type {
  DeliverInput,
  DeliverOutput,
  PendingTurn,
  SessionEvent,
} from "../../src/machines/session.types.js";
import { failedOutput } from "../../src/machines/session-context.js";
import type { DropPolicy, QueueMode, ResolvedQueueSetting } from "../../src/policy/queue-mode.js";
import type { OwnedMessage } from "../../src/policy/turn-context.js";

// Model-based tests of the session machine (docs/architecture.md, "Testing"). xstate/graph walks the
// machine over an explicit event list (inbound messages in every mode, controls, lane answers, and the
// done/error results of every invoked actor, plus the collect window's delayed event); every path is
// replayed on a real actor whose invoked actors are fakes under the test's control, and after every step
// the invariants of docs/architecture.md are checked: at most one run (1), every message accounted for exactly once
// (5), and every decision states what actually happened (12).

// ---------------------------------------------------------------------------------------------------
// Events of the traversal

const DEBOUNCE_MS = 500;

function setting(mode: QueueMode, cap = 20, drop: DropPolicy = "summarize"): ResolvedQueueSetting {
  return { mode, modeSource: "inline", debounceMs: DEBOUNCE_MS, cap, drop };
}

function graphMessage(
  label: string,
  mode: QueueMode,
  channel = "telegram",
  cap = 20,
  drop: DropPolicy = "summarize",
) {
  return {
    type: "session.message" as const,
    message: { id: `g-${label}`, text: label, channel, at: 0 },
    setting: setting(mode, cap, drop),
  };
}

const GRAPH_RUN_INPUT: RunInput = runInputFor({
  session: "s",
  runId: "s#g",
  pending: { kind: "turn", messages: [], summaries: [] },
});

const GRAPH_RUN_OUTPUT: RunOutput = {
  ...failedOutput("s#g", ""),
  status: "done",
  final: "answer",
  error: null,
};

const COLLECT_WINDOW = "xstate.after.collectWindow.session.collecting";

type GraphEvent =
  | SessionEvent
  | { type: "xstate.done.actor.run"; output: RunOutput }
  | { type: "xstate.error.actor.run"; error: string }
  | { type: "xstate.done.actor.deliver"; output: DeliverOutput }
  | { type: "xstate.error.actor.deliver"; error: string }
  | { type: "xstate.done.actor.resetTranscript"; output: undefined }
  | { type: "xstate.error.actor.resetTranscript"; error: string }
  | { type: typeof COLLECT_WINDOW };

/** A message from a named sender (the other messages are the anonymous user's), optionally with steering across senders on. */
function senderMessage(label: string, id: string, across = false) {
  const event = graphMessage(label, "steer");
  return {
    ...event,
    message: { ...event.message, sender: { id } },
    setting: across ? { ...event.setting, steerAcrossSenders: true as const } : event.setting,
  };
}

// Same sender and other sender while a turn runs: bob's steer, and bob's steer with steering across
// senders allowed (the anonymous steer above is then the other sender's, in a turn bob owns).
const SENDER_EVENTS = [senderMessage("bob", "bob"), senderMessage("bob-across", "bob", true)];

const MESSAGE_EVENTS = [
  graphMessage("steer", "steer"),
  graphMessage("followup", "followup"),
  graphMessage("collect", "collect"),
  graphMessage("collect-web", "collect", "web"),
  graphMessage("interrupt", "interrupt"),
];
const CAP_EVENTS = [
  graphMessage("cap-new", "followup", "telegram", 1, "new"),
  graphMessage("cap-old", "followup", "telegram", 1, "old"),
  graphMessage("cap-summarize", "followup", "telegram", 1, "summarize"),
];
const CONTROL_EVENTS: GraphEvent[] = [
  { type: "session.stop" },
  { type: "session.new" },
  { type: "session.resume" },
];
const LANE_EVENTS: GraphEvent[] = [
  { type: "lane.granted", runId: "s#g", input: GRAPH_RUN_INPUT },
  { type: "turn.prepareFailed", error: "store unavailable" },
  { type: "lane.rejected", reason: "lane cleared" },
  { type: "lane.timeout" },
];
const ACTOR_EVENTS: GraphEvent[] = [
  { type: "xstate.done.actor.run", output: GRAPH_RUN_OUTPUT },
  { type: "xstate.error.actor.run", error: "run crashed" },
  { type: "xstate.done.actor.deliver", output: { delivered: true, recovery: null } },
  {
    type: "xstate.done.actor.deliver",
    output: {
      delivered: false,
      recovery: {
        kind: "recovery",
        text: "a stranded final",
        strandedRunId: "s#g",
        deliveryMode: "automatic",
      },
    },
  },
  {
    type: "xstate.done.actor.deliver",
    output: {
      delivered: false,
      recovery: {
        kind: "recovery",
        text: "a stranded final",
        strandedRunId: "s#g",
        deliveryMode: "message_tool_only",
      },
    },
  },
  { type: "xstate.error.actor.deliver", error: "channel down" },
  { type: "xstate.done.actor.resetTranscript", output: undefined },
  { type: "xstate.error.actor.resetTranscript", error: "store unavailable" },
  { type: COLLECT_WINDOW },
];

type Snapshot = SnapshotFrom<typeof sessionMachine>;

/** Offers an event only where the real world could produce it: actor results only while the actor lives. */
function possible(snapshot: Snapshot, event: GraphEvent): boolean {
  const children = snapshot.children as Record<string, unknown>;
  const actorResult = /^xstate\.(done|error)\.actor\.(.+)$/.exec(event.type);
  if (actorResult) return children[actorResult[2]!] !== undefined;
  if (event.type === "lane.granted" || event.type === "lane.rejected" || event.type === "turn.prepareFailed")
    return snapshot.matches({ turn: "waitingForLane" });
  if (event.type === "lane.timeout")
    return children.laneSlot !== undefined && !snapshot.matches({ turn: "waitingForLane" });
  if (event.type === COLLECT_WINDOW) return snapshot.matches("collecting");
  if (event.type === "session.message") {
    // Narrow the alphabet where it adds states but no new behaviour: the cap only matters while a turn
    // runs, a second channel only next to a burst of the first.
    if (event.setting.cap < 20) return snapshot.matches({ turn: "running" });
    // A named sender's message matters next to a turn (or a queue) someone else may own.
    if (event.message.sender) return snapshot.matches("turn");
    if (event.message.channel !== "telegram") {
      return snapshot.context.queue.some((item) => item.kind === "collect" && item.channel === "telegram");
    }
  }
  return true;
}

/**
 * State value plus the bounded facts the guards read or a bug could hide in: the queue's head kind and
 * length (capped at 2), the pending turn's kind and message count (capped at 2, kept after the turn
 * ends), how many messages the live run was started with (capped at 2) and whether summaries wait.
 * Message ids, run ids and counters are left out.
 */
function serialize(snapshot: Snapshot): string {
  const { context } = snapshot;
  const head = context.queue[0];
  const pending = context.pending;
  const run = (snapshot.children as Record<string, AnyActorRef | undefined>).run?.getSnapshot() as
    | FakeRunSnapshot
    | undefined;
  return JSON.stringify({
    value: snapshot.value,
    head:
      head?.kind === "collect"
        ? `collect:${head.channel}`
        : head?.kind === "recovery"
          ? `recovery:${head.deliveryMode}`
          : (head?.kind ?? null),
    length: Math.min(context.queue.length, 2),
    pending: pending
      ? `${pending.recovery?.deliveryMode ?? pending.kind}:${Math.min(pending.messages.length, 2)}`
      : null,
    run: run ? Math.min(run.context.input.messages.length, 2) : null,
    // Who owns the pending turn and the queue's head (the guards compare senders).
    owners: pending ? unique(pending.messages.map((message) => message.sender?.id ?? "-")).join(",") : null,
    headOwner: head && head.kind !== "recovery" ? (head.messages[0]?.sender?.id ?? "-") : null,
    summaries: context.summaries.length > 0,
  });
}

/** The lane slot is granted with the run input for the turn that asked, as the real one prepares it. */
function concrete(snapshot: Snapshot, event: GraphEvent): GraphEvent {
  if (event.type !== "lane.granted") return event;
  const slot = (snapshot.children as Record<string, AnyActorRef | undefined>).laneSlot;
  const input = slot?.getSnapshot().input as { session: string; pending: PendingTurn } | undefined;
  return input ? { ...event, input: runInputFor({ ...input, runId: event.runId ?? "s#g" }) } : event;
}

function describeEvent(event: GraphEvent): string {
  if (event.type === "session.message") {
    const { mode, cap, drop } = event.setting;
    const where = event.message.channel === "telegram" ? "" : `@${event.message.channel}`;
    const from = event.message.sender
      ? ` from ${event.message.sender.id}${event.setting.steerAcrossSenders ? " across" : ""}`
      : "";
    return `message(${mode}${where}${cap < 20 ? ` cap ${cap} drop ${drop}` : ""}${from})`;
  }
  if (event.type === "xstate.done.actor.deliver") {
    const { recovery } = event.output;
    return recovery ? `deliver.stranded(${recovery.deliveryMode})` : "deliver.done";
  }
  if (event.type === COLLECT_WINDOW) return "collect window elapses";
  return event.type.replace(/^xstate\.(done|error)\.actor\.(.+)$/, "$2.$1");
}

function describeState(snapshot: Snapshot): string {
  const value =
    typeof snapshot.value === "string" ? snapshot.value : `turn.${String(Object.values(snapshot.value)[0])}`;
  const queue = snapshot.context.queue.map((item) => item.kind).join(",");
  return queue ? `${value} [${queue}]` : value;
}

// ---------------------------------------------------------------------------------------------------
// Fakes under the test's control

interface Deferred<TInput, TOutput> {
  input: TInput;
  resolve(value: TOutput): void;
  reject(error: unknown): void;
}

type FakeRunEvent = RunEvent | { type: "fake.finish" } | { type: "fake.crash" };

interface FakeRunContext {
  input: RunInput;
  steered: OwnedMessage[];
  aborts: string[];
}

/** Stands in for the run: records what the session sends it and ends when the test says so. */
const fakeRun = setup({
  types: {} as { input: RunInput; context: FakeRunContext; events: FakeRunEvent; output: RunOutput },
}).createMachine({
  id: "fakeRun",
  context: ({ input }) => ({ input, steered: [], aborts: [] }),
  initial: "working",
  states: {
    working: {
      on: {
        "run.steer": {
          actions: assign({ steered: ({ context, event }) => [...context.steered, event.message] }),
        },
        "run.abort": {
          actions: assign({ aborts: ({ context, event }) => [...context.aborts, event.reason] }),
        },
        // The real run also drops the steering it holds back; this one holds none.
        "run.stop": {
          actions: assign({ aborts: ({ context, event }) => [...context.aborts, event.reason] }),
        },
        "fake.finish": { target: "finished" },
        "fake.crash": {
          actions: () => {
            throw new Error("the run crashed");
          },
        },
      },
    },
    finished: { type: "final" },
  },
  output: ({ context }) => {
    const aborted = context.aborts.length > 0;
    return {
      ...GRAPH_RUN_OUTPUT,
      runId: context.input.runId,
      status: aborted ? "aborted" : "done",
      final: aborted ? "" : "answer",
      answered: [...context.input.messages, ...context.steered].map((message) => message.id),
      abortReason: context.aborts[0] ?? null,
    };
  },
});

function runInputFor(input: { session: string; runId: string; pending: PendingTurn }): RunInput {
  return {
    runId: input.runId,
    session: input.session,
    kind: input.pending.kind,
    messages: input.pending.messages,
    preamble: [],
    history: [],
    olderUserTexts: [],
    recheck: { enabled: false, maxPasses: 0, minOverlap: 0, complaintPatterns: [] },
    tools: [],
    cancellableTools: [],
    autoStart: true,
  };
}

// ---------------------------------------------------------------------------------------------------
// The harness: a real session actor, the ledger of every message sent to it, and the invariants

interface FakeRunSnapshot {
  status: string;
  context: FakeRunContext;
}

/** The actor calls of the harness being replayed; the fakes below report to it. */
let calls = new Map<string, Deferred<unknown, unknown>>();

function controlled<TOutput, TInput>(name: string) {
  return fromPromise<TOutput, TInput>(
    ({ input }) =>
      new Promise<TOutput>((resolve, reject) => {
        calls.set(name, { input, resolve: resolve as (value: unknown) => void, reject });
      }),
  );
}

const provided = sessionMachine.provide({
  actors: {
    run: fakeRun as unknown as typeof runMachine,
    laneSlot: fromCallback<SessionEvent, { session: string; pending: PendingTurn }>(() => () => {}),
    deliver: controlled<DeliverOutput, DeliverInput>("deliver"),
    resetTranscript: controlled<void, { session: string }>("resetTranscript"),
  },
});

class Harness {
  readonly clock = new SimulatedClock();
  readonly calls = new Map<string, Deferred<unknown, unknown>>();
  readonly runs: AnyActorRef[] = [];
  readonly sent: Array<{ id: string; mode: QueueMode; channel: string; sender?: string; across?: boolean }> =
    [];
  readonly dropped = new Map<string, number>();
  readonly rejected = new Set<string>();
  readonly handled = new Set<string>();
  /** Messages a /stop ended with their turn: the stop's ack covers them; they must never run again. */
  readonly stopped = new Map<string, AnyActorRef | null>();
  readonly actor;
  private counter = 0;
  /** The run of the current turn, kept after it ends so `delivering` still knows what it owned. */
  private turnRun: AnyActorRef | null = null;

  constructor() {
    calls = this.calls;
    this.actor = createActor(provided, {
      input: { key: "s" },
      clock: this.clock,
      inspect: (event) => {
        const ref = event.actorRef as AnyActorRef;
        if (event.type === "@xstate.actor" && ref.id === "run") this.runs.push(ref);
      },
    });
    this.actor.on("message.dropped", (event) => {
      this.dropped.set(event.messageId, (this.dropped.get(event.messageId) ?? 0) + 1);
    });
    this.actor.start();
  }

  get snapshot(): Snapshot {
    return this.actor.getSnapshot();
  }

  get run(): AnyActorRef | undefined {
    return (this.snapshot.children as Record<string, AnyActorRef | undefined>).run;
  }

  runSnapshot(ref: AnyActorRef | null | undefined): FakeRunSnapshot | undefined {
    return ref ? (ref.getSnapshot() as FakeRunSnapshot) : undefined;
  }

  /** Message ids the current turn owns: its pending messages before the run starts, the run's after. */
  turnOwned(): string[] {
    const snapshot = this.snapshot;
    if (!snapshot.matches("turn")) return [];
    const run = this.runSnapshot(this.turnRun);
    if (run && (snapshot.matches({ turn: "running" }) || snapshot.matches({ turn: "delivering" }))) {
      return unique([...run.context.input.messages, ...run.context.steered].map((message) => message.id));
    }
    return (snapshot.context.pending?.messages ?? []).map((message) => message.id);
  }

  queued(): string[] {
    return this.snapshot.context.queue.flatMap((item) =>
      item.kind === "recovery" ? [] : item.messages.map((message) => message.id),
    );
  }

  async step(event: GraphEvent): Promise<void> {
    const before = this.snapshot;
    const ownedBefore = this.turnOwned();
    if (event.type === "session.stop" && before.matches({ turn: "running" })) {
      for (const id of ownedBefore) this.stopped.set(id, this.turnRun);
    }
    if (event.type === "session.message") this.sendMessage(event);
    else if (event.type === COLLECT_WINDOW) await this.clock.advance(before.context.collectDebounceMs);
    else if (event.type.startsWith("xstate.")) {
      this.settle(event);
      await flush();
    } else this.actor.send(event as SessionEvent);
    const after = this.snapshot;
    if (after.matches({ turn: "running" })) this.turnRun = this.run ?? null;
    else if (!after.matches({ turn: "delivering" })) this.turnRun = null;
    if (event.type === "xstate.done.actor.deliver" || event.type === "xstate.error.actor.deliver") {
      // The turn is over: what it owned and did not hand back to the queue was answered by it.
      const live = new Set([...this.queued(), ...this.turnOwned()]);
      for (const id of ownedBefore) if (!live.has(id)) this.handled.add(id);
    }
  }

  private sendMessage(event: Extract<GraphEvent, { type: "session.message" }>): void {
    this.counter++;
    const message: OwnedMessage = {
      id: `m${this.counter}`,
      text: `message ${this.counter} (${event.setting.mode})`,
      channel: event.message.channel,
      at: this.clock.now(),
      ...(event.message.sender ? { sender: event.message.sender } : {}),
    };
    this.sent.push({
      id: message.id,
      mode: event.setting.mode,
      channel: message.channel,
      ...(message.sender ? { sender: message.sender.id } : {}),
      ...(event.setting.steerAcrossSenders ? { across: true } : {}),
    });
    this.actor.send({ type: "session.message", message, setting: event.setting });
  }

  private settle(event: GraphEvent): void {
    const [, outcome, id] = /^xstate\.(done|error)\.actor\.(.+)$/.exec(event.type) ?? [];
    if (id === "run") {
      this.run?.send({ type: outcome === "done" ? "fake.finish" : "fake.crash" });
      return;
    }
    const call = this.calls.get(id ?? "");
    if (!call) throw new Error(`no ${id} is running`);
    this.calls.delete(id ?? "");
    if (outcome === "error") {
      call.reject(new Error(`${id} failed`));
      return;
    }
    if (id === "deliver") {
      const output = (event as { output: DeliverOutput }).output;
      const runId = (call.input as DeliverInput).output.runId;
      call.resolve(
        output.recovery ? { ...output, recovery: { ...output.recovery, strandedRunId: runId } } : output,
      );
    } else call.resolve(undefined);
  }

  /** Invariants that hold after every step. */
  checkInvariants(): void {
    const snapshot = this.snapshot;
    // 1. At most one active run, and only while the session is in turn.running.
    const active = this.runs.filter((ref) => ref.getSnapshot().status === "active").length;
    ensure(active <= 1, `${active} runs are active at once`);
    ensure(
      active === (snapshot.matches({ turn: "running" }) ? 1 : 0),
      `${active} active run(s) in ${describeState(snapshot)}`,
    );

    // 5. Every message is in exactly one place: queue, the current turn, answered, dropped or rejected.
    const queued = this.queued();
    const owned = new Set(this.turnOwned());
    for (const { id } of this.sent) {
      const places = [
        ...queued.filter((queuedId) => queuedId === id).map(() => "queue"),
        ...(owned.has(id) ? ["turn"] : []),
        ...(this.handled.has(id) ? ["answered"] : []),
        ...Array.from({ length: this.dropped.get(id) ?? 0 }, () => "dropped"),
        ...(this.rejected.has(id) ? ["rejected"] : []),
      ];
      if (this.stopped.has(id)) {
        // Its turn was stopped: it may still be in that turn, answered by it or reported dropped, once.
        ensure(places.length <= 1, `stopped ${id} is in ${places.length} places: [${places.join(", ")}]`);
        ensure(!places.includes("queue"), `stopped ${id} waits to run again`);
        if (places.includes("turn"))
          ensure(this.stopped.get(id) === this.turnRun, `stopped ${id} runs again`);
      } else ensure(places.length === 1, `${id} is in ${places.length} places: [${places.join(", ")}]`);
    }
  }

  /** Invariant 12 for the message just sent: the decision says what happened to it. */
  checkDecision(before: Snapshot, runBefore: FakeRunSnapshot | undefined): void {
    const last = this.sent.at(-1)!;
    const snapshot = this.snapshot;
    const decision = snapshot.context.lastDecision;
    ensure(decision?.messageId === last.id, `no decision for ${last.id}`);
    if (!decision) return;
    const said = `${last.id} (${last.mode}) in ${describeState(before)} was ${decision.disposition}`;
    const queueItem = snapshot.context.queue.find(
      (item) => item.kind !== "recovery" && item.messages.some((message) => message.id === last.id),
    );
    const run = this.runSnapshot(this.run);
    const steeredIntoRun = run?.context.steered.some((message) => message.id === last.id) ?? false;
    const inPending = snapshot.context.pending?.messages.some((message) => message.id === last.id) ?? false;
    for (const id of decision.dropped ?? [])
      ensure(this.dropped.get(id) === 1, `${said}: dropped ${id} unreported`);
    switch (decision.disposition) {
      case "started":
        ensure(before.matches("idle"), `${said}: a turn starts only from idle`);
        ensure(snapshot.matches({ turn: "waitingForLane" }), `${said}: no turn asked for a lane`);
        ensure(
          snapshot.context.pending?.messages.length === 1 && inPending,
          `${said}: the new turn does not own exactly this message`,
        );
        // A newer message never starts a turn ahead of queued work.
        ensure(this.queued().length === 0, `${said} ahead of queued [${this.queued().join(", ")}]`);
        break;
      case "steered":
        ensure(!before.matches({ turn: "delivering" }), `${said}: a delivering turn cannot take it`);
        ensure(before.context.pending?.kind === "turn", `${said}: a recovery turn never answers it`);
        ensure(
          steeredIntoRun || (inPending && !before.matches({ turn: "running" })),
          `${said}: neither the run nor the turn about to start got it`,
        );
        if (steeredIntoRun)
          ensure(decision.runId === snapshot.context.runId, `${said}: names run ${decision.runId}`);
        break;
      case "queued":
        ensure(queueItem?.kind === "followup", `${said}: it is not a follow-up in the queue`);
        break;
      case "collected":
        ensure(
          queueItem?.kind === "collect" && queueItem.channel === last.channel,
          `${said}: it is not in its channel's burst`,
        );
        break;
      case "interrupted":
        // Never "interrupted" unless a run.abort reached the run.
        ensure(runBefore?.status === "active", `${said}: no run was active`);
        ensure(
          (run?.context.aborts ?? []).some((reason) => reason.includes(last.id)),
          `${said}: no run.abort reached the run`,
        );
        ensure(queueItem?.kind === "followup", `${said}: it does not run next`);
        break;
      case "rejected":
        ensure(queueItem === undefined && !inPending, `${said}: but it waits`);
        ensure(Boolean(decision.reason), `${said}: without a reason`);
        this.rejected.add(last.id);
        break;
      case "duplicate":
        throw new Error("the session machine never decides duplicate; the gateway does");
    }
    if (decision.reason?.includes("finalized")) {
      ensure(
        before.matches({ turn: "delivering" }),
        `${said}, "${decision.reason}", but nothing was finalized`,
      );
    }
    // Another sender's message never joins a turn unless steering across senders is on: it waits for
    // a turn of its own, and its decision says why.
    const across = last.across === true;
    const owners = before.context.pending?.kind === "turn" ? before.context.pending.messages : [];
    const foreign = owners.some((message) => message.sender?.id !== last.sender);
    if (!across && foreign && (last.mode === "steer" || last.mode === "interrupt")) {
      ensure(!steeredIntoRun && !inPending, `${said}: it joined another person's turn`);
      if (!before.matches({ turn: "delivering" }))
        ensure(
          decision.disposition === "queued" && decision.reason?.includes("another person's") === true,
          `${said}: not queued as another person's request`,
        );
      return;
    }
    // Without steering across senders a message only ever joins a turn its own sender owns.
    if (!across && (steeredIntoRun || inPending) && decision.disposition !== "started")
      ensure(!foreign, `${said}: it joined another person's turn`);
    // The issue's mode semantics while a user turn runs.
    if (before.matches({ turn: "running" }) && before.context.pending?.kind === "turn") {
      const expected: Record<QueueMode, string[]> = {
        steer: ["steered"],
        followup: ["queued", "rejected"],
        collect: ["collected", "rejected"],
        interrupt: ["interrupted"],
      };
      ensure(expected[last.mode].includes(decision.disposition), `${said} while a turn ran`);
    }
  }
}

function ensure(condition: boolean, message: string): asserts condition {
  if (!condition) throw new Error(message);
}

async function flush(): Promise<void> {
  await new Promise<void>((resolve) => setImmediate(resolve));
}

function unique(values: string[]): string[] {
  return [...new Set(values)];
}

async function replay(steps: ReadonlyArray<{ event: GraphEvent; state: Snapshot }>): Promise<void> {
  const harness = new Harness();
  expect(serialize(harness.snapshot)).toBe(serialize(steps[0]!.state));
  for (const [index, step] of steps.entries()) {
    if (index === 0) continue;
    const before = harness.snapshot;
    const runBefore = harness.runSnapshot(harness.run);
    await harness.step(step.event);
    const reached = serialize(harness.snapshot);
    if (reached !== serialize(step.state)) {
      expect(JSON.parse(reached), `state after step ${index} (${describeEvent(step.event)})`).toEqual(
        JSON.parse(serialize(step.state)),
      );
    }
    if (step.event.type === "session.message") harness.checkDecision(before, runBefore);
    harness.checkInvariants();
  }
}

// ---------------------------------------------------------------------------------------------------
// Paths

const ALL_EVENTS: GraphEvent[] = [
  ...MESSAGE_EVENTS,
  ...SENDER_EVENTS,
  ...CAP_EVENTS,
  ...CONTROL_EVENTS,
  ...LANE_EVENTS,
  ...ACTOR_EVENTS,
];

type GraphPath = { name: string; steps: ReadonlyArray<{ event: GraphEvent; state: Snapshot }> };

function traversal(
  events: readonly GraphEvent[],
  limit: number,
  key: (snapshot: Snapshot) => string = serialize,
) {
  return {
    input: { key: "s" },
    events: (snapshot: Snapshot) =>
      events.filter((event) => possible(snapshot, event)).map((event) => concrete(snapshot, event)) as never,
    serializeState: (snapshot: Snapshot) => key(snapshot),
    limit,
  };
}

function named(steps: ReadonlyArray<{ event: GraphEvent; state: Snapshot }>): GraphPath {
  const route = steps
    .slice(1)
    .map((step) => describeEvent(step.event))
    .join(" → ");
  return { name: `${route || "start"} ⇒ ${describeState(steps.at(-1)!.state)}`, steps };
}

function asSteps(path: { steps: unknown }): Array<{ event: GraphEvent; state: Snapshot }> {
  return path.steps as Array<{ event: GraphEvent; state: Snapshot }>;
}

const options = traversal(ALL_EVENTS, 500_000);
const shortest = getShortestPaths(provided, options as never).map((path) => named(asSteps(path)));

/** Transition coverage: the shortest path to each state, then each event the state handles. */
const transitions: GraphPath[] = (() => {
  const toState = new Map(shortest.map((path) => [serialize(path.steps.at(-1)!.state), path.steps]));
  const adjacency = getAdjacencyMap(provided as never, options as never);
  const out: GraphPath[] = [];
  for (const [key, vertex] of Object.entries(adjacency)) {
    const prefix = toState.get(key);
    if (!prefix) continue;
    for (const edge of Object.values(vertex.transitions) as Array<{ event: unknown; state: unknown }>) {
      const event = edge.event as GraphEvent;
      if (!(vertex.state as Snapshot).can(event as never)) continue;
      out.push(named([...prefix, { event, state: edge.state as Snapshot }]));
    }
  }
  return out;
})();

describe("session machine: shortest paths", () => {
  it("reaches every state of the session, including collecting and a recovery turn", () => {
    const values = new Set(shortest.map((path) => describeState(path.steps.at(-1)!.state).split(" ")[0]));
    for (const value of [
      "idle",
      "collecting",
      "resetting",
      "turn.waitingForLane",
      "turn.running",
      "turn.delivering",
    ]) {
      expect(values).toContain(value);
    }
  });

  for (const path of shortest) {
    it(`keeps one run and accounts for every message: ${path.name}`, async () => {
      await replay(path.steps);
    });
  }
});

describe("session machine: every transition", () => {
  for (const path of transitions) {
    it(`keeps one run and accounts for every message: ${path.name}`, async () => {
      await replay(path.steps);
    });
  }
});

// Simple paths stay small only over a narrower alphabet: steer/follow-up/interrupt arrivals (and /stop)
// at every stage of the first turn, with the happy results of its actors, until that turn is delivered.
// Counting turns in the key keeps "idle after the first turn" apart from the initial idle.
const SIMPLE_EVENTS: GraphEvent[] = [
  graphMessage("steer", "steer"),
  graphMessage("followup", "followup"),
  graphMessage("interrupt", "interrupt"),
  { type: "lane.granted", runId: "s#g", input: GRAPH_RUN_INPUT },
  { type: "xstate.done.actor.run", output: GRAPH_RUN_OUTPUT },
  { type: "xstate.done.actor.deliver", output: { delivered: true, recovery: null } },
];
const firstTurnDelivered = (snapshot: Snapshot) =>
  snapshot.context.turnSeq === 1 &&
  (snapshot.matches("idle") ||
    snapshot.matches("collecting") ||
    snapshot.matches({ turn: "waitingForLane" }));

function simplePaths(events: readonly GraphEvent[], maxWaiting: number): GraphPath[] {
  return getSimplePaths(provided, {
    ...traversal(events, 50_000, (snapshot) => `${serialize(snapshot)}#${snapshot.context.turnSeq}`),
    toState: firstTurnDelivered,
    stopWhen: (snapshot: Snapshot) =>
      firstTurnDelivered(snapshot) || snapshot.context.queue.length > maxWaiting,
  } as never).map((path) => named(asSteps(path)));
}

const simple = [
  ...simplePaths(SIMPLE_EVENTS, 1),
  ...simplePaths([...SIMPLE_EVENTS, { type: "session.stop" }], 0).filter((path) =>
    path.steps.some((step) => step.event.type === "session.stop"),
  ),
];

describe("session machine: simple paths to the first delivery (steer, follow-up, interrupt, /stop)", () => {
  it("finds a bounded set of simple paths", () => {
    expect(simple.length).toBeGreaterThan(100);
    expect(simple.length).toBeLessThan(500);
  });

  for (const path of simple) {
    it(`keeps one run and accounts for every message: ${path.name}`, async () => {
      await replay(path.steps);
    });
  }
});
