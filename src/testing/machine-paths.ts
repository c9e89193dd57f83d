import { type AnyStateMachine, type EventObject, getInitialSnapshot, getNextSnapshot } from "xstate";
import { getAdjacencyMap, getShortestPaths, type StatePath } from "xstate/graph";
import { type GatewayConfig, type GatewayConfigInput, parseConfig } from "../config.js";
import { ConfigError } from "../errors.js";
import { stateName } from "../gateway/inbound/validate-inbound.js";
import { laneEntryMachine } from "../machines/lane-entry.machine.js";
import { laneSchedulerMachine } from "../machines/lane-scheduler.machine.js";
import { parseQueueMode } from "../policy/queue-mode.js";
import { commitmentTraversal } from "./commitment-graph.js";
import {
  isPossibleRunEvent,
  type RunGraphEvent,
  type RunSnapshot,
  runEventLabel,
  runGraphEvents,
  runGraphInput,
  runMachine,
  runStateKey,
  runStateLabel,
} from "./run-graph.js";
import { sessionTraversal } from "./session-graph.js";

/** The machines a user can enumerate. */
export const MACHINE_NAMES = ["session", "run", "commitment", "lane-scheduler", "lane-entry"] as const;
/** The machines the testing kit can enumerate paths of. */
export type MachineName = (typeof MACHINE_NAMES)[number];

/** Options of {@link machinePaths}: the config the paths are built for, and which traversal to run. */
export interface MachinePathsOptions {
  /** `shortest` (default): one shortest path to every reachable state; `simple`: every simple path. */
  kind?: "shortest" | "simple";
  /** The gateway config whose settings shape the graph (re-check passes, queue mode, call limit). */
  config?: GatewayConfigInput;
  /** Most states the traversal may visit before it stops (default 5,000). */
  limit?: number;
  /** With `simple`: at most this many paths (default 200), so large graphs still finish quickly. */
  maxPaths?: number;
}

/** One path through a machine, from its initial state. */
export interface MachinePath {
  machine: MachineName;
  /** A readable name: each state and the event that left it. */
  name: string;
  /** State values along the path, starting with the initial one (`toolBatch.toolRunning.working`). */
  states: string[];
  /** The event types along the path, in order (`xstate.done.actor.callModel` for an actor's result). */
  events: string[];
  /** The events and the snapshots they led to, for replay and scenario generation. */
  steps: ReadonlyArray<{ event: EventObject; snapshot: unknown }>;
  /** Replaying `events` from the initial state passes exactly `states` (always true for returned paths). */
  isExact: boolean;
}

interface Traversal {
  machine: AnyStateMachine;
  input?: unknown;
  events: EventObject[];
  serializeState: (snapshot: never) => string;
  filterEvents?: (snapshot: never, event: never) => boolean;
  label(event: EventObject): string;
  /** A state's name in a path name (its value, plus facts where they matter). */
  stateLabel?(snapshot: never, value: string): string;
}

/**
 * Enumerates a machine's paths with `xstate/graph`, bounded so it always finishes: states are keyed by
 * their value and the few facts the guards read, never by unbounded context.
 *
 * @example
 * ```ts
 * import { machinePaths } from "tiller-gateway/testing";
 * const paths = machinePaths("run", { config: { staleReplyRecheck: { maxPasses: 1 } } });
 * paths.map((path) => path.name);
 * ```
 */
export function machinePaths(machine: MachineName, options: MachinePathsOptions = {}): MachinePath[] {
  const config = parseConfig(options.config ?? {});
  const traversal = traversalOf(machine, config, options.config);
  const limit = options.limit ?? 5_000;
  const graphOptions = {
    ...(traversal.input === undefined ? {} : { input: traversal.input }),
    events: traversal.events,
    serializeState: traversal.serializeState,
    ...(traversal.filterEvents ? { filterEvents: traversal.filterEvents } : {}),
    limit,
  };
  const found =
    options.kind === "simple"
      ? boundedSimplePaths(traversal, graphOptions, options.maxPaths ?? 200)
      : (getShortestPaths(traversal.machine, graphOptions as never) as StatePath<never, EventObject>[]);
  // A state key abstracts context, so a path may join two states the key cannot tell apart; replayed
  // exactly, such a path leaves the states the graph drew. Only paths the machine really takes are kept.
  return found.map((path) => toMachinePath(machine, path, traversal)).filter((path) => path.isExact);
}

