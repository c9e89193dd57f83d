/**
 * The observability stream: every decision Tiller makes is one event. {@link TillerEventMap} is the
 * catalogue: each event name maps to its payload, documented where it is declared; {@link TillerEvent}
 * is derived from it as a discriminated union on `type`, so `switch (event.type)` narrows each case to
 * its own fields. `docs/events.md` is generated from this file (`npm run docs`; `npm test` fails when it
 * drifts).
 *
 * Names are dotted, a noun then what happened to it (`lane.started`, `recheck.fired`). Things that start
 * and end come in pairs, and the end is emitted on failure too (`turn.started`/`turn.ended`,
 * `model.called`/`model.ended`, `tool.started`/`tool.ended`, `lane.started`/`lane.ended`).
 *
 * Adding an event is one entry in {@link TillerEventMap}: its name, a TSDoc line that says when it is
 * emitted, and its fields (`InSession`/`InTurn` add `session`/`runId`). The emitters (`emit` of the
 * gateway and of the actors, the machines' `emitted` types, the lane scheduler's `onEvent`) accept it at
 * once; run `npm run docs` to update the catalogue.
 *
 * @example
 * ```ts
 * const hub = new EventHub();
 * const off = hub.subscribe((event) => {
 *   if (event.type === "recheck.fired") console.log(event.reason, event.pass);
 * });
 * hub.emit({ at: 0, type: "lane.resumed" });
 * off();
 * ```
 */

import type { RunError } from "./errors.js";
import type { Ack } from "./policy/ack.js";
import type { DeliveryMode } from "./policy/delivery.js";
import type { Priority } from "./policy/lane-priority.js";
import type { Sender } from "./policy/sender.js";
import type { DetectorName } from "./policy/stale-detector.js";
import type { RecheckFigures, StaleReason } from "./policy/stale-reply.js";
import type { DeliveryKind } from "./ports/channel.js";
import type { ModelUsage } from "./ports/model.js";

/** Fields of an event about one session. */
export interface InSession {
  /** The session key (`telegram:42`). */
  session: string;
}

/** Fields of an event inside a turn. */
export interface InTurn extends InSession {
  /** The turn's run id, unique across restarts. */
  runId: string;
}

/** Fields of a lane scheduler event about one task. */
export interface LaneTask {
  /** The workload lane (`main`, `cron`, ...). */
  lane: string;
  /** The session the task belongs to, when it has one. */
  session?: string;
  /** The scheduler's id for the task, unique in its process. */
  entryId: number;
}

/** Where a waiting (or starting) task stands. */
export interface LaneWait extends LaneTask {
  waitedMs: number;
  /** `session`: behind the session's running task; `slot`: behind the lane's capacity. */
  waitingFor: "session" | "slot";
  /** True on the report made as the task starts. */
  starting: boolean;
  queueAhead: number;
  activeAhead: number;
  activeNow: number;
  queueBehind: number;
}

/** Identifies one model call of a turn. */
export interface ModelCall extends InTurn {
  /** 1-based model call within the turn. */
  call: number;
  /** This call is a stale-reply re-check. */
  recheck: boolean;
  /** This call belongs to a stranded-reply recovery turn. */
  recovery: boolean;
  /** This call is a commitment review. */
  review: boolean;
}

/** A tool call of a turn. */
export interface ToolCallFields {
  callId: string;
  name: string;
  args: unknown;
}

/** Fields of an event about one commitment. */
export interface InCommitment extends InSession {
  id: string;
}

/** Who decided a re-check verdict, and the figures it was decided on. */
export interface RecheckDecision {
  /** `built-in` signals, or the gateway's own `staleReplyRecheck.detect`. */
  detector: DetectorName;
  /** The gateway's detector failed and the built-in signals decided instead. */
  fallback: boolean;
  /** The overlaps, the matched complaint pattern and the thresholds behind the verdict. */
  figures: RecheckFigures;
}

/** What a durable write that failed was for. */
export type StoreOp = "turn" | "final" | "marker" | "state";

/**
 * Every event name and its payload. Each event also carries `type` (its name) and `at` (milliseconds on
 * the gateway's clock).
 */
