/**
 * The idle sessions a cluster process keeps for a while before it gives them up (`idleHoldMs`): one
 * timer each, started again whenever the session goes idle again.
 */
export class IdleHolds {
  private readonly timers = new Map<string, NodeJS.Timeout>();

  constructor(readonly holdMs: number) {}

  /** Calls `expired` once the session has been held `holdMs` (unless cancelled or held again). */
  hold(session: string, expired: () => void): void {
    this.cancel(session);
    const timer = setTimeout(() => {
      this.timers.delete(session);
      expired();
    }, this.holdMs);
    // A held session never keeps the process alive.
    timer.unref?.();
    this.timers.set(session, timer);
  }

  cancel(session: string): void {
    clearTimeout(this.timers.get(session));
    this.timers.delete(session);
  }

  clear(): void {
    for (const timer of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
  }
}
