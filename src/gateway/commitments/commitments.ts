import { nanoid } from "nanoid";
import type { InspectionEvent } from "xstate";

import type { ActorDeps } from "../../actors/deps.js";
import { createReviewCommitment, type ReviewGate } from "../../actors/review-commitment.js";
import { createSendCommitment } from "../../actors/send-commitment.js";
import { ConfigError, errorMessage } from "../../errors.js";
import type { EmitEvent, TillerEvent } from "../../events.js";
import { commitmentMachine } from "../../machines/commitment.machine.js";
import type { Commitment, CommitmentStatus } from "../../machines/commitment.types.js";
import {
  type CommitmentProposal,
  DEFAULT_EXPIRE_AFTER_MS,
  mergeCommitment,
  validateProposal,
} from "../../policy/commitment-fields.js";
import type { TranscriptRecord, TranscriptStore } from "../../ports/store.js";
import { CommitmentBook } from "./commitment-book.js";
import { CommitmentHeartbeat } from "./commitment-heartbeat.js";
import { type CommitmentStory, StoryLog } from "./commitment-story.js";

/** The heartbeat interval when `heartbeat.everyMs` is not set. */
export const DEFAULT_HEARTBEAT_MS = 30 * 60_000;

/** A finished turn, as the `extractCommitments` hook sees it. */
export interface FinishedTurn {
  session: string;
  runId: string;
  /** The user messages the turn answered, oldest first. */
  messageIds: string[];
  /** The turn's records as stored: its user messages, tool traffic and final. */
  records: TranscriptRecord[];
  /** The final reply text ("" when silent). */
  finalText: string;
}

/** Gateway hooks of commitments (all optional). */
export interface CommitmentHooks {
  /** Sees each finished turn; proposals go through the same validation as the `commitment` tool. */
  extractCommitments?: (turn: FinishedTurn) => CommitmentProposal[] | Promise<CommitmentProposal[]>;
  /** A current-state snapshot for a review (an artifact's state, a list, ...), shown fenced as data. */
  commitmentSnapshot?: (commitment: Commitment, signal: AbortSignal) => unknown;
  /** Ids of new commitments (default: `c_` + a random id). */
  newCommitmentId?: () => string;
}

/** Which commitments `gateway.commitments.list()` returns: by session, by status. */
export interface CommitmentFilter {
  session?: string;
  status?: CommitmentStatus;
}

/** What became of a proposed commitment: accepted (new, or merged into one with its dedupe key), or refused naming the field. */
export type ProposalOutcome =
  | { accepted: true; id: string; merged: boolean; dueAt: number }
  | { accepted: false; field?: string; reason: string };

export interface CommitmentsDeps {
  deps: ActorDeps;
  store: TranscriptStore;
  hooks: CommitmentHooks;
  /** The session has a turn running or queued. */
  isSessionBusy(session: string): boolean;
  /** XState inspection of each commitment actor (the gateway's `inspect` option). */
  inspect?: (event: InspectionEvent) => void;
}

/**
 * The gateway's commitments (docs/commitments.md): creation (the tool and the extraction hook, one
 * validation, dedupe), the heartbeat and due actors, the operator API and each commitment's story.
 * Disabled (`commitments.enabled: false`, the default): nothing is created, reviewed or sent, and the
 * stored ones can still be listed and dismissed.
 */
