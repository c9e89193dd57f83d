import { fromCallback, fromPromise, type SnapshotFrom } from "xstate";
import type { GatewayConfig } from "../config.js";
import type { RunInput, RunOutput } from "../machines/run.machine.js";
import { sessionMachine } from "../machines/session.machine.js";
import type { DeliverInput, DeliverOutput, SessionEvent } from "../machines/session.types.js";
import { failedOutput } from "../machines/session-context.js";
import type { QueueMode, ResolvedQueueSetting } from "../policy/queue-mode.js";

/**
 * The session machine as a graph for users: messages in each queue mode the config allows, the
 * controls, the lane's answers and the results of the session's actors (run, delivery, transcript
 * reset), with the collect window's timer. The invoked actors are inert here: the traversal delivers
 * their results as events.
 */

type SessionSnapshot = SnapshotFrom<typeof sessionMachine>;

export type SessionGraphEvent =
  | SessionEvent
  | { type: "xstate.done.actor.run"; output: RunOutput }
  | { type: "xstate.error.actor.run"; error: string }
  | { type: "xstate.done.actor.deliver"; output: DeliverOutput }
  | { type: "xstate.error.actor.deliver"; error: string }
  | { type: "xstate.done.actor.resetTranscript"; output: undefined }
  | { type: "xstate.error.actor.resetTranscript"; error: string }
  | { type: typeof COLLECT_WINDOW };

export const COLLECT_WINDOW = "xstate.after.collectWindow.session.collecting";

const inert = sessionMachine.provide({
  actors: {
    run: fromPromise<RunOutput, RunInput>(() => new Promise(() => {})),
    laneSlot: fromCallback(() => () => {}),
    deliver: fromPromise<DeliverOutput, DeliverInput>(() => new Promise(() => {})),
    resetTranscript: fromPromise<void, unknown>(() => new Promise(() => {})),
  } as never,
});

export function sessionTraversal(config: GatewayConfig, configuredMode: QueueMode | undefined) {
  const modes: QueueMode[] = configuredMode
    ? [configuredMode]
    : ["steer", "followup", "collect", "interrupt"];
  const setting = (mode: QueueMode): ResolvedQueueSetting => ({
    mode,
    modeSource: configuredMode ? "global" : "inline",
    debounceMs: config.queue.debounceMs ?? 500,
    cap: config.queue.cap ?? 20,
    drop: config.queue.drop ?? "summarize",
  });
  const done: RunOutput = {
    ...failedOutput("web:graph#1", ""),
    status: "done",
    final: "answer",
    error: null,
  };
  const events: SessionGraphEvent[] = [
    ...modes.map((mode) => ({
      type: "session.message" as const,
      message: { id: `m-${mode}`, text: `a ${mode} message`, channel: "web", at: 0 },
      setting: setting(mode),
    })),
    { type: "session.stop" },
    { type: "session.new" },
    { type: "lane.granted", runId: "web:graph#1" },
    { type: "lane.timeout" },
    { type: "xstate.done.actor.run", output: done },
    { type: "xstate.error.actor.run", error: "the run crashed" },
    { type: "xstate.done.actor.deliver", output: { delivered: true, recovery: null } },
    { type: "xstate.error.actor.deliver", error: "the channel failed" },
    { type: "xstate.done.actor.resetTranscript", output: undefined },
    { type: COLLECT_WINDOW },
  ];
  return {
    machine: inert,
    input: { key: "web:graph" },
    events,
    serializeState: (snapshot: SessionSnapshot) => {
      const { context } = snapshot;
      const head = context.queue[0];
      return JSON.stringify([
        snapshot.value,
        head?.kind ?? null,
        Math.min(context.queue.length, 2),
        context.pending ? Math.min(context.pending.messages.length, 2) : null,
      ]);
    },
    filterEvents: (snapshot: SessionSnapshot, event: SessionGraphEvent) => isPossible(snapshot, event),
    label: (event: SessionGraphEvent) => sessionEventLabel(event),
  };
}

/** Actor results only while that actor lives; lane answers only while the turn waits for one. */
function isPossible(snapshot: SessionSnapshot, event: SessionGraphEvent): boolean {
  const children = snapshot.children as Record<string, unknown>;
  const result = /^xstate\.(done|error)\.actor\.(.+)$/.exec(event.type);
  if (result) return children[result[2]!] !== undefined;
  if (event.type === "lane.granted") return snapshot.matches({ turn: "waitingForLane" });
  if (event.type === "lane.timeout")
    return children.laneSlot !== undefined && !snapshot.matches({ turn: "waitingForLane" });
  if (event.type === COLLECT_WINDOW) return snapshot.matches("collecting");
  return true;
}

export function sessionEventLabel(event: SessionGraphEvent): string {
  switch (event.type) {
    case "session.message":
      return `${event.setting.mode === "interrupt" ? "an" : "a"} ${event.setting.mode} message`;
    case "session.stop":
      return "/stop";
    case "session.new":
      return "/new";
    case "lane.granted":
      return "the lane grants a slot";
    case "lane.timeout":
      return "the lane times out";
    case "xstate.done.actor.run":
      return "the run ends";
    case "xstate.error.actor.run":
      return "the run crashes";
    case "xstate.done.actor.deliver":
      return "the final is delivered";
    case "xstate.error.actor.deliver":
      return "the delivery fails";
    case "xstate.done.actor.resetTranscript":
      return "the transcript is reset";
    case COLLECT_WINDOW:
      return "the collect window closes";
    default:
      return event.type;
  }
}