export interface TillerEventMap {
  // Gateway
  /** `start()` finished resuming what an earlier process left. */
  "gateway.started": Record<never, never>;
  /** `drain()` was called: new messages are refused, active turns finish. */
  "gateway.draining": Record<never, never>;
  /** `stop()` finished: lanes drained, sessions stopped, the store closed. */
  "gateway.stopped": Record<never, never>;
  /** An inbound message got its acknowledgement (the `Ack` that `receive()` returns). */
  "message.acked": Ack & {
    /** Who sent it (absent: the session's anonymous user). */
    sender?: Sender;
    /** For a turn nobody typed: its trigger (`cron`, `heartbeat`, ...). */
    trigger?: string;
  };
  /** Several processes: the message went to the process that owns its session (`confirmed`: its ack came back in time). */
  "message.forwarded": InSession & { messageId: string; owner: string; confirmed: boolean };
  /** A message left its turn or queue without being answered (`/stop`, `/new`, the queue cap). */
  "message.dropped": InSession & { runId?: string; messageId: string; reason: string; summary?: string };
  /** The built-in `message` tool sent a visible message. */
  "message.sent": InTurn & { messageId: string; kind: DeliveryKind };

  // Sessions
  /** A session's actor stopped on an internal error; its messages are kept. */
  "session.crashed": InSession & { error: string };
  /** A restarted gateway resumed the session (`note` says what it found and did). */
  "session.resumed": InSession & { note: string };
  /** Several processes: this process took the session (nobody live owned it); `resumed`: with stored work. */
  "session.adopted": InSession & { resumed: boolean };
  /**
   * Several processes: this process's ownership of the session ran out before it was renewed; its live
   * state here was stopped (the next owner resumes the session from the store).
   */
  "session.lost": InSession;
  /** `/new` started a fresh conversation (a new transcript revision). */
  "session.reset": InSession;
  /** The session's window reached `limits.maxWindowRecords`: the model starts from a fresh window. */
  "transcript.rotated": InTurn & { windowRecords: number };

  // Turns
  /** A turn started with these messages. */
  "turn.started": InTurn & {
    kind: "turn" | "recovery";
    messageIds: string[];
    /** What started the turn: `user`, or the trigger of a turn nobody typed (`cron`, `heartbeat`, ...). */
    trigger?: string;
  };
  /**
   * A turn ended, whatever the outcome: `error` says why a failed turn failed, `reason` why an aborted
   * one stopped (`/stop`, an interrupting message, `/new`, a lane timeout).
   */
  "turn.ended": InTurn & {
    status: "done" | "aborted" | "failed";
    error?: RunError;
    reason?: string;
    /** The token usage of the turn's model calls, summed, when the provider reported any. */
    usage?: ModelUsage;
  };
  /** A cleared or draining lane refused the turn: its messages wait in the queue again. */
  "turn.requeued": InSession & { messageIds: string[]; reason: string };
  /** A steering message reached the running turn before its next model call. */
  "steer.injected": InTurn & {
    messageIds: string[];
    /** An edited message steered in as the correction of one the turn already had. */
    edit?: true;
  };
  /**
   * Messages acked `steered` that the run ended without showing to the model (it was already writing
   * its final text, with no re-check left): each is answered by a turn of its own. The ack was made
   * before the outcome was known; this says what happened.
   */
  "steer.missed": InTurn & { messageIds: string[]; reason: string };

  // Model
  /** A model call starts; `userTexts` and `messageIds` are the user messages of this turn it sees. */
  "model.called": ModelCall & {
    latestUser: string;
    userTexts: string[];
    messageIds: string[];
    /** On a commitment review's call (`review: true`): the commitment it reviews. */
    commitmentId?: string;
    /** The senders of the turn's messages in this call (`null`: the anonymous user). */
    senders?: Array<string | null>;
    /** The turn's trigger: `user`, or what started a turn nobody typed. */
    trigger?: string;
  };
  /** Text the model streams: a draft a re-check may replace; only the final is delivered. */
  "model.delta": ModelCall & { text: string };
  /**
   * A model call ended, whatever the outcome (`done`, `failed` with `error`, `aborted` with its turn),
   * after `durationMs`; a done call says how many tool calls and how much text it returned, and the
   * finish reason and token usage when the provider reports them.
   */
  "model.ended": ModelCall & {
    status: "done" | "failed" | "aborted";
    durationMs: number;
    toolCalls?: number;
    textLength?: number;
    finishReason?: string;
    usage?: ModelUsage;
    error?: RunError;
  };

