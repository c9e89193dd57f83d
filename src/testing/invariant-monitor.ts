import type { TillerEvent, TillerEventOf } from "../events.js";
import { AuthorityCheck } from "./authority-check.js";
import { SteerToolCheck } from "./steer-tool-check.js";

/** A broken invariant, with the events of the message or run involved. */
export interface InvariantViolation {
  invariant: string;
  message: string;
  session?: string;
  messageId?: string;
  runId?: string;
  at: number;
}

const ACCEPTED = new Set(["started", "steered", "queued", "collected", "interrupted"]);
const DISPOSITIONS = new Set([...ACCEPTED, "rejected", "duplicate", "dropped", "control"]);
const STILL_PENDING = new Set(["still_pending_user", "still_pending_agent"]);

/** What the monitor needs to know of the gateway beyond its events. */
export interface InvariantMonitorOptions {
  /**
   * The scopes each tool `requires`, by tool name: with it, a tool that starts while a sender of its
   * turn lacks them is reported ("authority never borrowed").
   * @default no tool requires anything
   */
  requires?: (tool: string) => readonly string[] | undefined;
}

/**
 * Checks the runtime's invariants on every event of a gateway's stream: at most one active run per
 * session, every accepted message owned by a turn or reported dropped and never answered by two turns,
 * at most `maxPasses` re-checks per turn, the undelivered-final marker before its one recovery, no work
 * admitted while draining, commitments sent only after a still-pending review, acks that say what
 * happened, no tool started after a steering message arrived and before the model saw it, and no tool
 * run on authority borrowed from another sender. Violations are collected, never thrown from inside
 * the stream.
 */
export class InvariantMonitor {
  readonly violations: InvariantViolation[] = [];
  private readonly activeRun = new Map<string, string>();
  private readonly accepted = new Map<string, { session: string; messageId: string; at: number }>();
  private readonly owners = new Map<string, string[]>();
  private readonly dropped = new Set<string>();
  private readonly runStatus = new Map<string, string>();
  private readonly passes = new Map<string, number>();
  private readonly markers = new Map<string, number>();
  private readonly recoveries = new Map<string, number>();
  private readonly reviewedPending = new Set<string>();
  private draining = false;
  private readonly steerTool: SteerToolCheck;
  private readonly authority: AuthorityCheck;

  constructor(
    private readonly maxPasses: number,
    options: InvariantMonitorOptions = {},
  ) {
    const report = (violation: InvariantViolation) => this.violations.push(violation);
    this.steerTool = new SteerToolCheck(report);
    this.authority = new AuthorityCheck(options.requires ?? (() => undefined), report);
  }

  /** The gateway admits work again (`resume()`). */
  noteResumed(): void {
    this.draining = false;
  }

