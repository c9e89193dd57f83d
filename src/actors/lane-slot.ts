import { fromCallback } from "xstate";
import { errorMessage, isStoreUnreachable, LaneTimeoutError, TillerError } from "../errors.js";
import type { RunOptions } from "../lanes/lane-scheduler.types.js";
import { WAIT_SIGNAL, type WaitSignalOption } from "../lanes/wait-signal.js";
import type { PendingTurn, SessionEvent } from "../machines/session.types.js";
import { laneForTurn, priorityForTrigger } from "../policy/lane-priority.js";
import { sleep } from "../ports/clock.js";
import type { ActorDeps } from "./deps.js";
import { prepareRun } from "./prepare-run.js";
import { FIRST_WAIT_MS, nextWait } from "./store-retry.js";

export interface LaneSlotInput {
  session: string;
  /** The turn as it was when it asked for the slot (messages may still join it). */
  pending: PendingTurn;
}

/**
 * Holds a session's lane slot for as long as the session's `turn` state lives: asks the scheduler and,
 * once granted, prepares the run and reports `lane.granted` with its input (at once when the session's
 * window is cached, so the model call starts in the step that got the slot). A resend needs no run.
 * Releases the slot when the state exits (the actor is stopped). The turn's trigger picks its lane and
 * priority (user turns in `main` in the foreground, scheduled ones in `cron` in the background, ...); a
 * turn resumed after a restart runs in the background. A request the lanes could not store (the
 * cluster's database was away) is asked again with backoff until it is, never turned into a
 * rejection: a rejected turn waits in its session's queue for a message that may never come.
 */
export function createLaneSlot(deps: ActorDeps) {
  return fromCallback<SessionEvent, LaneSlotInput>(({ input, sendBack }) => {
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const waiting = new AbortController();
    const waitSignal = () => waiting.signal;
    let granted = false;
    let left = false;
    const resend = input.pending.recovery?.deliveryMode === "automatic";
    let toldTimeout = false;
    const timedOut = () => {
      if (toldTimeout || left) return;
      toldTimeout = true;
      sendBack({ type: "lane.timeout" });
    };

    function start(): void {
      const runId = deps.newRunId(input.session);
      if (resend) {
        sendBack({ type: "lane.granted", runId });
        return;
      }
      const args = { session: input.session, runId, pending: input.pending };
      let prepared: ReturnType<typeof prepareRun>;
      try {
        prepared = prepareRun(deps, args);
      } catch (error) {
        sendBack({ type: "turn.prepareFailed", error: storeFailed(error), runId });
        return;
      }
      if (!(prepared instanceof Promise)) {
        sendBack({ type: "lane.granted", runId: args.runId, input: prepared });
        return;
      }
      // A turn that left meanwhile (a /stop) must not see a late grant: its next turn would take it.
      prepared.then(
        (ready) => left || sendBack({ type: "lane.granted", runId: args.runId, input: ready }),
        (error: unknown) =>
          left || sendBack({ type: "turn.prepareFailed", error: storeFailed(error), runId: args.runId }),
      );
    }

    const ask = (wait: number): void => {
      const options: RunOptions & WaitSignalOption = {
        session: input.session,
        lane: laneForTurn(input.pending),
        priority: priorityForTrigger(input.pending.trigger ?? "user", {
          restartRecovery: input.pending.resumed === true && !deps.resumedKeepsPriority,
        }),
      };
      if (deps.config.laneTimeoutMs) {
        options.signal = waiting.signal;
        options.timeoutMs = deps.config.laneTimeoutMs;
        options.abortGraceMs = deps.config.laneAbortGraceMs;
      } else if (WAIT_SIGNAL in deps.lanes) {
        // Most requests are granted inside run(): the signal that takes one back is made only if it waits.
        options[WAIT_SIGNAL] = waitSignal;
      } else options.signal = waiting.signal;
      deps.lanes
        .run(options, (signal) => {
          // The deadline aborts the signal: the session stops the run now, and the slot is held
          // until the turn has left (or the abort grace ran out). Without a deadline nothing listens.
          if (deps.config.laneTimeoutMs)
            signal.addEventListener(
              "abort",
              () => {
                if (signal.reason instanceof LaneTimeoutError) timedOut();
              },
              { once: true },
            );
          granted = true;
          start();
          return held;
        })
        .catch((error: unknown) => {
          if (left || waiting.signal.aborted) return;
          if (granted && error instanceof LaneTimeoutError) timedOut();
          else if (!granted && isStoreUnreachable(error)) {
            // The cluster lanes' STORE_FAILED carries the connection error as its cause: nothing was
            // granted, so the request is asked again on the same backoff as every held store write.
            deps.logger.warn(
              { session: input.session, op: "lane-enqueue", error: errorMessage(error), retryInMs: wait },
              "store.unreachable",
            );
            sleep(deps.clock, wait, waiting.signal).then(
              () => ask(nextWait(wait)),
              () => {},
            );
          } else if (!granted)
            sendBack({
              type: "lane.rejected",
              reason: error instanceof Error ? error.message : String(error),
            });
        });
    };
    ask(FIRST_WAIT_MS);
    return () => {
      left = true;
      release();
      if (!granted) waiting.abort(new Error("turn left before its lane slot was granted"));
    };
  });
}

/** A turn whose history could not be read (or repaired) failed on the store, not on the model. */
function storeFailed(error: unknown): TillerError {
  return error instanceof TillerError
    ? error
    : new TillerError("STORE_FAILED", `the turn's history could not be read: ${errorMessage(error)}`, {
        retryable: true,
        cause: error,
      });
}
