/**
 * The store port: durable transcripts (docs/store.md) and the small per-session state a restarted gateway
 * needs to resume (pending follow-ups, recoveries, the turn that was running, commitments).
 *
 * Every implementation (memory, JSONL files, ...) passes the shared contract suite in
 * `test/adapters/store-contract.ts`.
 */
import type { Commitment } from "./commitment.js";
import type { DeliveryClaims } from "./delivery-claims.js";
import type { Sender } from "./sender.js";

/** Fields every stored record carries; assigned by the store on append. */
export interface RecordHeader {
  /** Unique record id. */
  id: string;
  /** 1-based position in the session's transcript, strictly increasing, never reused. */
  seq: number;
  /** Time of the append on the gateway's clock (ms). */
  at: number;
  /** Stable id of the session's transcript (changes only if the transcript is recreated). */
  sessionId: string;
  /** Lifecycle revision: bumped by a reset (`/new`); a new context window starts at each revision. */
  revision: number;
}

/** A user's message in the transcript, with its inbound message id. */
export interface UserRecord {
  role: "user";
  text: string;
  /** The inbound message id. */
  messageId: string;
  /**
   * When the message reached the gateway (ms on its clock). `at` is when the record was stored: later
   * for a message steered into a running turn, which is stored when the turn takes it.
   */
  arrivedAt?: number;
  channel?: string;
  /** Who wrote it, when the channel said (group chats). */
  sender?: Sender;
  /** The platform id an answer replies to, and the platform thread (`InboundMessage.replyTo`, `thread`). */
  replyTo?: string;
  thread?: string;
}

/** The assistant's text in the transcript: a turn's final, with its run and whether it was delivered. */
export interface AssistantRecord {
  role: "assistant";
  text: string;
  runId: string;
  /** Whether a committed receipt with a messageId came back from the channel. */
  delivered: boolean;
  /** Present when delivered. */
  deliveryMessageId?: string;
  /** The deliveryId it was sent under (automatic delivery): this record is the receipt of that intent. */
  deliveryId?: string;
}

/** A tool call the model made, in the transcript. */
export interface ToolCallRecord {
  role: "toolCall";
  callId: string;
  name: string;
  args: unknown;
  runId: string;
}

/** The result of a tool call, in the transcript: every call gets one. */
export interface ToolResultRecord {
  role: "toolResult";
  callId: string;
  status: "done" | "skipped" | "cancelled" | "failed";
  result: unknown;
  runId: string;
}

/** A record the model does not see as a message, such as the undelivered-final marker. */
export interface CustomRecord {
  role: "custom";
  customType: string;
  display: boolean;
  details: Record<string, unknown>;
}

/** What a writer hands to `append`; the store adds the header. */
export type RecordBody = UserRecord | AssistantRecord | ToolCallRecord | ToolResultRecord | CustomRecord;

/** A record as stored and read back. */
export type TranscriptRecord = RecordHeader & RecordBody;

/** The marker appended when a non-empty final was stored but never reached the user. */
export const UNDELIVERED_FINAL = "tiller.undelivered-final";

/**
 * A send about to be made (written, and durable, before the channel is called): `details` holds
 * `{ deliveryId?, kind, text, runId?, channel? }`. Without `details.deliveryId` the id is
 * `<kind>:<record id>` (a final: `reply:<id of this record>`). A restart resends an intent that has no
 * receipt once, with the same deliveryId.
 */
/** The kinds of send an intent records (the channel port's `DeliveryKind`). */
export type DeliveryKindName = "reply" | "ack" | "recovery" | "notice" | "commitment";

/** The `customType` of the durable record written before a channel is called. */
export const DELIVERY_INTENT = "tiller.delivery-intent";

/**
 * The outcome of a send whose intent was written: `details` holds `{ deliveryId, delivered, messageId? }`.
 * A final's receipt is its assistant record (which carries `deliveryId`).
 */