function traversalOf(
  machine: MachineName,
  config: GatewayConfig,
  raw: GatewayConfigInput | undefined,
): Traversal {
  switch (machine) {
    case "run":
      return {
        machine: runMachine,
        input: runGraphInput(config),
        events: runGraphEvents(configuredMode(raw)),
        serializeState: runStateKey as (snapshot: never) => string,
        filterEvents: ((snapshot: RunSnapshot, event: RunGraphEvent) =>
          isPossibleRunEvent(snapshot, event)) as (snapshot: never, event: never) => boolean,
        label: (event) => runEventLabel(event as RunGraphEvent),
        stateLabel: runStateLabel as (snapshot: never, value: string) => string,
      };
    case "session":
      return sessionTraversal(config, configuredMode(raw)) as Traversal;
    case "commitment":
      return commitmentTraversal(config) as Traversal;
    case "lane-entry":
      // A turn's abort grace decides whether a timed-out entry passes through `stopping`.
      return { ...byValueTraversal(laneEntryMachine), input: { abortGraceMs: config.laneAbortGraceMs } };
    case "lane-scheduler":
      return byValueTraversal(laneSchedulerMachine);
  }
}

/** The queue mode the user configured, if any: it decides which arrivals the graph offers. */
function configuredMode(raw: GatewayConfigInput | undefined): ReturnType<typeof parseQueueMode> {
  const mode = (raw as { queue?: { mode?: unknown } } | undefined)?.queue?.mode;
  if (mode === undefined) return undefined;
  const parsed = typeof mode === "string" ? parseQueueMode(mode) : undefined;
  if (!parsed)
    throw new ConfigError("queue.mode", "steer, followup, collect, interrupt, reject or rollback", mode);
  return parsed;
}

function byValueTraversal(machine: AnyStateMachine): Traversal {
  return {
    machine,
    events: machine.events.map((type) => ({ type })),
    serializeState: ((snapshot: { value: unknown }) => JSON.stringify(snapshot.value)) as (
      snapshot: never,
    ) => string,
    label: (event) => event.type,
  };
}

/** A simple path stops growing here: longer journeys add replay time, not new behaviour. */
const MAX_SIMPLE_STEPS = 30;

/**
 * Complete simple paths (no state twice; each ends where no unvisited state is left to reach, or after
 * 30 steps), found
 * depth-first over the machine's adjacency map and capped at `maxPaths`: the number of simple paths
 * grows exponentially with a graph, and a bounded sample of whole journeys is what a test suite needs.
 */
function boundedSimplePaths(
  traversal: Traversal,
  graphOptions: object,
  maxPaths: number,
): StatePath<never, EventObject>[] {
  const adjacency = getAdjacencyMap(traversal.machine, graphOptions as never) as Record<
    string,
    { state: never; transitions: Record<string, { event: EventObject; state: never }> }
  >;
  const serialize = traversal.serializeState;
  const [initialKey] = Object.keys(adjacency);
  if (initialKey === undefined) return [];
  const found: StatePath<never, EventObject>[] = [];
  const onPath = new Set<string>([initialKey]);
  const steps: Array<{ state: never; event: EventObject }> = [
    { state: adjacency[initialKey]!.state, event: { type: "xstate.init" } },
  ];
  const visit = (key: string): void => {
    if (found.length >= maxPaths) return;
    if (steps.length > MAX_SIMPLE_STEPS) {
      found.push({ state: steps[steps.length - 1]!.state, steps: [...steps], weight: steps.length - 1 });
      return;
    }
    let extended = false;
    for (const { event, state } of Object.values(adjacency[key]!.transitions)) {
      const next = serialize(state);
      if (onPath.has(next) || !adjacency[next]) continue;
      extended = true;
      onPath.add(next);
      steps.push({ state, event });
      visit(next);
      steps.pop();
      onPath.delete(next);
      if (found.length >= maxPaths) return;
    }
    if (!extended && steps.length > 1) {
      found.push({ state: steps[steps.length - 1]!.state, steps: [...steps], weight: steps.length - 1 });
    }
  };
  visit(initialKey);
  return found;
}

function toMachinePath(
  machine: MachineName,
  path: StatePath<never, EventObject>,
  traversal: Traversal,
): MachinePath {
  // The traversal keeps one snapshot per state key, whichever it met first; replaying the events gives
  // the snapshots of this very path (context the key leaves out, such as the last decision, differs).
  let snapshot = getInitialSnapshot(traversal.machine, traversal.input as never) as unknown;
  const steps = path.steps.map((step, index) => {
    if (index > 0) snapshot = getNextSnapshot(traversal.machine, snapshot as never, step.event as never);
    return { event: step.event, snapshot };
  });
  const states = steps.map((step) => stateName((step.snapshot as { value: unknown }).value));
  const isExact = path.steps.every(
    (step, index) => stateName((step.state as { value: unknown }).value) === states[index],
  );
  const events = steps.slice(1).map((step) => step.event.type);
  const named = steps.map((step, index) =>
    traversal.stateLabel ? traversal.stateLabel(step.snapshot as never, states[index]!) : states[index]!,
  );
  const name = [
    named[0]!,
    ...steps.slice(1).map((step, index) => `—${traversal.label(step.event)}→ ${named[index + 1]}`),
  ].join(" ");
  return { machine, name, states, events, steps, isExact };
}
