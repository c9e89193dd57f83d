import { AsyncLocalStorage } from "node:async_hooks";

/**
 * The fencing tokens of this process's runs. A task runs inside `run()`, so every write it makes, however
 * deep in its async calls, finds its own grant's token; writes made for the session outside the task's
 * async context (the gateway's actors) find the token of the session's current run, or of a run whose
 * lease was lost, until the session's next grant here: a run that lost its lease never writes unfenced.
 */
export class FenceRegistry<Holder> {
  private readonly context = new AsyncLocalStorage<{ session: string; fence: number }>();
  private readonly bySession = new Map<string, { holder: Holder; fence: number }>();

  run<T>(session: string, fence: number, work: () => T): T {
    return this.context.run({ session, fence }, work);
  }

  /** The session's writes from here carry `fence` from now on. */
  hold(session: string, holder: Holder, fence: number): void {
    this.bySession.set(session, { holder, fence });
  }

  /** The holder ended cleanly: the session's writes from here are no longer fenced. */
  release(session: string, holder: Holder): void {
    if (this.bySession.get(session)?.holder === holder) this.bySession.delete(session);
  }

  fenceFor(session: string): number | undefined {
    const current = this.context.getStore();
    if (current?.session === session) return current.fence;
    return this.bySession.get(session)?.fence;
  }
}
