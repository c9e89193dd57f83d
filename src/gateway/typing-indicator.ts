import type { ActorDeps } from "../actors/deps.js";
import { errorMessage } from "../errors.js";
import type { TillerEvent } from "../events.js";
import type { TimerHandle } from "../ports/clock.js";

/** How often a channel's `typing` is called while a turn runs (platforms show it for about 5 s). */
export const TYPING_EVERY_MS = 4000;

/**
 * Shows "typing…" on channels that can: `typing(session)` when a turn a person is waiting for starts,
 * then every {@link TYPING_EVERY_MS} on the clock until the turn ends. A failing call is logged and
 * never touches the turn.
 */
export class TypingIndicator {
  private readonly timers = new Map<string, TimerHandle>();

  constructor(private readonly deps: Pick<ActorDeps, "channelFor" | "clock" | "logger">) {}

  observe(event: TillerEvent): void {
    if (event.type === "turn.started") {
      const { session, runId, trigger } = event as TillerEvent & { trigger?: string; runId?: string };
      // Only a turn somebody typed has somebody waiting for it.
      if (typeof session !== "string" || typeof runId !== "string") return;
      if (trigger !== undefined && trigger !== "user") return;
      if (!this.deps.channelFor(session).channel.typing) return;
      this.tick(session, runId);
    } else if (event.type === "turn.ended" && typeof event.runId === "string") {
      this.end(event.runId);
    }
  }

  /** Stops every indicator (the gateway stops). */
  stop(): void {
    for (const runId of [...this.timers.keys()]) this.end(runId);
  }

  private tick(session: string, runId: string): void {
    const { channel } = this.deps.channelFor(session);
    try {
      void Promise.resolve(channel.typing?.(session)).catch((error: unknown) => this.failed(session, error));
    } catch (error) {
      this.failed(session, error);
    }
    this.timers.set(
      runId,
      this.deps.clock.setTimeout(() => this.tick(session, runId), TYPING_EVERY_MS),
    );
  }

  private end(runId: string): void {
    const timer = this.timers.get(runId);
    if (timer) this.deps.clock.clearTimeout(timer);
    this.timers.delete(runId);
  }

  private failed(session: string, error: unknown): void {
    this.deps.logger.warn({ session, error: errorMessage(error) }, "channel.typingFailed");
  }
}