  // Tools
  /** A tool call starts. */
  "tool.started": InTurn & ToolCallFields;
  /** A tool call ended, whatever the outcome (`status` as stored in the transcript). */
  "tool.ended": InTurn &
    ToolCallFields & {
      /** `refused`: a commitment review called a tool that is not read-only; it did not run. */
      status: "done" | "failed" | "cancelled" | "skipped" | "refused";
    };
  /** A tool call's arguments did not fit its schema: the tool never ran, the model reads `problems`. */
  "tool.argsInvalid": InTurn & { callId: string; name: string; problems: string[] };
  /** A tool call the turn's authority does not cover: it did not run, the model reads who lacks what. */
  "tool.refused": InTurn & {
    callId: string;
    name: string;
    requires: string[];
    lacking: Array<{ sender: string | null; missing: string[] }>;
  };
  /** A tool call was skipped for a steering message (never started). */
  "tool.skipped": InTurn & ToolCallFields & { reason: string };
  /** A tool call was given up after `limits.toolTimeoutMs` (a cancellable tool is cancelled). */
  "tool.timeout": InTurn & { callId: string; name: string; timeoutMs: number };
  /** @deprecated The same as `tool.timeout`, under its earlier name; emitted next to it. */
  "tool.timedOut": InTurn & { callId: string; name: string; timeoutMs: number };

  // Stale-reply re-check
  /** The draft did not answer the newest user message: the model drafts once more. */
  "recheck.fired": InTurn & RecheckDecision & { reason: StaleReason; detail: string; pass: number };
  /** The draft looked stale but no re-check runs: `limit` (passes used up) or `disabled`. */
  "recheck.skipped": InTurn &
    RecheckDecision & { reason: "limit" | "disabled"; signal: StaleReason; detail: string };
  /** The gateway's own detector threw, timed out or gave no verdict: the built-in signals decided. */
  "recheck.detectorFailed": InTurn & { error: RunError; fallback: "built-in" };

  // Delivery
  /** The final reached the user (a committed receipt). `stored: false` when `/new` came meanwhile. */
  "final.delivered": InTurn & {
    messageId?: string;
    stored?: false;
    /** The delivery's stable id (the same across a resend after a crash). */
    deliveryId?: string;
    /** Delivered by the one resend of an intent a crash left without a receipt. */
    resent?: true;
  };
  /** A non-empty final was stored but did not reach the user. */
  "final.undelivered": InTurn & { reason: string };
  /** The final was empty: nothing is sent. */
  "final.silent": InTurn;
  /**
   * A channel send failed or gave no `messageId`. `outcome`: `not-delivered` (the platform does not
   * have it), `permanent` (refused for good, never retried) or `unknown` (it may have arrived).
   */
  "delivery.failed": InSession & {
    runId?: string | undefined;
    kind: DeliveryKind;
    reason: string;
    deliveryId?: string | undefined;
    outcome?: "not-delivered" | "permanent" | "unknown";
  };
  /** A send refused with `retryAfterMs` is tried once more after that long. */
  "delivery.retried": InSession & {
    runId?: string | undefined;
    kind: DeliveryKind;
    deliveryId?: string | undefined;
    afterMs: number;
  };
  /** A send answered with a receipt after `delivery.sendTimeoutMs`: it counts as delivered. */
  "delivery.late": InSession & {
    runId?: string | undefined;
    kind: DeliveryKind;
    deliveryId?: string | undefined;
    timeoutMs: number;
  };
  /** The channel's `reconcile` was asked about a send of unknown outcome, and what it answered. */
  "delivery.reconciled": InSession & {
    runId?: string | undefined;
    kind: DeliveryKind;
    deliveryId: string;
    answer: "delivered" | "not-delivered" | "unknown";
  };
  /** After a restart: an intent without a receipt was sent once more, under the same `deliveryId`. */
  "delivery.resent": InTurn & { deliveryId: string; kind: DeliveryKind; delivered: boolean };
  /** The durable `sending` intent could not be written: the send goes out without crash safety. */
  "delivery.intentFailed": InSession & {
    runId?: string | undefined;
    kind: DeliveryKind;
    deliveryId: string;
    error: string;
  };
  /** A send's receipt could not be written after the send. */
  "delivery.receiptFailed": InSession & { deliveryId: string; error: string };
  /** The hidden undelivered-final marker is durable. */
  "marker.appended": InTurn & { finalSeq: number };
  /** A stranded final got its one recovery, queued at the front of the session. */
  "recovery.queued": InTurn & { deliveryMode: DeliveryMode };
  /** The recovery reached the user. */
  "recovery.delivered": InTurn & { strandedRunId?: string | undefined };
  /** The recovery stranded too: the user gets the could-not-deliver notice. */
  "recovery.failed": InTurn & { strandedRunId?: string | undefined };
  /** The could-not-deliver notice was sent (`delivered` says whether the channel took it). */
  "notice.sent": InTurn & { delivered: boolean };