  observe(event: TillerEvent): void {
    this.steerTool.observe(event);
    this.authority.observe(event);
    const session = typeof event.session === "string" ? event.session : undefined;
    const runId = typeof event.runId === "string" ? event.runId : undefined;
    switch (event.type) {
      case "gateway.draining":
        this.draining = true;
        break;
      case "message.acked": {
        const messageId = String(event.messageId);
        const disposition = String(event.disposition);
        if (!DISPOSITIONS.has(disposition) || typeof event.text !== "string" || event.text.length === 0) {
          this.fail(event, "12", `the ack of ${messageId} does not say what happened (${disposition})`, {
            messageId,
          });
        }
        if (ACCEPTED.has(disposition) && session) {
          if (this.draining)
            this.fail(event, "9", `${messageId} was accepted (${disposition}) while draining`, { messageId });
          this.accepted.set(key(session, messageId), { session, messageId, at: event.at });
        }
        break;
      }
      case "turn.started": {
        if (!session || !runId) break;
        const running = this.activeRun.get(session);
        if (running)
          this.fail(event, "1", `run ${runId} started while ${running} was still active`, { runId });
        this.activeRun.set(session, runId);
        this.own(session, runId, event.messageIds);
        break;
      }
      case "steer.injected":
        if (session && runId) this.own(session, runId, event.messageIds);
        break;
      case "turn.ended":
        if (!session || !runId) break;
        if (this.activeRun.get(session) === runId) this.activeRun.delete(session);
        this.runStatus.set(runId, String(event.status));
        this.checkAnsweredOnce(event, session, runId);
        break;
      case "message.dropped":
        if (session) this.dropped.add(key(session, String(event.messageId)));
        break;
      case "recheck.fired": {
        if (!runId) break;
        const count = (this.passes.get(runId) ?? 0) + 1;
        this.passes.set(runId, count);
        if (count > this.maxPasses)
          this.fail(event, "4", `run ${runId} re-checked ${count} times (limit ${this.maxPasses})`, {
            runId,
          });
        break;
      }
      case "marker.appended": {
        if (!runId) break;
        const count = (this.markers.get(runId) ?? 0) + 1;
        this.markers.set(runId, count);
        if (count > 1)
          this.fail(event, "6", `run ${runId} got ${count} undelivered-final markers`, { runId });
        break;
      }
      case "recovery.queued": {
        if (!runId) break;
        if (!this.markers.has(runId))
          this.fail(event, "6", `a recovery for ${runId} was queued before its marker was durable`, {
            runId,
          });
        const count = (this.recoveries.get(runId) ?? 0) + 1;
        this.recoveries.set(runId, count);
        if (count > 1) this.fail(event, "6", `run ${runId} got ${count} recoveries`, { runId });
        break;
      }
      default:
        this.observeCommitment(event);
        break;
    }
  }

  /** Commitment events, read by name: the scheduler that emits them is not part of the event map yet. */
  private observeCommitment(event: TillerEvent): void {
    const type: string = event.type;
    const fields: Record<string, unknown> = Object.fromEntries(Object.entries(event));
    const id = String(fields.id ?? fields.commitmentId);
    if (type === "commitment.reviewed" && STILL_PENDING.has(String(fields.classification)))
      this.reviewedPending.add(id);
    if (type === "commitment.sent") {
      if (!this.reviewedPending.has(id))
        this.fail(event, "10", `commitment ${id} was sent without a still-pending review`, {});
      this.reviewedPending.delete(id);
    }
  }

  /**
   * Checks what can only be judged once the gateway is idle: every accepted message was owned by a
   * turn or reported dropped (nothing lost).
   */
  checkSettled(at: number): void {
    for (const [id, message] of this.accepted) {
      if (!this.owners.has(id) && !this.dropped.has(id)) {
        this.violations.push({
          invariant: "5",
          message: `${message.messageId} was accepted but no turn ever took it and it was not reported dropped`,
          session: message.session,
          messageId: message.messageId,
          at,
        });
      }
    }
  }

  private own(session: string, runId: string, ids: unknown): void {
    if (!Array.isArray(ids)) return;
    for (const id of ids) {
      const k = key(session, String(id));
      const runs = this.owners.get(k) ?? [];
      if (!runs.includes(runId)) runs.push(runId);
      this.owners.set(k, runs);
    }
  }

  /** A message may be retried by a later turn after an aborted or failed one, never answered by two. */
  private checkAnsweredOnce(event: TillerEventOf<"turn.ended">, session: string, runId: string): void {
    if (event.status !== "done") return;
    for (const [k, runs] of this.owners) {
      if (!k.startsWith(`${session}\u0000`) || !runs.includes(runId)) continue;
      const answered = runs.filter((run) => this.runStatus.get(run) === "done");
      if (answered.length > 1) {
        this.fail(event, "5", `${k.slice(session.length + 1)} was answered by ${answered.join(" and ")}`, {
          messageId: k.slice(session.length + 1),
        });
      }
    }
  }

  private fail(
    event: TillerEvent,
    invariant: string,
    message: string,
    ids: { messageId?: string; runId?: string },
  ): void {
    this.violations.push({
      invariant,
      message,
      at: event.at,
      ...(typeof event.session === "string" ? { session: event.session } : {}),
      ...ids,
    });
  }
}

function key(session: string, messageId: string): string {
  return `${session}\u0000${messageId}`;
}
