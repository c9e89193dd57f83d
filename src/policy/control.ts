import { DROP_POLICIES, type DropPolicy, parseQueueMode, type QueueSettings } from "./queue-mode.js";

/**
 * Control messages act at once, whatever the queue mode, and never reach the model.
 *
 * @example
 * ```ts
 * parseControl("/queue collect debounce:2s cap:10"); // { command: "queue", settings: { mode: "collect", debounceMs: 2000, cap: 10 } }
 * parseControl("hello");                              // undefined
 * ```
 */
export type ControlCommand =
  | { command: "stop" }
  | { command: "help" }
  | { command: "new" }
  | { command: "queue"; settings: QueueSettings }
  | { command: "queue-reset" }
  | { command: "invalid"; error: string };

export function parseControl(text: string): ControlCommand | undefined {
  const trimmed = text.trim();
  if (!trimmed.startsWith("/")) return undefined;
  const [head = "", ...args] = trimmed.split(/\s+/);
  switch (head.toLowerCase()) {
    case "/stop":
      return { command: "stop" };
    case "/help":
      return { command: "help" };
    case "/new":
    case "/reset":
      return { command: "new" };
    case "/queue":
      return parseQueue(args);
    default:
      return undefined;
  }
}

function parseQueue(args: string[]): ControlCommand {
  if (args.length === 0)
    return {
      command: "invalid",
      error:
        "usage: /queue <steer|followup|collect|interrupt|reject|rollback|reset> [debounce:500ms] [cap:20] [drop:old|new|summarize]",
    };
  const [first = "", ...options] = args;
  if (first.toLowerCase() === "reset") return { command: "queue-reset" };
  const settings: QueueSettings = {};
  const mode = parseQueueMode(first);
  if (mode) settings.mode = mode;
  else options.unshift(first);
  for (const option of options) {
    const [key = "", value = ""] = option.split(":", 2);
    switch (key.toLowerCase()) {
      case "debounce": {
        const ms = parseDuration(value);
        // A user's own command must not park their messages for days (or forever: Infinity).
        if (ms === undefined || !Number.isFinite(ms) || ms > MAX_DEBOUNCE_MS)
          return {
            command: "invalid",
            error: `debounce: expected a duration like 500ms or 2s, at most 10m, got "${value}"`,
          };
        settings.debounceMs = ms;
        break;
      }
      case "cap": {
        const cap = Number(value);
        if (!Number.isInteger(cap) || cap < 1)
          return { command: "invalid", error: `cap: expected a whole number >= 1, got "${value}"` };
        settings.cap = cap;
        break;
      }
      case "drop":
        if (!DROP_POLICIES.includes(value as DropPolicy)) {
          return { command: "invalid", error: `drop: expected old, new or summarize, got "${value}"` };
        }
        settings.drop = value as DropPolicy;
        break;
      default:
        return {
          command: "invalid",
          error: `unknown /queue option "${option}" (mode must be steer, followup, collect, interrupt, reject or rollback)`,
        };
    }
  }
  return { command: "queue", settings };
}

const MAX_DEBOUNCE_MS = 10 * 60_000;

function parseDuration(value: string): number | undefined {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m)?$/.exec(value.trim());
  if (!match) return undefined;
  const amount = Number(match[1]);
  const unit = match[2] ?? "ms";
  return Math.round(unit === "ms" ? amount : unit === "s" ? amount * 1000 : amount * 60_000);
}
