import type { TillerEvent } from "../events.js";
import type { ScenarioResult } from "./runner.js";

/** Event types a person reading a timeline wants to see; the JSON output keeps all of them. */
const SHOWN = new Set([
  "message.acked",
  "turn.started",
  "turn.ended",
  "model.called",
  "tool.started",
  "tool.ended",
  "tool.skipped",
  "steer.injected",
  "recheck.fired",
  "recheck.skipped",
  "final.delivered",
  "final.undelivered",
  "final.silent",
  "marker.appended",
  "recovery.queued",
  "recovery.delivered",
  "recovery.failed",
  "notice.sent",
  "message.sent",
  "message.dropped",
  "lane.waitExceeded",
  "lane.timeout",
  "process.restarted",
  "session.reset",
]);

/**
 * A readable timeline: one line per decision, aligned simulated times, the session on every line.
 *
 * @example
 * ```ts
 * console.log(formatTimeline(result));
 * //    1.000s  telegram:42  message.acked     m2 steered (steer, default): Got it. write_file is running ...
 * ```
 */
export function formatTimeline(result: ScenarioResult): string {
  const lines = [`== ${result.name}`];
  const sessionWidth = Math.max(8, ...result.events.map((event) => (event.session ?? "").length));
  for (const event of result.events) {
    if (!SHOWN.has(event.type)) continue;
    const time = `${(event.at / 1000).toFixed(3)}s`.padStart(10);
    lines.push(
      `${time}  ${(event.session ?? "-").padEnd(sessionWidth)}  ${event.type.padEnd(18)} ${describeEvent(event)}`,
    );
  }
  const delivered = result.deliveries.map(
    (delivery) => `${delivery.kind}@${(delivery.at / 1000).toFixed(3)}s`,
  );
  lines.push(
    `   ${result.deliveries.length} deliveries (${delivered.join(", ") || "none"}), ${result.modelCalls.length} model calls`,
  );
  return lines.join("\n");
}

function describeEvent(event: TillerEvent): string {
  const quote = (text: string) => {
    const flat = text.replace(/\s+/g, " ");
    return JSON.stringify(flat.length > 70 ? `${flat.slice(0, 67)}...` : flat);
  };
  switch (event.type) {
    case "message.acked":
      return `${event.messageId} ${event.disposition} (${event.mode}, ${event.modeSource}): ${quote(event.text)}`;
    case "turn.started":
      return `${event.runId} ${event.kind} with ${event.messageIds.join(", ") || "no new message"}`;
    case "turn.ended": {
      const error = event.error;
      const why = error ? `: ${error.code} ${error.message}` : event.reason ? ` (${event.reason})` : "";
      return `${event.runId} ${event.status}${why}`;
    }
    case "model.called":
      return `${event.runId} call ${event.call}${event.recheck ? " (re-check)" : ""}${event.recovery ? " (recovery)" : ""} latest=${quote(event.latestUser)}`;
    case "tool.started":
    case "tool.ended":
    case "tool.skipped":
      return `${event.name} ${event.callId}${"status" in event ? ` ${event.status}` : ""}`;
    case "steer.injected":
      return `${event.messageIds.join(", ")} into ${event.runId}`;
    case "recheck.fired":
    case "recheck.skipped":
      return `${event.reason}${"signal" in event ? ` (signal ${event.signal})` : ""}: ${event.detail}`;
    case "message.dropped":
      return `${event.messageId}: ${event.reason}`;
    case "lane.waitExceeded":
      return `${event.lane} waited ${event.waitedMs}ms (${event.queueAhead} ahead)`;
    default:
      return event.runId ? String(event.runId) : "";
  }
}
