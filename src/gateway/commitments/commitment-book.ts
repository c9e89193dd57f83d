import type { Commitment } from "../../machines/commitment.types.js";
import type { StoredCommitment, TranscriptStore } from "../../ports/store.js";
import { DueIndex } from "./due-index.js";

const DAY_MS = 24 * 3_600_000;

/**
 * The gateway's commitments in memory, always behind the store: every change is written (durably,
 * one after another, in call order) before memory and the due index follow it. Pending commitments
 * sit in the due index; a per-session list of send times answers "sends in the rolling 24 h".
 *
 * @example
 * ```ts
 * const book = new CommitmentBook(store);
 * await book.load();
 * await book.put({ ...commitment, status: "dismissed" });
 * ```
 */
export class CommitmentBook {
  readonly byId = new Map<string, Commitment>();
  readonly index = new DueIndex();
  /** session → dedupeKey → id of its pending commitment. */
  private readonly pendingKeys = new Map<string, Map<string, string>>();
  /** session + dedupeKey → ids of every commitment of that key (any status): dedupe over what is stored. */
  private readonly keyed = new Map<string, Set<string>>();
  /** session → times of its sends, oldest first (only those in the last 24 h are kept). */
  private readonly sends = new Map<string, number[]>();
  private chain: Promise<unknown> = Promise.resolve();
  private writing = 0;
  /** Where the store's change feed was last read (stores with `loadCommitmentChanges`). */
  private cursor: string | undefined;
  /** Pending commitments that carry a send intent (a send on its way, or cut off by a crash). */
  readonly sending = new Set<string>();

  constructor(private readonly store: TranscriptStore) {}

  /** True while a write is queued or in flight. */
  get isBusy(): boolean {
    return this.writing > 0;
  }

  get isDurable(): boolean {
    return (
      typeof this.store.saveCommitments === "function" && typeof this.store.loadCommitments === "function"
    );
  }

  /** Reads every stored commitment; pending ones are scheduled again. */
  async load(): Promise<Commitment[]> {
    const stored = await this.read(false);
    const records = stored.map((record) => record);
    for (const commitment of records) this.remember(commitment);
    return records;
  }

  get(id: string): Commitment | undefined {
    return this.byId.get(id);
  }

  pendingFor(session: string, dedupeKey: string): Commitment | undefined {
    const id = this.pendingKeys.get(session)?.get(dedupeKey);
    return id === undefined ? undefined : this.byId.get(id);
  }

  /**
   * The commitment `id` duplicates, when it does: another of its session and dedupeKey that is on its
   * way out or was sent since `id` was created, or is pending and older (the oldest pending one of a key
   * is the one reviewed). The store may hold two pending of one key (written before a restart, by
   * another process, or imported): dedupe at proposal time alone would review and send both.
   */
  duplicateOf(id: string): Commitment | undefined {
    const commitment = this.byId.get(id);
    if (commitment?.status !== "pending") return undefined;
    for (const otherId of this.keyed.get(keyOf(commitment)) ?? []) {
      const other = this.byId.get(otherId);
      if (!other || otherId === id) continue;
      if (other.status === "sent" && other.sent && other.sent.at >= commitment.createdAt) return other;
      if (other.status !== "pending") continue;
      if (other.sending) return other;
      if (
        other.createdAt < commitment.createdAt ||
        (other.createdAt === commitment.createdAt && otherId < id)
      )
        return other;
    }
    return undefined;
  }

  /** Stores a new version of a commitment, then updates memory. Writes run in call order. */
  put(commitment: Commitment): Promise<Commitment> {
    return this.update(commitment.id, () => commitment);
  }

  /**
   * Applies `change` to the latest version (after every write before it), stores the result, then
   * updates memory. `change` may return undefined to write nothing.
   */
  update(
    id: string,
    change: (current: Commitment | undefined) => Commitment | undefined,
  ): Promise<Commitment> {
    return this.afterWrites(async () => {
      const current = this.byId.get(id);
      const next = change(current);
      if (!next) return current as Commitment;
      await this.store.saveCommitments?.([next]);
      this.remember(next);
      return next;
    });
  }

  /** The store is shared by several processes (it claims commitments cluster-wide). */
  get isShared(): boolean {
    return typeof this.store.claimCommitment === "function";
  }

  /**
   * Takes into memory every stored version newer than the one held (another process made, retried,
   * sent or ended it), after this process's writes in flight: the store is the truth, memory follows.
   * On a store with a change feed only what was written since the last read comes back (this
   * process's own writes included); else every stored commitment. Resolves with the records read.
   */
  refresh(): Promise<number> {
    return this.afterWrites(async () => {
      const records = await this.read(true);
      for (const record of records) {
        const commitment = record;
        const held = this.byId.get(commitment.id);
        if (!held || JSON.stringify(held) !== JSON.stringify(commitment)) this.remember(commitment);
      }
      return records.length;
    });
  }