export const DELIVERY_RECEIPT = "tiller.delivery-receipt";

/** Identity of a transcript that writers must present on every append. */
export interface TranscriptHead {
  sessionId: string;
  revision: number;
  /** seq of the last record, 0 when empty. */
  lastSeq: number;
}

/** The store port: per-session append-only transcripts with fenced writers, plus the optional durable state. */
export interface TranscriptStore {
  /**
   * Opens (creating when absent) the transcript of a session key and returns its head. Opening repairs
   * a torn tail left by a crash.
   */
  open(session: string): Promise<TranscriptHead>;

  /**
   * Appends records in order. Resolves only when they are durable. Rejects with `StaleWriterError`, and
   * writes nothing, when `expect` does not match the transcript's current session id and revision.
   */
  append(session: string, records: RecordBody[], expect: ExpectedHead): Promise<TranscriptRecord[]>;

  /** Every record of the session in seq order (all revisions, across rotations). */
  read(session: string): Promise<TranscriptRecord[]>;

  /**
   * The records of the current context window: the latest revision, after the latest rotation point.
   * An undelivered-final marker is always returned with the final it marks.
   */
  readWindow(session: string): Promise<TranscriptRecord[]>;

  /** Starts a new lifecycle revision (a `/new`): later appends must present the returned head. */
  reset(session: string, expect: ExpectedHead): Promise<TranscriptHead>;

  /**
   * Compaction: starts a new context window at the current end of the transcript without losing
   * history (older records stay readable through `read`). A final and the undelivered-final marker
   * that follows it are never split across the rotation point.
   */
  rotate(session: string, expect: ExpectedHead): Promise<TranscriptHead>;

  /**
   * Session keys with a transcript or state in this store, sorted; with `prefix`, only those that
   * start with it (a store that cannot filter may return more: callers check the prefix themselves).
   */
  sessions(prefix?: string): Promise<string[]>;

  /** Durable per-session resume state (JSON); `null` deletes it. Atomic: old or new, never torn. */
  saveState(session: string, state: unknown): Promise<void>;
  loadState(session: string): Promise<unknown | null>;

  /**
   * Durable state of one schedule (its next run time), `null` deletes it; resolves once durable. A store
   * without these methods keeps schedules in memory only: a restart then starts every schedule afresh.
   */
  saveSchedule?(id: string, state: ScheduleState | null): Promise<void>;
  /** Every saved schedule state by schedule id. */
  loadSchedules?(): Promise<Record<string, ScheduleState>>;

  /** Releases files and locks. */
  close(): Promise<void>;

  /**
   * Durably stores commitment records (JSON objects with a string `id`): each replaces the stored
   * version with the same id. Resolves once durable; records of one call land together, in order.
   * Optional: a gateway with commitments enabled refuses a store without it.
   */
  saveCommitments?(records: readonly StoredCommitment[]): Promise<void>;
  /** The latest stored version of every commitment, in the order they were first stored. */
  loadCommitments?(): Promise<StoredCommitment[]>;
  /**
   * The latest version of each commitment written after `after` (a cursor this method returned before;
   * undefined: every stored commitment, in the order first stored), and the cursor to pass next time.
   * Every write of any process after the returned cursor comes back at the next call. For stores that
   * several processes share: each heartbeat tick then reads what changed, not every commitment.
   * Optional: without it the gateway reads them all with `loadCommitments`.
   */
  loadCommitmentChanges?(after: string | undefined): Promise<CommitmentChanges>;
  /**
   * Cluster-wide claim, for stores that several gateway processes share: takes the claim of a
   * commitment for this store's process when it is pending and due at `now` (gateway clock), has no
   * send in flight and no live claim of another process. Of processes claiming one at once, exactly one
   * gets it; a claim not ended by its holder's next save runs out after the store's lease. Resolves with
   * the latest stored version either way. With `limits.maxPerDay`, it is also refused (with
   * `quotaFreesAt`) while the session's sends in the 24 h up to `now` plus its other commitments in
   * flight reach the limit, counted cluster-wide. A store without it: each process reviews what it
   * holds (one process per store).
   */
  claimCommitment?(id: string, now: number, limits?: CommitmentClaimLimits): Promise<CommitmentClaim>;
  /**
   * With `claimCommitment`: claims a pending commitment that carries a send intent written under a
   * claim that has run out (its process died in the middle of the send) or under this store's own
   * claim, so that this process settles it (sent, receipt unknown: never sent again). A live claim of
   * another process is refused: its send may still be on its way.
   */
  claimCutOffSend?(id: string, now: number): Promise<CommitmentClaim>;

