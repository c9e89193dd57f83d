import type { TillerEvent } from "../events.js";
import type { ModelUsage } from "../ports/model.js";

/** Turns whose usage is summed at once (far more than can run at once); the oldest are forgotten. */
const MAX_RUNS = 10_000;

/**
 * Sums the token usage of each turn's model calls (`model.ended` with `usage`) and puts the total on
 * the turn's `turn.ended`, so a log line or a span has the turn's cost without adding it up.
 *
 * @example
 * ```ts
 * const usage = new TurnUsage();
 * publish(usage.annotate(event)); // a turn.ended gains usage when any of its calls reported some
 * ```
 */
export class TurnUsage {
  private readonly runs = new Map<string, ModelUsage>();

  /** The event, or for a `turn.ended` of a turn whose calls reported usage, a copy with their sum. */
  annotate(event: TillerEvent): TillerEvent {
    if (event.type === "model.ended" && event.usage) {
      const sum = this.runs.get(event.runId);
      const { inputTokens, outputTokens } = event.usage;
      const totalTokens = event.usage.totalTokens ?? inputTokens + outputTokens;
      this.runs.set(event.runId, {
        inputTokens: (sum?.inputTokens ?? 0) + inputTokens,
        outputTokens: (sum?.outputTokens ?? 0) + outputTokens,
        totalTokens: (sum?.totalTokens ?? 0) + totalTokens,
      });
      if (this.runs.size > MAX_RUNS) this.runs.delete(this.runs.keys().next().value!);
      return event;
    }
    if (event.type !== "turn.ended") return event;
    const usage = this.runs.get(event.runId);
    if (!usage) return event;
    this.runs.delete(event.runId);
    return { ...event, usage };
  }
}