  /**
   * Whether this process may settle a send cut off on its way (a pending commitment with a send
   * intent): always on a store of one process; on a shared store only once the store gave it this
   * process's claim (the sender's claim ran out, or was this process's own), so a send another
   * process still has on its way is left to its receipt.
   */
  claimCutOff(id: string, now: number): Promise<boolean> {
    if (!this.isShared) return Promise.resolve(true);
    const claimCutOffSend = this.store.claimCutOffSend?.bind(this.store);
    if (!claimCutOffSend) return Promise.resolve(false);
    return this.afterWrites(async () => {
      const { claimed, record } = await claimCutOffSend(id, now);
      if (record) this.remember(record);
      return claimed;
    });
  }

  /**
   * Whether this process may review the commitment now: always, on a store without a cluster-wide
   * claim; else the store's claim decides (refusing it, with `maxPerDay`, while the session's sends and
   * sends in flight cluster-wide reach the limit), and memory takes the stored version it returns
   * (another process may have retried, sent or ended it meanwhile).
   */
  claim(id: string, now: number, maxPerDay?: number): Promise<{ claimed: boolean; quotaFreesAt?: number }> {
    const claimCommitment = this.store.claimCommitment?.bind(this.store);
    if (!claimCommitment) return Promise.resolve({ claimed: true });
    // After this process's writes before it, so the stored version it adopts is not older than them.
    return this.afterWrites(async () => {
      const { claimed, record, quotaFreesAt } = await claimCommitment(
        id,
        now,
        maxPerDay === undefined ? undefined : { maxPerDay },
      );
      if (record) this.remember(record);
      return quotaFreesAt === undefined ? { claimed } : { claimed, quotaFreesAt };
    });
  }

  /** Sends of the session in the 24 h up to `now`. */
  sentInWindow(session: string, now: number): number {
    const times = this.sends.get(session);
    if (!times) return 0;
    while (times.length > 0 && times[0]! <= now - DAY_MS) times.shift();
    if (times.length === 0) this.sends.delete(session);
    return times.length;
  }

  /** When the session may send again (its oldest send in the window leaves it). */
  quotaFreesAt(session: string, now: number): number {
    const oldest = this.sends.get(session)?.[0];
    return oldest === undefined ? now : oldest + DAY_MS;
  }

  /** Every stored commitment, or (`sinceLastRead`, on a store with a change feed) those written since. */
  private async read(sinceLastRead: boolean): Promise<StoredCommitment[]> {
    const changes = this.store.loadCommitmentChanges?.bind(this.store);
    if (!changes) return (await this.store.loadCommitments?.()) ?? [];
    const { records, cursor } = await changes(sinceLastRead ? this.cursor : undefined);
    this.cursor = cursor;
    return records;
  }

  /** Runs `work` after every store call queued before it (calls run one at a time, in call order). */
  private afterWrites<T>(work: () => Promise<T>): Promise<T> {
    this.writing++;
    const run = this.chain.then(work);
    this.chain = run.catch(() => undefined);
    void this.chain.then(() => this.writing--);
    return run;
  }

  private remember(commitment: Commitment): void {
    const previous = this.byId.get(commitment.id);
    this.byId.set(commitment.id, commitment);
    if (commitment.status === "pending" && commitment.sending) this.sending.add(commitment.id);
    else this.sending.delete(commitment.id);
    if (previous && previous.dedupeKey !== commitment.dedupeKey) {
      this.forgetKey(previous);
      this.keyed.get(keyOf(previous))?.delete(previous.id);
    }
    let ids = this.keyed.get(keyOf(commitment));
    if (!ids) {
      ids = new Set();
      this.keyed.set(keyOf(commitment), ids);
    }
    ids.add(commitment.id);
    if (commitment.status === "pending") {
      let keys = this.pendingKeys.get(commitment.session);
      if (!keys) {
        keys = new Map();
        this.pendingKeys.set(commitment.session, keys);
      }
      keys.set(commitment.dedupeKey, commitment.id);
      this.index.schedule(commitment.id, commitment.dueAt);
    } else {
      this.forgetKey(commitment);
      this.index.remove(commitment.id);
    }
    if (commitment.sent && previous?.sent === undefined)
      this.noteSend(commitment.session, commitment.sent.at);
  }

  private forgetKey(commitment: Commitment): void {
    const keys = this.pendingKeys.get(commitment.session);
    if (keys?.get(commitment.dedupeKey) !== commitment.id) return;
    keys.delete(commitment.dedupeKey);
    if (keys.size === 0) this.pendingKeys.delete(commitment.session);
  }

  private noteSend(session: string, at: number): void {
    let times = this.sends.get(session);
    if (!times) {
      times = [];
      this.sends.set(session, times);
    }
    times.push(at);
    times.sort((a, b) => a - b);
  }
}

function keyOf(commitment: Commitment): string {
  return `${commitment.session}\u0000${commitment.dedupeKey}`;
}
