/**
 * The fencing tokens of this process's runs, by session. While a session's task runs here, every write
 * this process makes for the session carries the token of its grant. A run that ends by itself unfences
 * the session; a run whose lease was lost (or that timed out) leaves its dead token in place until the
 * session's next grant here, so a run that lost its lease never writes unfenced.
 *
 * By session, not by async context: the gateway's actors write for a turn from contexts the lane task
 * did not start (and a context started by one grant outlives it in an actor system).
 */
export class FenceRegistry<Holder> {
  private readonly bySession = new Map<string, { holder: Holder; fence: number }>();
  private readonly inflight = new Map<string, Set<Promise<unknown>>>();

  /** The session's writes from here carry `fence` from now on. */
  hold(session: string, holder: Holder, fence: number): void {
    this.bySession.set(session, { holder, fence });
  }

  /** The holder ended cleanly: the session's writes from here are no longer fenced. */
  release(session: string, holder: Holder): void {
    if (this.bySession.get(session)?.holder === holder) this.bySession.delete(session);
  }

  fenceFor(session: string): number | undefined {
    return this.bySession.get(session)?.fence;
  }

  using(session: string, write: Promise<unknown>): void {
    const writes = this.inflight.get(session) ?? new Set();
    this.inflight.set(session, writes);
    const done = write.then(
      () => {},
      () => {},
    );
    writes.add(done);
    void done.then(() => {
      writes.delete(done);
      if (writes.size === 0 && this.inflight.get(session) === writes) this.inflight.delete(session);
    });
  }

  /** Resolves once the fenced writes of the session issued so far have landed (or failed). */
  async settled(session: string): Promise<void> {
    const writes = this.inflight.get(session);
    if (writes) await Promise.all([...writes]);
  }
}
