import { createInspector, type StatelyInspectionEvent } from "@statelyai/inspect";
import { describe, expect, it } from "vitest";
import { LoopbackChannel } from "../../src/adapters/channels/loopback-channel.js";
import { ScriptedModel } from "../../src/adapters/scripted-model.js";
import { SimulatedClock } from "../../src/adapters/simulated-clock.js";
import { createGateway } from "../../src/gateway/create-gateway.js";
import { silentLogger } from "../../src/logger.js";
import { sleep } from "../../src/ports/clock.js";

// The inspector hands each event to its adapter on an idle callback (`setTimeout(0)` in Node): one more
// macrotask after the last action lets every event through. Nothing here waits on the wall clock.
const flush = () => new Promise<void>((resolve) => setTimeout(resolve, 0));

// Stately's inspector, attached to a gateway as docs/inspection.md shows, through an adapter that keeps
// what it would send to the inspector window: every actor with its definition, each snapshot, each event.
function inspectedGateway() {
  const received: StatelyInspectionEvent[] = [];
  const inspector = createInspector({ send: (event) => received.push(event) });
  const clock = new SimulatedClock();
  const gateway = createGateway({
    model: new ScriptedModel(
      [
        { when: { call: 1 }, reply: { delayMs: 100, toolCalls: [{ name: "lookup", args: {} }] } },
        { reply: { delayMs: 100, text: "Re: {{latestUser}}" } },
      ],
      clock,
    ),
    tools: [
      { name: "lookup", cancellable: false, execute: async () => sleep(clock, 500).then(() => "found") },
    ],
    channels: { web: new LoopbackChannel({ now: () => clock.now() }) },
    clock,
    logger: silentLogger,
    inspect: (event) => inspector.inspect.next?.(event),
  });
  const idle = () => clock.runUntilIdle({ isBusy: () => gateway.isBusy });
  return { gateway, received, idle, flush };
}

const machineIdOf = (event: StatelyInspectionEvent) =>
  event.type === "@xstate.actor" && event.definition
    ? (JSON.parse(event.definition) as { id?: string }).id
    : undefined;

describe("Stately's inspector on a gateway", () => {
  it("receives the lane scheduler, the session and the run, each with its definition", async () => {
    const { gateway, received, idle, flush } = inspectedGateway();
    await gateway.start();
    await gateway.receive({ session: "a", channel: "web", id: "m1", text: "find the invoice" });
    await idle();
    await flush();
    const machines = received.map(machineIdOf).filter(Boolean);
    expect(machines).toContain("laneScheduler");
    expect(machines).toContain("session");
    expect(machines).toContain("run");
    const runActor = received.find((event) => machineIdOf(event) === "run")!;
    const sessionActor = received.find((event) => machineIdOf(event) === "session")!;
    // The run is the session's child, so the inspector draws it under its session.
    expect(runActor.type === "@xstate.actor" && runActor.parentId).toBe(sessionActor.sessionId);
    // A definition is the machine's JSON: its states are there for the inspector to draw.
    const definition = JSON.parse((runActor as { definition: string }).definition);
    expect(Object.keys(definition.states)).toEqual(
      expect.arrayContaining(["streaming", "toolBatch", "recheck"]),
    );
    await gateway.stop();
  });

  it("receives the run's snapshots through toolBatch to streaming and done, and the events that moved it", async () => {
    const { gateway, received, idle, flush } = inspectedGateway();
    await gateway.start();
    await gateway.receive({ session: "a", channel: "web", id: "m1", text: "find the invoice" });
    await idle();
    await flush();
    const run = received.find((event) => machineIdOf(event) === "run")!;
    const runSessionId = run.sessionId;
    const values = received
      .filter((event) => event.type === "@xstate.snapshot" && event.sessionId === runSessionId)
      .map((event) => JSON.stringify((event as { snapshot: { value?: unknown } }).snapshot.value));
    const distinct = values.filter((value, i) => value !== values[i - 1]);
    expect(distinct).toEqual([
      '"streaming"',
      '{"toolBatch":{"toolRunning":"working"}}',
      '"streaming"',
      '"done"',
    ]);
    const runEvents = received
      .filter((event) => event.type === "@xstate.event" && event.sessionId === runSessionId)
      .map((event) => (event as { event: { type: string } }).event.type);
    expect(runEvents).toContain("xstate.done.actor.callModel");
    expect(runEvents).toContain("xstate.done.actor.runTool");
    const sessionEvents = received
      .filter(
        (event) =>
          event.type === "@xstate.event" && machineOfSession(received, event.sessionId) === "session",
      )
      .map((event) => (event as { event: { type: string } }).event.type);
    expect(sessionEvents).toContain("session.message");
    expect(sessionEvents).toContain("lane.granted");
    await gateway.stop();
  });

  it("sees the lane scheduler's own machine move when the gateway drains", async () => {
    const { gateway, received, flush } = inspectedGateway();
    await gateway.start();
    await gateway.drain();
    await flush();
    const lanes = received.find((event) => machineIdOf(event) === "laneScheduler")!;
    const values = received
      .filter((event) => event.type === "@xstate.snapshot" && event.sessionId === lanes.sessionId)
      .map((event) => (event as { snapshot: { value?: unknown } }).snapshot.value);
    expect(values).toEqual(["open", "draining", "drained"]);
    const events = received
      .filter((event) => event.type === "@xstate.event" && event.sessionId === lanes.sessionId)
      .map((event) => (event as { event: { type: string } }).event.type);
    expect(events).toEqual(expect.arrayContaining(["lanes.drain", "lanes.settled"]));
    await gateway.stop();
  });
});

function machineOfSession(received: StatelyInspectionEvent[], sessionId: string): string | undefined {
  const actor = received.find((event) => event.type === "@xstate.actor" && event.sessionId === sessionId);
  return actor ? machineIdOf(actor) : undefined;
}
