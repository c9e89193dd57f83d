import { mkdir, readdir, rm } from "node:fs/promises";
import { join, resolve } from "node:path";
import { nanoid } from "nanoid";
import { ConfigError } from "../../errors.js";
import { assertSessionKey, sessionFileName } from "../../ports/session-key.js";
import type {
  ExpectedHead,
  RecordBody,
  ScheduleState,
  StoredCommitment,
  TranscriptHead,
  TranscriptRecord,
  TranscriptStore,
} from "../../ports/store.js";
import { checkCommitmentId } from "../memory-store.js";
import { COMMITMENTS_FILE, CommitmentLog } from "./commitment-log.js";
import { DirLock } from "./dir-lock.js";
import { fsyncDir, replaceDurable } from "./durable-file.js";
import { GroupCommit, type StoreStats } from "./group-commit.js";
import { encodeLine, encodeState, readFileKey, readState } from "./jsonl-file.js";
import { ScheduleLog } from "./schedule-log.js";
import {
  createSessionFile,
  type SessionEntry as Entry,
  loadSessionFile,
  type SessionFiles,
} from "./session-file.js";
import { encodeIndex, indexFile, writeIndex } from "./transcript-index.js";
import { checkExpect, metaOf, stampRecords, stateJson } from "./transcript-log.js";

export interface JsonlStoreOptions {
  /** The store directory; created when absent. */
  dir: string;
  /** Clock for record `at` stamps. @default `Date.now` */
  now?: () => number;
  /**
   * Group-commit window in ms; 0 batches the appends that arrive within one event-loop turn.
   * @default 0
   */
  groupCommitMs?: number;
  /** Append handles kept open between batches. @default 128 */
  maxOpenFiles?: number;
}

/**
 * The embedded default store: one append-only JSONL transcript per session (format in docs/store.md),
 * group-committed appends that resolve only once synced to disk, torn-tail repair with quarantine on
 * open, a lock on the directory, and atomic per-session state files. A transcript is cached after its
 * first load as line texts: a reopen verifies checksums without parsing, and each read parses just
 * what it returns (that parse is the copy the caller owns).
 *
 * @example
 * ```ts
 * const store = await JsonlStore.openDir({ dir: ".tiller-store" });
 * const head = await store.open("telegram:42");
 * await store.append("telegram:42", [{ role: "user", text: "hi", messageId: "m1" }], head);
 * console.log(store.stats()); // { records: 1, fsyncs: 3 }
 * await store.close();
 * ```
 */
export class JsonlStore implements TranscriptStore {
  readonly dir: string;
  private readonly now: () => number;
  private readonly counters: StoreStats = { records: 0, fsyncs: 0 };
  /** What the transcript files' load and create (session-file.ts) use of this store. */
  private readonly files: SessionFiles;
  private readonly commit: GroupCommit;
  private ready: Promise<void> | undefined;
  private isReady = false;
  private isClosed = false;
  private lock: DirLock | undefined;
  private readonly inflight = new Set<Promise<unknown>>();
  private readonly loaded = new Map<string, Entry>();
  private readonly loading = new Map<string, Promise<Entry | undefined>>();
  /** File base name → session key, for names this instance has already seen a header for. */
  private readonly keysByName = new Map<string, string>();
  private readonly stateChains = new Map<string, Promise<unknown>>();
  private commitmentLog: CommitmentLog | undefined;
  private readonly schedules: ScheduleLog;

  constructor(options: JsonlStoreOptions) {
    if (typeof options?.dir !== "string" || options.dir === "")
      throw new ConfigError("dir", "a directory path", options?.dir);
    this.dir = resolve(options.dir);
    this.schedules = new ScheduleLog(this.dir);
    this.now = options.now ?? Date.now;
    this.files = {
      dir: this.dir,
      now: () => this.now(),
      counters: this.counters,
      track: (promise) => this.track(promise),
    };
    this.commit = new GroupCommit({
      windowMs: options.groupCommitMs ?? 0,
      maxOpenFiles: options.maxOpenFiles ?? 128,
      stats: this.counters,
      onBroken: (target) => this.evict((target as Entry).key),
    });
  }

  /** Constructs the store and takes the directory lock; rejects with `StoreLockedError` when held. */
  static async openDir(options: JsonlStoreOptions): Promise<JsonlStore> {
    const store = new JsonlStore(options);
    await store.init();
    return store;
  }

  /** Creates the directory and takes its lock. Idempotent; every other method calls it first. */
  init(): Promise<void> {
    if (this.isClosed) return Promise.reject(closedError());
    this.ready ??= (async () => {
      await mkdir(this.dir, { recursive: true });
      this.lock = await DirLock.acquire(this.dir);
      this.isReady = true;
    })().catch((error) => {
      this.ready = undefined; // a locked directory may be free on the next try
      throw error;
    });
    return this.ready;
  }

