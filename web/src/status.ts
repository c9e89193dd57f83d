/**
 * What a session is doing, in words a person reads in two seconds: the run's state first (streaming, a
 * tool, a re-check), then the session's (waiting for a lane, delivering, collecting), then what waits.
 */

export type Tone = "idle" | "stream" | "tool" | "recheck" | "wait" | "deliver" | "stop" | "fail";

export interface Status {
  tone: Tone;
  label: string;
  detail?: string;
}

export interface StatusInput {
  /** The session actor's state value. */
  session: unknown;
  /** The current run's state value, or undefined when no run is active. */
  run?: unknown;
  currentTool?: { name: string; cancellable?: boolean } | undefined;
  /** Set when the current run's finalize re-check fired, with its reason. */
  recheckReason?: string | undefined;
  modelCall?: number | undefined;
  queued: number;
  lane?: { name: string; active: number; capacity: number; queued: number } | undefined;
}

/**
 * @example
 * ```ts
 * statusOf({ session: { turn: "running" }, run: "streaming", queued: 0 }).label; // "Streaming a reply"
 * ```
 */
export function statusOf(input: StatusInput): Status {
  const waiting =
    input.queued > 0
      ? `${input.queued} message${input.queued === 1 ? "" : "s"} waiting for their own turn`
      : undefined;
  const withWaiting = (status: Status): Status =>
    waiting ? { ...status, detail: status.detail ? `${status.detail} · ${waiting}` : waiting } : status;
  const run = leaf(input.run);
  if (run) {
    if (run === "streaming") {
      return withWaiting(
        input.recheckReason
          ? {
              tone: "recheck",
              label: "Re-drafting after a re-check",
              detail: `the draft was stale: ${input.recheckReason}`,
            }
          : {
              tone: "stream",
              label: "Streaming a reply",
              ...(input.modelCall ? { detail: `model call ${input.modelCall}` } : {}),
            },
      );
    }
    if (run === "working" || run === "nextTool") {
      const tool = input.currentTool;
      return withWaiting({
        tone: "tool",
        label: tool ? `Running tool ${tool.name}` : "In a tool batch",
        detail:
          tool?.cancellable === false
            ? "cannot be cancelled; steering waits for it"
            : "steering waits for the tool to end",
      });
    }
    if (run === "aborting") {
      return withWaiting({
        tone: "stop",
        label: "Stopping",
        detail: `waiting for ${input.currentTool?.name ?? "the tool"} to finish (it cannot be cancelled)`,
      });
    }
    if (run === "finalizing" || run === "recheck") {
      return withWaiting({
        tone: "recheck",
        label: "Re-checking the draft",
        detail: "does it answer the newest message?",
      });
    }
    if (run === "idle") return withWaiting({ tone: "wait", label: "Starting the turn" });
  }
  const session = leaf(input.session);
  switch (session) {
    case "waitingForLane": {
      const lane = input.lane;
      const detail = lane
        ? `lane ${lane.name}: ${lane.active} of ${lane.capacity} slots busy${lane.queued ? `, ${lane.queued} queued` : ""}`
        : "the lane scheduler has no free slot yet";
      return withWaiting({ tone: "wait", label: "Waiting for a lane slot", detail });
    }
    case "running":
      return withWaiting({ tone: "stream", label: "Turn running" });
    case "delivering":
      return withWaiting({ tone: "deliver", label: "Delivering the reply" });
    case "collecting":
      return withWaiting({
        tone: "wait",
        label: "Collecting messages",
        detail: "the burst runs as one turn after a quiet window",
      });
    case "resetting":
      return withWaiting({ tone: "stop", label: "Starting a new conversation" });
    default:
      return withWaiting({ tone: "idle", label: "Idle" });
  }
}

/** The innermost state name of a state value (`{ turn: "running" }` → `running`). */
export function leaf(value: unknown): string | undefined {
  if (typeof value === "string") return value;
  if (value && typeof value === "object") {
    const entries = Object.values(value);
    return entries.length > 0 ? leaf(entries[0]) : undefined;
  }
  return undefined;
}
