/**
 * The port a gateway of several processes uses for session ownership and the durable inbox
 * (docs/postgres.md). Every inbound message is committed here before its ack; the process that owns a
 * session's live state applies it, wherever it was received. Without one, a gateway runs every session
 * in its own process, as always.
 */
export interface SessionCluster {
  /** This process's name in the cluster. */
  readonly processId: string;
  /** How long a process that forwarded a message waits for the owner's ack (ms). */
  readonly ackWaitMs: number;
  /**
   * Commits the inbound message for its session (a message id already there is a duplicate,
   * cluster-wide) and says who applies it: this process (which becomes the owner if nobody live
   * owns the session; `adopted` then) or the live owner, which is woken.
   */
  accept(message: InboxMessage): Promise<Acceptance>;
  /** Messages waiting for a session this process owns, oldest first (none when it does not own it). */
  waiting(session: string): Promise<InboxEntry[]>;
  /** The owner applied the entry: records its ack (the receiver is told) and takes it out of the wait. */
  applied(entry: InboxEntry, ack: object): Promise<void>;
  /** Takes the entry out of the inbox (a rejected message may be sent again). */
  forget(id: string): Promise<void>;
  /**
   * The ack recorded for a message and the process that applied it (the owner it was sent to, or one
   * that took the session over meanwhile), waiting up to `timeoutMs`; undefined when none came.
   */
  awaitAck(id: string, timeoutMs: number): Promise<{ ack: object; by: string } | undefined>;
  /** Gives a session up; false (and kept) while messages wait for it: apply them first. */
  release(session: string): Promise<boolean>;
  /**
   * How long an idle session stays this process's before it is given up (ms; 0 or absent: at once). A
   * message that comes meanwhile is applied to the live state here, with no release and no reading
   * back of the stored session; a message sent to another process is forwarded here.
   */
  readonly idleHoldMs?: number;
  /** The live owner of each of these sessions (sessions nobody owns are left out). */
  owners(sessions: readonly string[]): Promise<Map<string, string>>;
  /**
   * Where each of these sessions is, cluster-wide (sessions nobody owns and with no lane run are left
   * out): what a process that does not run a session reports about it.
   */
  placements?(sessions: readonly string[]): Promise<Map<string, SessionPlacement>>;
  /**
   * Called for a session with messages waiting for this process: forwarded to it as the owner, or
   * taken over (`adopted`) from an owner whose lease ran out, with its stored work. Returns the
   * function that unsubscribes; sessions are taken over only while someone listens. `polled`: found by
   * the periodic look for waiting messages (the safety net for a lost wake-up), not told.
   */
  onWake(listener: (session: string, adopted: boolean, polled?: boolean) => void): () => void;
  /**
   * Called for a session this process owned whose lease ran out before it was renewed (a long pause,
   * a lost connection) and that another process took meanwhile: its live state here must go. A lapsed
   * lease nobody took (the database was away) is renewed under the same token, and nothing is lost.
   */
  onLost?(listener: (session: string) => void): () => void;
}

/** Where a session is in the cluster, as the database has it. */
export interface SessionPlacement {
  /** The process that owns the session's live state (null: nobody does). */
  owner: string | null;
  /** The process running the session's active turn, and its workload lane (null: no turn runs). */
  runningOn: { process: string; lane: string } | null;
  /** The session's turns waiting for a lane slot. */
  queued: number;
  /** The capacity of the lane it runs or waits in (null: not configured there). */
  capacity: number | null;
}

/** One inbound message as the inbox keeps it. */
export interface InboxMessage {
  session: string;
  messageId: string;
  /** `control` for `/stop`, `/new`, `/queue`; else the inline mode, or `default`. */
  mode: string;
  /** The validated inbound message (or trigger request), replayed by the owner: plain JSON. */
  body: object;
}

/** One inbox row as the owning process reads it: the message, its row id and who received it. */
export interface InboxEntry extends InboxMessage {
  /** The inbox row (a bigint, as text). */
  id: string;
  /** The process that received it (and waits for its ack). */
  receivedBy: string;
}

/** Where the cluster inbox put a message: a duplicate, applied here, or forwarded to its owner. */
export type Acceptance =
  | { kind: "duplicate" }
  | {
      kind: "local";
      id: string;
      adopted: boolean;
      /**
       * No older message of the session waited in the inbox when this one was committed: this
       * process may apply it as it is, without reading the inbox back.
       */
      alone?: boolean;
      /**
       * The inbox ids of the session's older messages that waited when this one was committed (when
       * few did): this process may apply it as it is if they are all its own, applied before it.
       */
      older?: readonly string[];
    }
  | { kind: "remote"; id: string; owner: string };