  /**
   * Cluster-wide dedupe of inbound message ids, for stores that several gateway processes share:
   * records `messageId` as seen for the session at `at` (gateway clock) and resolves true when it is
   * new, or was last seen before `since`; false when it was seen since (by any process). Optional: a
   * store without it leaves dedupe to each process.
   */
  claimMessageId?(session: string, messageId: string, at: number, since: number): Promise<boolean>;
  /** Forgets a claimed id (the message was turned away, so a resend is not a duplicate). */
  releaseMessageId?(session: string, messageId: string): Promise<void>;
  /**
   * Cluster-wide claims of sends, for stores that several gateway processes share: a channel is called
   * for a deliveryId by one process at a time, and never again once a send of it has landed. A store
   * without it: one process per store, whose own ledger (intent, receipt) is enough.
   */
  readonly deliveryClaims?: DeliveryClaims;
}

/** The outcome of {@link TranscriptStore.claimCommitment}. */
export interface CommitmentClaim {
  /** This process holds the claim: it may review the commitment and write its send intent. */
  claimed: boolean;
  /** The latest stored version (undefined for an unknown id). */
  record: StoredCommitment | undefined;
  /**
   * Set when the claim was refused for the session's `maxPerDay`: the earliest time (gateway clock) a
   * claim may succeed (`now` while sends in flight hold the quota, else when the oldest send in the
   * window leaves it).
   */
  quotaFreesAt?: number;
}

/** What {@link TranscriptStore.claimCommitment} checks beyond the claim itself. */
export interface CommitmentClaimLimits {
  /**
   * Sends per session per rolling 24 h (`commitments.maxPerDay`): refused while the session's sends in
   * the window plus its commitments in flight (with a send intent, or a live claim) reach it.
   */
  maxPerDay?: number;
}

/** The outcome of {@link TranscriptStore.loadCommitmentChanges}. */
export interface CommitmentChanges {
  /** The latest version of each commitment written since the cursor given. */
  records: StoredCommitment[];
  /** Where the next call starts (opaque to the caller). */
  cursor: string;
}

/** A commitment as the store keeps it: the record of ./commitment.ts, stored as JSON. */
export type StoredCommitment = Commitment;

/** What a store keeps of a schedule so that a restart neither repeats nor skips a run. */
export interface ScheduleState {
  /** The next slot to run (ms on the gateway clock); null once a one-off schedule has run. */
  nextRunAt: number | null;
  /** The slot that ran last, if any. */
  lastRunAt?: number;
  /** Where `everyMs` slots are counted from (the schedule's creation). */
  anchor: number;
  /** The timing the state was computed for; a changed schedule starts afresh. */
  spec: string;
  /**
   * The slot whose turn is being triggered: written (durably) before the trigger, cleared by the state
   * saved after it. A start that finds it settles that slot once (docs/triggers.md, "Durability").
   */
  pending?: number;
  /** What the last run's trigger said (`started`, `queued`, `dropped`, `accepted`, ...), and why. */
  lastDisposition?: string;
  lastReason?: string;
}

/** Which writer an append expects to be: the session id and lifecycle revision it read. */
export interface ExpectedHead {
  sessionId: string;
  revision: number;
}
