import type { TillerEvent } from "../events.js";
import type { InvariantViolation } from "./invariant-monitor.js";

/**
 * "No tool after a steer arrived": once a message is acked `steered` into a run, that run starts no
 * further tool until the model has seen the message (`steer.injected`) or the run let it go
 * (`steer.missed`, dropped, ended). A tool already running may finish; the batch's later calls must be
 * skipped. Protects the user's correction: "don't change the file" must reach the model before the
 * next tool changes it.
 */
export class SteerToolCheck {
  /** Per run: the steered messages not shown to the model yet, with when each arrived. */
  private readonly held = new Map<string, Map<string, number>>();

  constructor(private readonly report: (violation: InvariantViolation) => void) {}

  observe(event: TillerEvent): void {
    const session = typeof event.session === "string" ? event.session : undefined;
    const runId = typeof event.runId === "string" ? event.runId : undefined;
    if (!session || !runId) return;
    const run = `${session}\u0000${runId}`;
    switch (event.type) {
      case "message.acked":
        if (event.disposition !== "steered") return;
        this.heldOf(run).set(String(event.messageId), event.at);
        return;
      case "steer.injected":
      case "steer.missed":
        for (const id of event.messageIds) this.held.get(run)?.delete(String(id));
        return;
      case "message.dropped":
        this.held.get(run)?.delete(String(event.messageId));
        return;
      case "turn.ended":
        this.held.delete(run);
        return;
      case "tool.started": {
        const waiting = [...(this.held.get(run) ?? [])];
        if (waiting.length === 0) return;
        const [messageId, arrived] = waiting[0]!;
        this.report({
          invariant: "no tool after a steer",
          message: `tool ${event.name} started in run ${runId} after the steering message ${messageId} arrived (at ${arrived} ms) and before the model saw it: the rest of the batch should have been skipped`,
          at: event.at,
          session,
          messageId,
          runId,
        });
        return;
      }
      default:
        return;
    }
  }

  private heldOf(run: string): Map<string, number> {
    let held = this.held.get(run);
    if (!held) {
      held = new Map();
      this.held.set(run, held);
    }
    return held;
  }
}
