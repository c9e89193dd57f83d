import type { ActorRefLike, InspectionEvent } from "xstate";
import type { TillerEventOf } from "../events.js";

/** The machines whose state the operator page draws. */
const DRAWN = new Set(["session", "run", "laneScheduler"]);

/**
 * Turns XState inspection into `state` events: one each time a session, run or the lane scheduler
 * enters a new state value, with the event that moved it. The operator page reads them from
 * `GET /v1/events` to highlight the active state of its diagrams and mark the last transition.
 *
 * `{ type: "state", at, machine: "session" | "run" | "laneScheduler", session?, runId?, value, status,
 * cause }`: `value` is the XState state value (`"streaming"`, `{ "toolBatch": { "toolRunning":
 * "working" } }`), `status` the actor's (`active`, `done`, `error`, `stopped`), `cause` the event type.
 *
 * @example
 * ```ts
 * const feed = createStateFeed({ now: () => clock.now(), emit: (event) => hub.emit(event) });
 * const gateway = createGateway({ ...options, inspect: feed.inspect });
 * ```
 */
export function createStateFeed(options: {
  now: () => number;
  emit: (event: TillerEventOf<"state">) => void;
  /** Also receives every inspection event (a user's own inspector). */
  inspect?: ((event: InspectionEvent) => void) | undefined;
}) {
  // Last value per actor, so a step that stays in the same state (a self-transition) says nothing.
  const last = new WeakMap<ActorRefLike, string>();
  return {
    inspect(event: InspectionEvent): void {
      options.inspect?.(event);
      if (event.type !== "@xstate.snapshot") return;
      const machine = machineIdOf(event.actorRef);
      if (machine === undefined || !DRAWN.has(machine)) return;
      const snapshot = event.snapshot as {
        value?: unknown;
        status?: string;
        context?: { key?: string; input?: { session?: string; runId?: string } };
      };
      const value = JSON.stringify(snapshot.value ?? null);
      const status = snapshot.status ?? "active";
      const key = `${value}|${status}`;
      if (last.get(event.actorRef) === key) return;
      last.set(event.actorRef, key);
      const context = snapshot.context;
      const session = machine === "session" ? context?.key : context?.input?.session;
      const runId = machine === "run" ? context?.input?.runId : undefined;
      options.emit({
        at: options.now(),
        type: "state",
        machine,
        ...(session !== undefined ? { session } : {}),
        ...(runId !== undefined ? { runId } : {}),
        value: snapshot.value ?? null,
        status,
        cause: event.event.type,
      });
    },
  };
}

function machineIdOf(actor: ActorRefLike): string | undefined {
  const logic = (actor as { logic?: { id?: unknown; root?: unknown } }).logic;
  return logic && typeof logic.id === "string" && logic.root !== undefined ? logic.id : undefined;
}