  // Store failures
  /**
   * A durable write failed. `op` says which: `turn` (the turn's records), `final` (the final),
   * `marker` (the undelivered-final marker), `state` (the session's pending work).
   */
  "store.failed": InSession & { op: StoreOp; runId?: string; error: string; delivered?: boolean };
  /** `store.failed` with `op: "turn"`, under its earlier name; emitted next to it. */
  "turn.storeFailed": InTurn & { error: string };
  /** `store.failed` with `op: "final"`, under its earlier name; emitted next to it. */
  "final.storeFailed": InTurn & { delivered?: boolean; error: string };
  /** `store.failed` with `op: "marker"`, under its earlier name; emitted next to it. */
  "marker.storeFailed": InTurn & { error: string };
  /** `store.failed` with `op: "state"`, under its earlier name; emitted next to it. */
  "state.saveFailed": InSession & { error: string };
  /** A state save failed and is tried again (`attempt` of 3) before the ack. */
  "state.saveRetried": InSession & { attempt: number; error: string };

  // Commitments
  /** The model proposed a follow-up with the built-in `commitment` tool (validated fields). */
  "commitment.proposed": InTurn & {
    kind: "open_loop" | "deadline_check" | "event_check_in" | "care_check_in";
    reason: string;
    suggestedText: string;
    dedupeKey: string;
    confidence: number;
    dueWindow: { earliestMs?: number; latestMs?: number };
    source: string;
  };

  // Lanes
  /** A task waits for its session or a slot. */
  "lane.enqueued": LaneTask & { priority: Priority };
  /** A task got its slot and runs. */
  "lane.started": LaneTask & { waitedMs: number };
  /** A task waited longer than `warnAfterMs` (reported again when it starts). */
  "lane.waitExceeded": LaneWait;
  /** A task ended, whatever the outcome. */
  "lane.ended": LaneTask & { status: "done" | "failed" | "timedOut" };
  /** A task ran past its `timeoutMs`; its slot is free and its late result is dropped. */
  "lane.timeout": LaneTask & { timeoutMs: number | undefined };
  /** The result of a task that had timed out arrived and was dropped. */
  "lane.lateResultDropped": LaneTask;
  /** A waiting task's signal aborted: it left the lane without running. */
  "lane.aborted": LaneTask;
  /** `clear(lane)` rejected the lane's waiting tasks. */
  "lane.cleared": { lane: string; count: number };
  /** `setCapacity(lane, n)` changed a lane's capacity. */
  "lane.capacityChanged": { lane: string; capacity: number };
  /** A task was refused because the scheduler drains. */
  "lane.rejected": { lane: string; session?: string | undefined; reason: string };
  /** `drain()` began: `active` tasks still run, `queued` wait (cluster lanes leave it out: their queue is in the database). */
  "lane.draining": { active: number; queued?: number };
  /** `resume()` admits work again. */
  "lane.resumed": Record<never, never>;
  /** Cluster lanes: a run's lease ran out or was taken over; its later writes are refused. */
  "lane.leaseLost": { lane: string; session?: string | undefined; entryId: number; fence: number };
  /** Cluster lanes: a dead process's claim was reaped, so its session can run elsewhere. */
  "lane.reaped": { lane: string; session?: string | undefined; owner: string };

