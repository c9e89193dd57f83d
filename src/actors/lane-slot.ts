import { fromCallback } from "xstate";
import { LaneTimeoutError } from "../errors.js";
import type { SessionEvent } from "../machines/session.types.js";
import { priorityForTrigger } from "../policy/lane-priority.js";
import type { ActorDeps } from "./deps.js";

/**
 * Holds a session's lane slot for as long as the session's `turn` state lives: asks the scheduler,
 * reports `lane.granted`, and releases the slot when the state exits (the actor is stopped).
 * User turns run in the foreground; a turn resumed after a restart runs in the background.
 */
export function createLaneSlot(deps: ActorDeps) {
  return fromCallback<SessionEvent, { session: string; resumed: boolean }>(({ input, sendBack }) => {
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const waiting = new AbortController();
    let granted = false;
    deps.lanes
      .run(
        {
          session: input.session,
          lane: "main",
          priority: priorityForTrigger("user", { restartRecovery: input.resumed }),
          signal: waiting.signal,
          ...(deps.config.laneTimeoutMs ? { timeoutMs: deps.config.laneTimeoutMs } : {}),
        },
        () => {
          granted = true;
          sendBack({ type: "lane.granted", runId: deps.newRunId(input.session) });
          return held;
        },
      )
      .catch((error: unknown) => {
        if (waiting.signal.aborted) return;
        if (granted && error instanceof LaneTimeoutError) sendBack({ type: "lane.timeout" });
        else if (!granted)
          sendBack({ type: "lane.rejected", reason: error instanceof Error ? error.message : String(error) });
      });
    return () => {
      release();
      if (!granted) waiting.abort(new Error("turn left before its lane slot was granted"));
    };
  });
}