  /** Records appended and fsyncs made (appends, creations, repairs, state writes) by this instance. */
  stats(): StoreStats {
    return { ...this.counters };
  }

  /** True while file I/O is queued or in flight (a simulated clock must wait for it). */
  isBusy(): boolean {
    return this.inflight.size > 0 || this.commit.isBusy;
  }

  async open(session: string): Promise<TranscriptHead> {
    const entry = await this.entry(session, true);
    return { ...entry!.tip };
  }

  async append(session: string, records: RecordBody[], expect: ExpectedHead): Promise<TranscriptRecord[]> {
    const entry = await this.entry(session, false);
    // From the stale check to the enqueue nothing awaits: concurrent appends keep their call order.
    checkExpect(session, entry?.tip, expect);
    const tip = entry!.tip;
    const stamped = stampRecords(records, tip, this.now(), nanoid);
    if (stamped.length === 0) return [];
    tip.lastSeq += stamped.length;
    const lines = stamped.map(({ json }) => encodeLine(json));
    const data = lines.join("");
    await this.commit.write(entry!, data, stamped.length, () => {
      for (const { record, json } of stamped) {
        // Cannot fail while seqs come from the tip; if it ever did, the disk is the truth: reload it.
        if (!entry!.log.push(json, metaOf(record))) this.evict(session);
      }
      entry!.tracker.recordsWritten(
        data,
        lines,
        stamped.map(({ json }) => json),
      );
      this.indexIfDue(entry!);
    });
    // The log keeps only the text, so these objects are the caller's own.
    return stamped.map(({ record }) => record);
  }

  async read(session: string): Promise<TranscriptRecord[]> {
    const entry = await this.entry(session, false);
    return entry?.log.records() ?? [];
  }

  async readWindow(session: string): Promise<TranscriptRecord[]> {
    const entry = await this.entry(session, false);
    return entry?.log.window() ?? [];
  }

  async reset(session: string, expect: ExpectedHead): Promise<TranscriptHead> {
    const entry = await this.entry(session, false);
    checkExpect(session, entry?.tip, expect);
    const tip = entry!.tip;
    tip.revision += 1;
    const head = { ...tip };
    const line = encodeLine(JSON.stringify({ type: "reset", revision: tip.revision, at: this.now() }));
    await this.commit.write(entry!, line, 0, () => {
      entry!.log.reset();
      entry!.tracker.linesWritten(line, 1);
    });
    return head;
  }

  async rotate(session: string, expect: ExpectedHead): Promise<TranscriptHead> {
    const entry = await this.entry(session, false);
    checkExpect(session, entry?.tip, expect);
    const head = { ...entry!.tip };
    const line = encodeLine(
      JSON.stringify({ type: "rotate", revision: head.revision, afterSeq: head.lastSeq, at: this.now() }),
    );
    await this.commit.write(entry!, line, 0, () => {
      entry!.log.rotate(head.lastSeq);
      entry!.tracker.linesWritten(line, 1);
    });
    return head;
  }

  async sessions(prefix?: string): Promise<string[]> {
    await this.checkOpen();
    const keys = new Set<string>();
    for (const name of await readdir(this.dir)) {
      const base = name.endsWith(".jsonl")
        ? name.slice(0, -6)
        : name.endsWith(".state.json")
          ? name.slice(0, -11)
          : "";
      if (!base) continue;
      let key = this.keysByName.get(base);
      if (key === undefined) {
        key = await this.track(readFileKey(join(this.dir, name), base));
        if (key !== undefined) this.keysByName.set(base, key);
      }
      if (key !== undefined && (prefix === undefined || key.startsWith(prefix))) keys.add(key);
    }
    return [...keys].sort();
  }

  async saveState(session: string, state: unknown): Promise<void> {
    await this.checkOpen(session);
    const base = sessionFileName(session);
    const file = join(this.dir, `${base}.state.json`);
    const json = state === null ? undefined : stateJson(state);
    await this.serializeState(session, async () => {
      if (json === undefined) {
        await rm(file, { force: true });
        await fsyncDir(this.dir);
        this.counters.fsyncs++;
        return;
      }
      await replaceDurable(file, this.dir, encodeState(session, json));
      this.counters.fsyncs += 2;
      this.keysByName.set(base, session);
    });
  }

  async loadState(session: string): Promise<unknown | null> {
    await this.checkOpen(session);
    const file = join(this.dir, `${sessionFileName(session)}.state.json`);
    return this.serializeState(session, () => readState(file, session));
  }

  async saveCommitments(records: readonly StoredCommitment[]): Promise<void> {
    await this.checkOpen();
    if (records.length === 0) return;
    for (const record of records) checkCommitmentId(record);
    // Encoding first: a record JSON cannot carry leaves the whole call unwritten.
    const copies = records.map((record) => JSON.parse(stateJson(record)) as StoredCommitment);
    await this.track(this.commitments().append(copies));
  }