  // Turns nobody typed (docs/triggers.md)
  /** A tool started a child turn (a subagent) under `child`, in `lane`. */
  "subagent.started": InTurn & { child: string; lane: string };
  /** The child turn ended (`status` of its run). */
  "subagent.ended": InTurn & { child: string; lane: string; status: string };
  /** The child's final (never sent to a channel), handed back to the tool that started it. */
  "subagent.finished": InTurn & { status: string; final: string; error?: string };
  /**
   * A schedule's slot ran: what the triggered turn's ack said. `why`: `due`, `missed` (came while the
   * process was down) or `interrupted` (a crash cut off its trigger before the store held the turn).
   */
  "schedule.ran": InSession & {
    schedule: string;
    slot: number;
    why: string;
    disposition: string;
    messageId: string;
  };
  /** A slot a crash cut off after its trigger was accepted: its turn resumes, it is not triggered again. */
  "schedule.recovered": InSession & { schedule: string; slot: number; messageId: string };
  /** A slot missed while the process was down was skipped (`catchUp: false`). */
  "schedule.skipped": InSession & { schedule: string; slot: number };
  /** A slot could not start its turn. */
  "schedule.failed": InSession & { schedule: string; slot: number; error: string };
  /** A schedule's next run time could not be stored. */
  "schedule.saveFailed": { schedule: string; error: string };
  /** Typed messages waiting for their own turn were shown to the background turn running now. */
  "notice.injected": InTurn & { messageIds: string[] };

  // Commitments (docs/commitments.md)
  /** A commitment was stored (the `commitment` tool, the extraction hook or `commitments.propose`). */
  "commitment.created": InCommitment & {
    runId?: string | undefined;
    kind: string;
    dedupeKey: string;
    dueAt: number;
  };
  /** A proposal with the dedupe key of a pending commitment widened it instead of adding one. */
  "commitment.merged": InCommitment & { runId?: string | undefined; dedupeKey: string };
  /** A proposal was refused: the field and why. */
  "commitment.rejected": InSession & {
    runId?: string | undefined;
    field?: string | undefined;
    reason: string;
  };
  /** A heartbeat tick took it from the due index: its review begins (`attempt` counts reviews). */
  "commitment.due": InCommitment & { attempt: number };
  /** The review's classification, `via` the transcript alone or a model call; `voided` by a user message. */
  "commitment.reviewed": InCommitment & { classification: string; via: string; voided: boolean };
  /** The follow-up was sent (a committed receipt), in the review's own words. */
  "commitment.sent": InCommitment & { messageId: string; text: string };
  /** A send was cut off by a crash: it may have reached the user, so it is never sent again. */
  "commitment.sendInterrupted": InCommitment & { receipt: "unknown"; text: string };
  /** It ended without a send: completed, superseded, a duplicate of its dedupeKey, or dismissed by an operator (`why`). */
  "commitment.dismissed": InCommitment & {
    why: string;
    /** With `why: "duplicate"`: the commitment of the same session and dedupeKey that stands. */
    duplicateOf?: string;
  };
  /** No decision this time (unclear, an error, a voided review): reviewed again at a later tick. */
  "commitment.retried": InCommitment & { why: string; attempt: number };
  /** Its window passed without a still-pending review: nothing was sent. */
  "commitment.expired": InCommitment;
  /**
   * Its review could not start (the session's lane refused it, or on a shared store the session's
   * `maxPerDay` is used by sends and sends in flight across the cluster); it stays pending.
   */
  "commitment.deferred": InCommitment & { reason: string };
  /** A commitment's state could not be stored. */
  "commitment.storeFailed": { session?: string | undefined; id: string; error: string };
  /** The gateway's `extractCommitments` hook threw for a finished turn. */
  "commitment.extractFailed": InTurn & { error: string };
  /** A commitments heartbeat tick: how many fell due and how many are pending. */
  "heartbeat.ticked": { due: number; pending: number };

  // Inspection
  /**
   * A machine (`session`, `run`, `laneScheduler`) entered a new state: on the HTTP event stream only,
   * for the operator page's live diagrams (`cause` is the event that moved it).
   */
  state: {
    machine: string;
    session?: string;
    runId?: string;
    value: unknown;
    status: string;
    cause: string;
  };

  // Scenarios
  /** In a scenario's output only: the process was killed and a new gateway started on the same store. */
  "process.restarted": Record<never, never>;
}