export function createCommitments(options: CommitmentsDeps) {
  const { deps, store, hooks } = options;
  const { config, clock } = deps;
  const enabled = config.commitments.enabled;
  const everyMs = config.heartbeat.everyMs ?? DEFAULT_HEARTBEAT_MS;
  const expireAfterMs = config.commitments.expireAfterMs ?? DEFAULT_EXPIRE_AFTER_MS;
  const maxPerDay = config.commitments.maxPerDay;
  const book = new CommitmentBook(store);
  if (enabled && !book.isDurable)
    throw new ConfigError(
      "store",
      "a store with saveCommitments and loadCommitments (commitments.enabled is true)",
      store.constructor?.name ?? typeof store,
    );
  const newId = hooks.newCommitmentId ?? (() => `c_${nanoid(12)}`);
  const stories = new StoryLog();
  /** Messages accepted per session, and the reviews watching for the next one. */
  const arrivals = new Map<string, number>();
  const watchers = new Map<string, Set<AbortController>>();
  const decidedAt = new Map<string, number>();
  /** runId → the user messages its turn owns (for sources and extraction). */
  const runMessages = new Map<string, string[]>();

  const gate: ReviewGate = {
    arrivals: (session) => arrivals.get(session) ?? 0,
    isBusy: options.isSessionBusy,
    watch(session) {
      const controller = new AbortController();
      let set = watchers.get(session);
      if (!set) {
        set = new Set();
        watchers.set(session, set);
      }
      set.add(controller);
      return {
        signal: controller.signal,
        release() {
          set.delete(controller);
          if (set.size === 0) watchers.delete(session);
        },
      };
    },
    sentInWindow: (session, now) => book.sentInWindow(session, now),
    decided: (id, count) => decidedAt.set(id, count),
    settings: {
      timeoutMs: config.commitments.reviewTimeoutMs ?? 120_000,
      maxCalls: config.commitments.maxReviewCalls ?? 4,
    },
    ...(hooks.commitmentSnapshot ? { snapshot: hooks.commitmentSnapshot } : {}),
  };
  const machine = commitmentMachine.provide({
    actors: {
      review: createReviewCommitment(deps, gate),
      send: createSendCommitment(deps, book, {
        maxPerDay,
        arrivedSinceDecision: (id, session) => {
          const at = decidedAt.get(id);
          decidedAt.delete(id);
          return at === undefined || at !== (arrivals.get(session) ?? 0);
        },
      }),
    },
  });
  /**
   * A send cut off on its way (its process died between the send intent and the receipt): the channel
   * may or may not have taken it, so it is never sent again (at most once) and counts as sent. On a
   * shared store only once the sender's claim ran out: until then its send may still be on its way.
   */
  async function settleCutOff(id: string): Promise<void> {
    if (!(await book.claimCutOff(id, clock.now()))) return;
    const commitment = book.get(id);
    if (commitment?.status !== "pending" || !commitment.sending) return;
    const { sending, ...rest } = commitment;
    const at = clock.now();
    await book.put({
      ...rest,
      status: "sent",
      sent: { at: sending.at, text: sending.text, receipt: "unknown" },
      updatedAt: at,
      endedAt: at,
    });
    emit("commitment.sendInterrupted", {
      session: commitment.session,
      id: commitment.id,
      receipt: "unknown",
      text: sending.text,
    });
  }

  const heartbeat = new CommitmentHeartbeat(deps, book, machine, {
    everyMs,
    settleCutOff,
    maxPerTick: config.commitments.maxPerTick ?? 3,
    maxPerDay,
    ...(options.inspect ? { inspect: options.inspect } : {}),
  });

  const emit: EmitEvent = (type, fields) => deps.emit(type, fields);

  async function propose(
    session: string,
    raw: unknown,
    origin: { source: string; runId?: string; messageId?: string },
  ): Promise<ProposalOutcome> {
    if (!enabled)
      return { accepted: false, reason: "commitments are off in this gateway (commitments.enabled: false)" };
    const now = clock.now();
    const checked = validateProposal(raw, {
      now,
      heartbeatMs: everyMs,
      expireAfterMs,
      defaultSource: origin.source,
    });
    if (!checked.ok) {
      const reason = `${checked.field}: ${checked.message}`;
      emit("commitment.rejected", { session, runId: origin.runId, field: checked.field, reason });
      return { accepted: false, field: checked.field, reason };
    }
    const { fields } = checked;
    const messageId = origin.messageId ?? (origin.runId ? runMessages.get(origin.runId)?.at(-1) : undefined);
    const source = {
      ...(messageId ? { sourceMessageId: messageId } : {}),
      ...(origin.runId ? { sourceRunId: origin.runId } : {}),
    };
    const existing = book.pendingFor(session, fields.dedupeKey);
    if (existing && !existing.sending) {
      const merged = await book.update(existing.id, (current) =>
        current?.status === "pending"
          ? mergeCommitment(current, fields, source, now, expireAfterMs)
          : undefined,
      );
      if (merged.status === "pending") {
        emit("commitment.merged", {
          session,
          runId: origin.runId,
          id: merged.id,
          dedupeKey: merged.dedupeKey,
        });
        heartbeat.arm();
        return { accepted: true, id: merged.id, merged: true, dueAt: merged.dueAt };
      }
    }
    const { expiresAt, ...rest } = fields;
    const commitment: Commitment = {
      id: newId(),
      session,
      ...rest,
      ...source,
      createdAt: now,
      updatedAt: now,
      status: "pending",
      dueAt: fields.dueWindow.earliestAt,
      attempts: 0,
      expiresAt,
    };
    await book.put(commitment);
    emit("commitment.created", {
      session,
      runId: origin.runId,
      id: commitment.id,
      kind: commitment.kind,
      dedupeKey: commitment.dedupeKey,
      dueAt: commitment.dueAt,
    });
    heartbeat.arm();
    return { accepted: true, id: commitment.id, merged: false, dueAt: commitment.dueAt };
  }

  async function extract(event: TillerEvent): Promise<void> {
    const session = String(event.session);
    const runId = String(event.runId);
    const messageIds = runMessages.get(runId) ?? [];
    const window = await deps.writer.readWindow(session);
    const ids = new Set(messageIds);
    const records = window.filter((record) =>
      record.role === "user" ? ids.has(record.messageId) : "runId" in record && record.runId === runId,
    );
    const finalText = records.findLast((record) => record.role === "assistant")?.text ?? "";
    const proposals = await hooks.extractCommitments!({ session, runId, messageIds, records, finalText });
    for (const proposal of Array.isArray(proposals) ? proposals : [])
      await propose(session, proposal, {
        source: "extractor",
        runId,
        ...(messageIds.length > 0 ? { messageId: messageIds.at(-1)! } : {}),
      });
  }

  return {
    book,
    heartbeat,
    /** Loads stored commitments, settles sends a crash cut off, and arms the heartbeat. */
    async start(): Promise<void> {
      if (!book.isDurable) return;
      await book.load();
      for (const id of [...book.sending]) await settleCutOff(id);
      if (enabled) heartbeat.arm();
    },
    stop(): void {
      heartbeat.stop();
    },
    /** Sees every gateway event: message arrivals void reviews; turns feed sources and extraction. */
    observe(event: TillerEvent): void {
      if (event.type.startsWith("commitment.")) stories.observe(event);
      const session = event.session;
      if (!session) return;
      if (
        event.type === "message.acked" &&
        event.disposition !== "duplicate" &&
        event.disposition !== "rejected"
      ) {
        arrivals.set(session, (arrivals.get(session) ?? 0) + 1);
        for (const controller of watchers.get(session) ?? []) controller.abort(new Error("user message"));
      } else if (enabled && (event.type === "turn.started" || event.type === "steer.injected")) {
        // Read only by a proposal or an extraction, neither of which runs while commitments are off.
        const runId = String(event.runId);
        const ids = (event.messageIds as string[] | undefined) ?? [];
        runMessages.set(runId, [...(runMessages.get(runId) ?? []), ...ids]);
      } else if (event.type === "turn.ended") {
        const runId = String(event.runId);
        // After the turn's delivery, which still holds the session's lane: the hook sees its final.
        if (enabled && hooks.extractCommitments && event.status === "done")
          deps.lanes
            .run({ session, priority: "background" }, () => extract(event))
            .catch((error: unknown) => {
              deps.logger.warn({ session, runId, error: errorMessage(error) }, "commitment.extractFailed");
              emit("commitment.extractFailed", { session, runId, error: errorMessage(error) });
            })
            .finally(() => runMessages.delete(runId));
        else runMessages.delete(runId);
      }
    },
    propose,
    /** Commitments, oldest first, optionally of one session and/or one status. */
    list(filter: CommitmentFilter = {}): Commitment[] {
      const out: Commitment[] = [];
      for (const commitment of book.byId.values()) {
        if (filter.session !== undefined && commitment.session !== filter.session) continue;
        if (filter.status !== undefined && commitment.status !== filter.status) continue;
        out.push(structuredClone(commitment));
      }
      return out.sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : 1));
    },
    /**
     * Dismisses a pending commitment (`dismissedWhy: "operator"`); one already ended, or whose send is
     * in flight, is returned as it is. Undefined for an unknown id.
     */
    async dismiss(id: string): Promise<Commitment | undefined> {
      const actor = heartbeat.actors.get(id);
      const snapshot = actor?.getSnapshot();
      if (
        actor &&
        snapshot?.status === "active" &&
        !snapshot.matches("sending") &&
        !snapshot.matches("scheduled")
      )
        actor.send({ type: "commitment.dismiss", why: "operator" });
      let changed = false;
      const now = clock.now();
      const result = await book.update(id, (current) => {
        if (current?.status !== "pending" || current.sending) return undefined;
        changed = true;
        return { ...current, status: "dismissed", dismissedWhy: "operator", updatedAt: now, endedAt: now };
      });
      if (!result) return undefined;
      if (changed && !(actor && snapshot?.status === "active" && !snapshot.matches("scheduled")))
        emit("commitment.dismissed", { session: result.session, id, why: "operator" });
      return structuredClone(result);
    },
    /** A commitment's story: its record and what happened to it. */
    explain(id: string): CommitmentStory | undefined {
      const commitment = book.get(id);
      return commitment ? stories.story(structuredClone(commitment)) : undefined;
    },
  };
}

export type Commitments = ReturnType<typeof createCommitments>;
