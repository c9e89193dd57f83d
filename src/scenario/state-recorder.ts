import type { InspectionEvent } from "xstate";
import { stateName } from "../gateway/inbound/validate-inbound.js";
import type { RecordedStates } from "./check-expectations.js";

/**
 * Records, from XState's inspection stream, the state values every session actor, run actor and
 * commitment actor passes through (consecutive repeats folded), so a scenario can state the path it
 * must take.
 */
export class StateRecorder {
  private readonly sessions: RecordedStates = {};
  // A run actor's session, learned from its first snapshot.
  private readonly runs = new WeakMap<object, { values: string[] }>();
  // Every actor of a commitment (one per review) adds to the same list: its whole journey.
  private readonly commitments: Record<string, string[]> = {};

  observe(event: InspectionEvent): void {
    if (event.type !== "@xstate.snapshot") return;
    const snapshot = event.snapshot as { value?: unknown; context?: Record<string, unknown> };
    const machineId = (event.actorRef as { logic?: { id?: string } }).logic?.id;
    if (machineId === "session") {
      const key = snapshot.context?.key;
      if (typeof key === "string") push(this.entry(key).session, stateName(snapshot.value));
    } else if (machineId === "commitment") {
      const commitment = snapshot.context?.commitment as { id?: unknown } | undefined;
      if (typeof commitment?.id !== "string") return;
      this.commitments[commitment.id] ??= [];
      push(this.commitments[commitment.id]!, stateName(snapshot.value));
    } else if (machineId === "run") {
      let run = this.runs.get(event.actorRef);
      if (!run) {
        const input = snapshot.context?.input as { runId?: string; session?: string } | undefined;
        if (typeof input?.session !== "string" || typeof input.runId !== "string") return;
        run = { values: [] };
        this.runs.set(event.actorRef, run);
        this.entry(input.session).runs.push({ runId: input.runId, values: run.values });
      }
      push(run.values, stateName(snapshot.value));
    }
  }

  result(): RecordedStates {
    return this.sessions;
  }

  /** State values each commitment's actors passed through, by commitment id. */
  commitmentResult(): Record<string, string[]> {
    return this.commitments;
  }

  private entry(session: string): RecordedStates[string] {
    let entry = this.sessions[session];
    if (!entry) this.sessions[session] = entry = { session: [], runs: [] };
    return entry;
  }
}

function push(values: string[], value: string): void {
  if (values[values.length - 1] !== value) values.push(value);
}