/** An event's name. */
export type TillerEventType = keyof TillerEventMap;

/**
 * The event named `K`: its payload with `type` and `at`. `session` and `runId` may be read on any event:
 * they are set on every event about a session or a turn.
 */
export type TillerEventOf<K extends TillerEventType> = {
  type: K;
  /** Milliseconds on the gateway's clock. */
  at: number;
  session?: string | undefined;
  runId?: string | undefined;
} & TillerEventMap[K];

/** Any Tiller event: a union discriminated by `type`. */
export type TillerEvent = { [K in TillerEventType]: TillerEventOf<K> }[TillerEventType];

/** The lane scheduler's events (`onEvent` of `createLaneScheduler`). */
export type LaneEventType = Extract<TillerEventType, `lane.${string}`>;
/** The `lane.*` events: what the lane scheduler tells about its tasks. */
export type LaneEvent = Extract<TillerEvent, { type: LaneEventType }>;

/** What an emitter is given for the event named `K`: its payload (the emitter stamps `at`). */
export type TillerEventFields<K extends TillerEventType> = TillerEventMap[K];

/**
 * The events named `K` as a machine emits them: `type` and payload, without the `session` (and, for the
 * run's events, the `runId`) the gateway adds when it forwards them.
 */
export type EmittedEvent<K extends TillerEventType> = K extends TillerEventType
  ? { type: K; runId?: string } & Omit<TillerEventMap[K], "session" | "runId">
  : never;

/** An emitter of typed events: the gateway's and the actors' `emit`. */
export type EmitEvent = <K extends TillerEventType>(type: K, fields: TillerEventFields<K>) => void;

/**
 * Builds the event named `type` from its payload, stamped `at`. The one place where a name and its
 * payload are joined, so TypeScript checks every emitter against the map.
 */
export function tillerEvent<K extends TillerEventType>(
  type: K,
  at: number,
  fields: TillerEventFields<K>,
): Extract<TillerEvent, { type: K }> {
  // TypeScript cannot relate a generic key to one member of the union it indexes; the signature does.
  return { at, type, ...fields } as unknown as Extract<TillerEvent, { type: K }>;
}

/**
 * Stamps an event a machine emitted with the session (and run) it belongs to. The machines' emitted
 * types are {@link EmittedEvent}s of this map, so the payload was checked where it was emitted.
 */
export function forwardedEvent(
  event: EmittedEvent<TillerEventType>,
  at: number,
  owner: { session: string; runId?: string | undefined },
): TillerEvent {
  // `runId` of a run's event comes from its owner: a union TypeScript cannot pair with the map's.
  return { at, ...event, ...owner } as TillerEvent;
}

/** A subscriber to the gateway's event stream; it is called once per event, in order. */
export type EventListener = (event: TillerEvent) => void;
/** Fans the gateway's events out to its subscribers and keeps no history. */
export class EventHub {
  private readonly listeners = new Set<EventListener>();

  /** True when someone listens; emitters skip building events otherwise. */
  get isObserved(): boolean {
    return this.listeners.size > 0;
  }

  subscribe(listener: EventListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  emit(event: TillerEvent): void {
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch {
        // A faulty observer must never break the decision it observes.
      }
    }
  }

  /**
   * An async iterator over events from now on: subscribed at once, so events emitted before the first
   * `next()` are kept too. Events are buffered, so a slow consumer sees every one in order; it ends
   * when `signal` aborts or the consumer stops (`break`, `return()`).
   */
  stream(signal?: AbortSignal): AsyncGenerator<TillerEvent> {
    const buffer: TillerEvent[] = [];
    let wake: (() => void) | null = null;
    const off = this.subscribe((event) => {
      buffer.push(event);
      wake?.();
    });
    const onAbort = () => wake?.();
    signal?.addEventListener("abort", onAbort);
    async function* drain(): AsyncGenerator<TillerEvent> {
      try {
        while (!signal?.aborted) {
          const next = buffer.shift();
          if (next) {
            yield next;
            continue;
          }
          await new Promise<void>((resolve) => {
            wake = resolve;
          });
          wake = null;
        }
      } finally {
        off();
        signal?.removeEventListener("abort", onAbort);
      }
    }
    return drain();
  }
}
