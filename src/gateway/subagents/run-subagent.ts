import type { ActorDeps } from "../../actors/deps.js";
import { TillerError } from "../../errors.js";
import type { EventHub } from "../../events.js";
import { laneForChild } from "../../policy/lane-priority.js";
import type { TranscriptStore } from "../../ports/store.js";
import type { SubagentOptions } from "../../ports/tool.js";
import type { TriggerAck, TriggerExtras, TriggerRequest } from "../inbound/trigger.js";
import type { SessionRegistry } from "../sessions/session-registry.js";
import { SubagentNumbers } from "./subagent-numbers.js";

export interface SubagentDeps {
  deps: ActorDeps;
  hub: EventHub;
  registry: SessionRegistry;
  store: TranscriptStore;
  /** The children's keys (the gateway's, so a session taken over can forget what it knew). */
  numbers?: SubagentNumbers;
  /** Starts the child's task here: in a cluster, through the inbox, making the child this process's. */
  trigger(request: TriggerRequest, extras: TriggerExtras): Promise<TriggerAck>;
  emit(type: string, fields: Record<string, unknown>): void;
}

/**
 * `ToolContext.runSubagent`: a child turn under `<parent>:sub:<n>` with the trigger `subagent`, in the
 * `subagent` lane (`cron-nested` under a scheduled turn, so an outer job holding the last cron slot
 * never waits for its own inner one). It resolves with the child's final, which is never sent to the
 * user; an abort of the parent's signal stops the child. A child this process loses (its ownership
 * in a cluster ran out) fails the tool instead of leaving it waiting.
 */
export function createRunSubagent(ctx: SubagentDeps): ActorDeps["runSubagent"] {
  const numbers = ctx.numbers ?? new SubagentNumbers(ctx.store);
  return async (parent, options: SubagentOptions) => {
    if (!options || typeof options.text !== "string" || options.text.length === 0) {
      throw new TillerError("MESSAGE_REJECTED", "runSubagent: text: expected a non-empty string");
    }
    const child = await numbers.next(parent.session);
    const lane = laneForChild(parent.lane ?? "main");
    const marks = { session: parent.session, runId: parent.runId, child, lane };
    if (parent.signal.aborted) throw parent.signal.reason;

    let unsubscribe = () => {};
    const finished = new Promise<{ status: string; final: string; error?: string }>((resolve) => {
      unsubscribe = ctx.hub.subscribe((event) => {
        if (event.type === "subagent.finished" && event.session === child) {
          resolve({
            status: String(event.status),
            final: String(event.final ?? ""),
            ...(typeof event.error === "string" ? { error: event.error } : {}),
          });
        }
        // Another process may own the child now: its final will never come back here.
        if (event.type === "session.lost" && event.session === child)
          resolve({ status: "failed", final: "", error: "this process lost the child's session" });
      });
    });
    const stop = () => ctx.registry.get(child)?.actor?.send({ type: "session.stop" });
    parent.signal.addEventListener("abort", stop, { once: true });
    try {
      ctx.emit("subagent.started", marks);
      const ack = await ctx.trigger(
        { session: child, trigger: "subagent", text: options.text, id: `${child}:task` },
        { lane, ...(options.tools ? { tools: options.tools } : {}) },
      );
      if (ack.disposition !== "started" && ack.disposition !== "queued") {
        throw new TillerError("SUBAGENT_FAILED", `the subagent did not start: ${ack.text}`);
      }
      if (parent.signal.aborted) stop();
      const outcome = await finished;
      ctx.emit("subagent.ended", { ...marks, status: outcome.status });
      if (outcome.status !== "done") {
        throw new TillerError(
          "SUBAGENT_FAILED",
          `the subagent ${child} ${outcome.status === "aborted" ? "was cancelled" : `failed: ${outcome.error ?? "unknown error"}`}`,
        );
      }
      return outcome.final;
    } finally {
      unsubscribe();
      parent.signal.removeEventListener("abort", stop);
    }
  };
}
