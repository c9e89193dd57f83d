import type { Clock, TimerHandle } from "../../ports/clock.js";

/**
 * Runs `step` every `ms` on the clock until `isClosed` or `stop()`, the next run timed from the end of
 * the last one (so a slow database never stacks steps); `run` tracks each step's promise.
 */
export function every(
  clock: Clock,
  ms: number,
  step: () => Promise<unknown>,
  run: (work: Promise<unknown>) => void,
  isClosed: () => boolean,
): { stop(): void } {
  let timer: TimerHandle | undefined;
  const tick = () => {
    if (isClosed()) return;
    run(
      step().finally(() => {
        if (!isClosed()) timer = clock.setTimeout(tick, ms);
      }),
    );
  };
  timer = clock.setTimeout(tick, ms);
  return {
    stop() {
      if (timer) clock.clearTimeout(timer);
    },
  };
}
