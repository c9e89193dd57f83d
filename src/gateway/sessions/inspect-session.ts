import type { AnyActorRef } from "xstate";
import type { TranscriptWriter } from "../../adapters/transcript-writer.js";
import type { LaneScheduler } from "../../lanes/lane-scheduler.js";
import type { SessionInspection } from "../gateway.types.js";
import { stateName } from "../inbound/validate-inbound.js";
import type { SessionRegistry } from "./session-registry.js";

/** `gateway.inspect(key)`: where a live session stands, its run, queue and lane; undefined when unknown. */
export function inspectSession(
  key: string,
  { registry, lanes, writer }: { registry: SessionRegistry; lanes: LaneScheduler; writer: TranscriptWriter },
): SessionInspection | undefined {
  const entry = registry.get(key);
  if (!entry) return undefined;
  const snapshot = entry.actor?.getSnapshot();
  const runRef = snapshot?.children.run as AnyActorRef | undefined;
  const runSnapshot = runRef?.getSnapshot();
  const laneSnapshot = lanes.snapshot().lanes;
  const sessionLane = laneSnapshot[`session:${key}`];
  // The session lane admits one turn at a time; what limits it is the workload lane's capacity.
  const lane = sessionLane
    ? { ...sessionLane, capacity: laneSnapshot.main?.capacity ?? sessionLane.capacity }
    : null;
  return {
    state: snapshot ? stateName(snapshot.value) : "idle",
    run: runSnapshot
      ? {
          runId: runSnapshot.context.input.runId,
          state: stateName(runSnapshot.value),
          passes: runSnapshot.context.passes,
          ...(runSnapshot.context.pendingCalls[runSnapshot.context.toolIndex]
            ? { currentTool: runSnapshot.context.pendingCalls[runSnapshot.context.toolIndex].name }
            : {}),
        }
      : null,
    queue: (snapshot?.context.queue ?? []).map((item) => ({
      kind: item.kind,
      messageIds: item.kind === "recovery" ? [] : item.messages.map((message) => message.id),
    })),
    lane,
    transcriptLength: writer.length(key),
  };
}
