import type { RunContext } from "../../machines/run.machine.js";
import type { SessionDecision } from "../../machines/session.types.js";
import type { Ack } from "../../policy/ack.js";

export type { Ack };

export interface RunView {
  state: string;
  context: Pick<RunContext, "pendingCalls" | "toolIndex" | "completedTools" | "input">;
}

/** Composes the ack from the session's decision and, for a running turn, what the run is doing now. */
export function composeAck(
  session: string,
  decision: SessionDecision,
  run: RunView | undefined,
  queuePosition?: number,
): Ack {
  const base: Ack = {
    session,
    messageId: decision.messageId,
    disposition: decision.disposition,
    mode: decision.setting.mode,
    modeSource: decision.setting.modeSource,
    text: "",
    ...(decision.reason ? { reason: decision.reason } : {}),
    ...(decision.dropped ? { dropped: decision.dropped } : {}),
  };
  const tool = run ? runningTool(run) : undefined;
  const effects = run?.context.completedTools ?? [];
  const effectsText = effects.length > 0 ? ` Already done in this turn: ${unique(effects).join(", ")}.` : "";
  switch (decision.disposition) {
    case "started":
      return { ...base, text: "Got it, working on it." };
    case "steered": {
      if (!run) {
        return { ...base, waitsFor: "turn-start", text: "Got it. It joins the reply I am about to start." };
      }
      const fields = { runId: decision.runId ?? run.context.input.runId, completedEffects: effects };
      if (tool && run.state.endsWith(".aborting")) {
        // The run was stopped and only waits for the tool: it takes no further step, so the message is
        // answered after it, not "before any further step".
        return {
          ...base,
          ...fields,
          runningTool: tool,
          waitsFor: "own-turn",
          text:
            `Got it. The current reply is being stopped; ${tool.name} cannot be cancelled and finishes first, ` +
            `then I answer this.${effectsText}`,
        };
      }
      if (tool) {
        const stop = tool.cancellable ? "can be cancelled" : "cannot be cancelled";
        return {
          ...base,
          ...fields,
          runningTool: tool,
          waitsFor: "tool-to-finish",
          text:
            `Got it. ${tool.name} is running (it ${stop}); I will read your message as soon as it finishes, ` +
            `before any further step.${effectsText}`,
        };
      }
      return {
        ...base,
        ...fields,
        waitsFor: "next-model-call",
        text: `Got it. I will take this into account at my next step.${effectsText}`,
      };
    }
    case "queued":
      return {
        ...base,
        waitsFor: "own-turn",
        ...(queuePosition ? { queuePosition } : {}),
        text: decision.reason
          ? `Noted: ${decision.reason}.`
          : `Queued: I will answer this after the current reply${queuePosition && queuePosition > 1 ? ` (${queuePosition - 1} ahead)` : ""}.`,
      };
    case "collected":
      return {
        ...base,
        waitsFor: "quiet-window",
        text: "Noted. I will answer your messages together once you pause.",
      };
    case "interrupted": {
      const fields = { ...(run ? { runId: run.context.input.runId } : {}), completedEffects: effects };
      if (decision.setting.mode === "rollback") {
        // What the turn already did stays done: the ack says so rather than promise an undo.
        const undone =
          effects.length > 0
            ? `Already done and not undone: ${unique(effects).join(", ")}.`
            : "Nothing it did had taken effect yet.";
        const wait =
          tool && !tool.cancellable ? `${tool.name} cannot be cancelled, so it finishes first. ` : "";
        return {
          ...base,
          ...fields,
          ...(tool
            ? { runningTool: tool, ...(tool.cancellable ? {} : { waitsFor: "tool-to-finish" as const }) }
            : {}),
          text: `Rolling back the current reply: it will be forgotten, and I answer this instead. ${wait}${undone}`,
        };
      }
      if (tool && !tool.cancellable) {
        return {
          ...base,
          ...fields,
          runningTool: tool,
          waitsFor: "tool-to-finish",
          text: `Stopping the current reply. ${tool.name} cannot be cancelled, so it finishes first; then I answer this.${effectsText}`,
        };
      }
      return {
        ...base,
        ...fields,
        ...(tool ? { runningTool: tool } : {}),
        text: `Stopping the current reply${tool ? ` (cancelling ${tool.name})` : ""} to answer this.${effectsText}`,
      };
    }
    case "rejected":
      if (decision.reason === "busy")
        return {
          ...base,
          text: "Not accepted: I am busy with another reply. Please send it again once that one is answered.",
        };
      return { ...base, text: `Not accepted: ${decision.reason ?? "rejected"}.` };
    case "duplicate":
      return { ...base, text: "Already received this message; it is not run again." };
    case "dropped":
      return { ...base, text: `Not run: ${decision.reason ?? "dropped"}.` };
    case "control":
      return { ...base, text: decision.reason ?? "Done." };
  }
}

function runningTool(run: RunView): { name: string; cancellable: boolean } | undefined {
  if (!run.state.startsWith("toolBatch.toolRunning")) return undefined;
  const call = run.context.pendingCalls[run.context.toolIndex];
  if (!call) return undefined;
  return { name: call.name, cancellable: run.context.input.cancellableTools.includes(call.name) };
}

function unique(values: string[]): string[] {
  return [...new Set(values)];
}
