/**
 * The claim loop's pacing: one claim pass at a time per lane; a request while one runs makes it run
 * once more when it ends, so no grant a change made possible is missed and no lane is claimed twice
 * at once.
 */
export class ClaimPasses {
  private readonly running = new Map<string, Promise<void>>();
  private readonly again = new Set<string>();

  constructor(
    private readonly pass: (lane: string) => Promise<void>,
    private readonly track: (what: string, work: Promise<unknown>) => void,
    private readonly isClosed: () => boolean,
  ) {}

  /** Runs a claim pass for the lane, or once more after the one running. */
  claim(lane: string): void {
    if (this.isClosed()) return;
    if (this.running.has(lane)) {
      this.again.add(lane);
      return;
    }
    const pass = this.pass(lane).finally(() => {
      this.running.delete(lane);
      if (this.again.delete(lane)) this.claim(lane);
    });
    this.running.set(lane, pass);
    this.track("claim", pass);
  }

  /** The lane's pass found the session granted by another lane's pass first: run it once more. */
  passAgain(lane: string): void {
    this.again.add(lane);
  }

  /** The passes still running (close waits for them). */
  get inFlight(): Promise<void>[] {
    return [...this.running.values()];
  }
}
