/**
 * Names for transitions and guards shared by the Mermaid diagrams, the machine configs and the shape
 * comparison, so that all three describe a transition the same way.
 */
import type { AnyTransitionDefinition } from "xstate";

/**
 * A readable name for a transition's event: `callModel done`, `run error`, `after collectWindow`,
 * `always`, or the event type itself.
 *
 * @example
 * ```ts
 * eventLabel(streaming.transitions.get("xstate.done.actor.callModel")![0]); // "callModel done"
 * ```
 */
export function eventLabel(t: AnyTransitionDefinition): string {
  const type = String(t.eventType);
  if (type === "") return "always";
  const suffixes: Array<[string, string]> = [
    ["xstate.done.actor.", " done"],
    ["xstate.error.actor.", " error"],
    ["xstate.snapshot.", " snapshot"],
  ];
  const match = suffixes.find(([prefix]) => type.startsWith(prefix));
  if (match) return type.slice(match[0].length) + match[1];
  if (type.startsWith("xstate.after.") && "delay" in t) return `after ${delayLabel(t.delay)}`;
  if (type.startsWith("xstate.done.state.")) return "done";
  return type;
}

/** `1000ms` for a number, the delay's name for a named delay. */
export function delayLabel(delay: unknown): string {
  return typeof delay === "number" ? `${delay}ms` : typeof delay === "string" ? delay : "(dynamic)";
}

/**
 * A guard as its author wrote it: a name, or `and(a, not(b))` for xstate's higher-order guards.
 *
 * @example
 * ```ts
 * guardLabel(and(["canSkip", not("isReady")])); // "and(canSkip, not(isReady))"
 * ```
 */
export function guardLabel(guard: unknown): string {
  if (typeof guard === "string") return guard;
  if (typeof guard === "function") {
    // `and`/`or`/`not` from xstate are functions carrying their operands in `.guards`.
    const inner: unknown = (guard as { guards?: unknown }).guards;
    if (Array.isArray(inner)) return `${guard.name}(${inner.map(guardLabel).join(", ")})`;
    return guard.name || "inline";
  }
  if (typeof guard === "object" && guard !== null && "type" in guard) return String(guard.type);
  return "guard";
}

/**
 * An action's name: a named action's key, or a built-in's type (`xstate.sendTo`, `xstate.assign`).
 *
 * @example
 * ```ts
 * actionName("bufferSteer"); // "bufferSteer"
 * ```
 */
export function actionName(action: unknown): string {
  if (typeof action === "string") return action;
  if (typeof action === "function") {
    const type: unknown = (action as { type?: unknown }).type;
    return typeof type === "string" ? type : action.name || "inline";
  }
  if (typeof action === "object" && action !== null && "type" in action) return String(action.type);
  return "inline";
}

/** Route guards are xstate's internal `event.to` matcher, not something a machine's author wrote. */
export function isInternal(t: AnyTransitionDefinition): boolean {
  return t.eventType === "xstate.route";
}
