import { fromPromise } from "xstate";
import { DetectorError, errorMessage } from "../errors.js";
import type { DetectStaleInput, DetectStaleOutput } from "../machines/run.types.js";
import { toVerdict } from "../policy/stale-detector.js";
import type { ActorDeps } from "./deps.js";

/**
 * The run machine's `detectStale` actor: calls the gateway author's `staleReplyRecheck.detect` with the
 * draft's facts, waits at most `detectTimeoutMs` on the gateway's clock, and checks what comes back.
 * Every failure rejects with a {@link DetectorError}, which the machine answers with the built-in
 * signals; a late answer is dropped, and the detector's signal is aborted when the run stops waiting.
 *
 * @example
 * ```ts
 * runMachine.provide({ actors: { detectStale: createDetectStale(deps) } });
 * ```
 */
export function createDetectStale(deps: ActorDeps) {
  return fromPromise<DetectStaleOutput, DetectStaleInput>(({ input, signal }) => {
    const { detect, detectTimeoutMs } = deps.config.staleReplyRecheck;
    return new Promise<DetectStaleOutput>((resolve, reject) => {
      const controller = new AbortController();
      let settled = false;
      const finish = (settle: () => void) => {
        if (settled) return;
        settled = true;
        deps.clock.clearTimeout(timer);
        signal.removeEventListener("abort", onAbort);
        settle();
      };
      const onAbort = () =>
        finish(() => {
          controller.abort(signal.reason);
          reject(new DetectorError("DETECTOR_FAILED", "the run stopped waiting"));
        });
      const timer = deps.clock.setTimeout(
        () =>
          finish(() => {
            controller.abort(new Error("timed out"));
            reject(new DetectorError("DETECTOR_TIMEOUT", `no verdict within ${detectTimeoutMs} ms`));
          }),
        detectTimeoutMs,
      );
      signal.addEventListener("abort", onAbort, { once: true });
      if (!detect) {
        finish(() => reject(new DetectorError("DETECTOR_FAILED", "no detector is configured")));
        return;
      }
      let answer: unknown;
      try {
        answer = detect(input.facts, { signal: controller.signal });
      } catch (error) {
        finish(() => reject(new DetectorError("DETECTOR_FAILED", errorMessage(error), { cause: error })));
        return;
      }
      Promise.resolve(answer).then(
        (value) =>
          finish(() => {
            const verdict = toVerdict(value);
            if (typeof verdict === "string") reject(new DetectorError("DETECTOR_VERDICT_INVALID", verdict));
            else resolve(verdict);
          }),
        (error: unknown) =>
          finish(() => reject(new DetectorError("DETECTOR_FAILED", errorMessage(error), { cause: error }))),
      );
    });
  });
}