  async loadCommitments(): Promise<StoredCommitment[]> {
    await this.checkOpen();
    return this.track(this.commitments().load());
  }

  async saveSchedule(id: string, state: ScheduleState | null): Promise<void> {
    await this.checkOpen();
    await this.track(this.schedules.save(id, state));
  }

  async loadSchedules(): Promise<Record<string, ScheduleState>> {
    await this.checkOpen();
    return this.track(this.schedules.load());
  }

  /** Waits for queued writes, closes files and releases the directory lock. Later calls reject. */
  async close(): Promise<void> {
    if (this.isClosed) return;
    this.isClosed = true;
    await this.ready?.catch(() => undefined);
    // Loads may still repair a tail, and state writes may be mid-rename: finish them under the lock.
    while (this.inflight.size > 0 || this.commit.isBusy) {
      await Promise.all(this.inflight);
      await this.commit.drain();
    }
    await this.commit.closeFiles();
    await this.indexGrown();
    // A closed store answers nothing: let its caches go even if the instance is still referenced.
    this.loaded.clear();
    this.loading.clear();
    await this.lock?.release();
  }

  private async checkOpen(session?: string): Promise<void> {
    if (session !== undefined) assertSessionKey(session);
    if (this.isClosed) throw closedError();
    if (!this.isReady) await this.init();
  }

  /** The loaded session, loading it on first use; `create` makes a new transcript when there is none. */
  private async entry(session: string, create: boolean): Promise<Entry | undefined> {
    const hit = this.loaded.get(session);
    if (hit && this.isReady && !this.isClosed) return hit;
    await this.checkOpen(session);
    const pending = this.loading.get(session) ?? this.startLoad(session, this.loadFromDisk(session));
    const entry = await pending;
    if (entry || !create) return entry;
    // Only the first creator replaces the load; anyone who awaited the old promise follows the new one.
    if (this.loading.get(session) !== pending) return this.entry(session, create);
    return this.startLoad(session, this.createOnDisk(session));
  }

  private startLoad(session: string, work: Promise<Entry | undefined>): Promise<Entry | undefined> {
    const promise = this.track(work).then(
      (entry) => {
        if (entry && this.loading.get(session) === promise) this.loaded.set(session, entry);
        return entry;
      },
      (error) => {
        if (this.loading.get(session) === promise) this.loading.delete(session);
        throw error;
      },
    );
    this.loading.set(session, promise);
    return promise;
  }

  /**
   * Writes the index of a transcript when it is due (IndexTracker.due), in the background: a crash
   * leaves at most a quarter of a long file to scan on the next load.
   */
  private indexIfDue(entry: Entry, closing = false): Promise<void> | undefined {
    const tracker = entry.tracker;
    if (!tracker.due(closing)) return undefined;
    const index = tracker.index(entry.key, entry.log);
    if (!index) return undefined;
    const bytes = encodeIndex(index); // now: the log goes on growing
    return this.track(tracker.write(index.covered, () => writeIndex(indexFile(entry.path), bytes))).catch(
      () => {}, // a cache: the next load scans what no index covers
    );
  }

  /** At close(): indexes each transcript of INDEX_AFTER_BYTES or more with anything unindexed, from memory. */
  private async indexGrown(): Promise<void> {
    await Promise.all(
      [...this.loaded.values()].map((entry) => (entry.broken ? undefined : this.indexIfDue(entry, true))),
    );
  }

  private async loadFromDisk(session: string): Promise<Entry | undefined> {
    const entry = await loadSessionFile(this.files, session);
    if (entry) this.keysByName.set(sessionFileName(session), session);
    return entry;
  }

  private async createOnDisk(session: string): Promise<Entry> {
    const entry = await createSessionFile(this.files, session);
    this.keysByName.set(sessionFileName(session), session);
    return entry;
  }

  private serializeState<T>(session: string, work: () => Promise<T>): Promise<T> {
    const run = (this.stateChains.get(session) ?? Promise.resolve()).then(work);
    const settled = run.catch(() => undefined);
    this.stateChains.set(session, settled);
    void settled.then(() => {
      if (this.stateChains.get(session) === settled) this.stateChains.delete(session);
    });
    return this.track(run);
  }

  private commitments(): CommitmentLog {
    this.commitmentLog ??= new CommitmentLog(join(this.dir, COMMITMENTS_FILE), this.dir);
    return this.commitmentLog;
  }

  private evict(session: string): void {
    this.loaded.delete(session);
    this.loading.delete(session);
  }

  private track<T>(promise: Promise<T>): Promise<T> {
    const settled = promise.then(
      () => undefined,
      () => undefined,
    );
    this.inflight.add(settled);
    void settled.then(() => this.inflight.delete(settled));
    return promise;
  }
}

function closedError(): ConfigError {
  return new ConfigError("store", "an open store (this JsonlStore was closed)", "a call after close()");
}
