import { expect } from "vitest";
import { type AnyActorRef, createActor } from "xstate";
import { SimulatedClock } from "../../src/adapters/simulated-clock.js";
import type { DeliverInput, DeliverOutput, SessionEvent } from "../../src/machines/session.types.js";
import type { QueueMode } from "../../src/policy/queue-mode.js";
import type { OwnedMessage } from "../../src/policy/turn-context.js";
import { type Deferred, provided, reportCallsTo } from "./session-fakes.js";
import {
  COLLECT_WINDOW,
  describeEvent,
  describeState,
  type FakeRunSnapshot,
  type GraphEvent,
  type Snapshot,
  serialize,
  unique,
} from "./session-graph-cases.js";

export { provided } from "./session-fakes.js";

// A real session actor whose invoked actors are fakes under the test's control, the ledger of every
// message sent to it, and the invariants of docs/architecture.md checked after every step: at most one
// run (1), every message accounted for exactly once (5), and every decision states what actually
// happened (12).

class Harness {
  readonly clock = new SimulatedClock();
  readonly calls = new Map<string, Deferred<unknown, unknown>>();
  readonly runs: AnyActorRef[] = [];
  readonly sent: Array<{
    id: string;
    mode: QueueMode;
    channel: string;
    sender?: string;
    across?: boolean;
    edit?: boolean;
  }> = [];
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
    reportCallsTo(this.calls);
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
      // The graph's edit names a message of its own walk: this replay's message in the same place.
      ...(event.message.editOf ? { editOf: this.sameTarget(event.message.text) ?? "none" } : {}),
    };
    this.sent.push({
      id: message.id,
      mode: event.setting.mode,
      channel: message.channel,
      ...(message.sender ? { sender: message.sender.id } : {}),
      ...(event.setting.steerAcrossSenders ? { across: true } : {}),
      ...(message.editOf ? { edit: true } : {}),
    });
    this.actor.send({ type: "session.message", message, setting: event.setting });
  }

  /** The message of this replay where the graph's edit aimed: the first queued one, or the turn's first. */
  private sameTarget(label: string): string | undefined {
    if (label === "edit-queued") return this.queued()[0];
    return this.snapshot.context.pending?.messages[0]?.id;
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
    // A refused message changes nothing; a rolled-back turn is marked so its records are hidden later.
    if (last.mode === "reject" && decision.disposition === "rejected")
      ensure(serialize(before) === serialize(snapshot), `${said}: refusing it changed the session`);
    if (last.mode === "rollback" && decision.disposition === "interrupted")
      ensure(
        snapshot.context.pending?.rolledBack === true,
        `${said}: the cut-off turn is not marked rolled back`,
      );
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
        if (last.mode === "reject")
          ensure(
            decision.reason === "busy" && !(before.matches("idle") && before.context.queue.length === 0),
            `${said} (${decision.reason}): only a busy session refuses it, and says "busy"`,
          );
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
    // An edit goes where the message it replaces is, whatever its mode (the platform says it is the
    // same person's message).
    if (last.edit) return;
    // Another sender's message never joins a turn unless steering across senders is on: it waits for
    // a turn of its own, and its decision says why.
    const across = last.across === true;
    const owners = before.context.pending?.kind === "turn" ? before.context.pending.messages : [];
    const foreign = owners.some((message) => message.sender?.id !== last.sender);
    if (
      !across &&
      foreign &&
      (last.mode === "steer" || last.mode === "interrupt" || last.mode === "rollback")
    ) {
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
    // The mode semantics while a user turn runs.
    if (before.matches({ turn: "running" }) && before.context.pending?.kind === "turn") {
      const expected: Record<QueueMode, string[]> = {
        steer: ["steered"],
        followup: ["queued", "rejected"],
        collect: ["collected", "rejected"],
        interrupt: ["interrupted"],
        reject: ["rejected"],
        rollback: ["interrupted"],
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

export async function replay(steps: ReadonlyArray<{ event: GraphEvent; state: Snapshot }>): Promise<void> {
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
