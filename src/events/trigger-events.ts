import type { InSession, InTurn } from "./event-fields.js";

/** Turns nobody typed: schedules, heartbeats, webhooks (docs/triggers.md). Part of `TillerEventMap` (src/events.ts). */
export interface TriggerEventMap {
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
}
