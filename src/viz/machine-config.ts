/**
 * Turns a machine back into the literal config it was written from: plain JSON that `createMachine`
 * (and so Stately's editor) loads as it is. Implementations appear by name (actions, guards, actors,
 * delays), never as functions; targets are sibling keys, `.child` paths or `#id` references.
 */
import type { AnyStateMachine, AnyStateNode, AnyTransitionDefinition } from "xstate";
import { actionName, guardLabel, isInternal } from "./labels.js";

type Json = string | number | boolean | null | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

/**
 * The machine's config as JSON-ready data, in document order.
 *
 * @example
 * ```ts
 * const config = toMachineConfig(runMachine);
 * createMachine(config).root.states.toolBatch.initial.target[0].key; // "nextTool"
 * ```
 */
export function toMachineConfig(machine: AnyStateMachine): JsonObject {
  return { id: machine.id, ...nodeConfig(machine.root) };
}

/**
 * `toMachineConfig` as pretty-printed JSON with a trailing newline (what `visualizations/*.json` holds).
 *
 * @example
 * ```ts
 * createMachine(JSON.parse(toConfigJson(runMachine))); // loads as it is
 * ```
 */
export function toConfigJson(machine: AnyStateMachine): string {
  return `${JSON.stringify(toMachineConfig(machine), null, 2)}\n`;
}

function nodeConfig(node: AnyStateNode): JsonObject {
  const out: JsonObject = {};
  if (node.type === "final" || node.type === "parallel" || node.type === "history") out.type = node.type;
  if (node.type === "history") out.history = node.history === "deep" ? "deep" : "shallow";
  if (node.description !== undefined) out.description = node.description;
  if (node.tags.length > 0) out.tags = [...node.tags];
  const initial = node.type === "compound" ? node.initial?.target[0] : undefined;
  if (initial) out.initial = initial.key;
  const entry = node.entry.filter((a) => !isAfterTimer(a)).map(actionConfig);
  if (entry.length > 0) out.entry = entry;
  const exit = node.exit.filter((a) => !isAfterTimer(a)).map(actionConfig);
  if (exit.length > 0) out.exit = exit;

  const claimed = new Set<string>();
  const invoke = node.invoke.map((def): JsonObject => {
    const src: unknown = (def as { src: unknown }).src;
    const item: JsonObject = { id: def.id, src: typeof src === "string" ? src : def.id };
    for (const [key, prefix] of [
      ["onDone", "xstate.done.actor."],
      ["onError", "xstate.error.actor."],
      ["onSnapshot", "xstate.snapshot."],
    ] as const) {
      const eventType = `${prefix}${def.id}`;
      const list = node.transitions.get(eventType);
      if (list?.length) item[key] = list.map((t) => transitionConfig(node, t));
      claimed.add(eventType);
    }
    return item;
  });
  if (invoke.length > 0) out.invoke = invoke;

  const on: JsonObject = {};
  const after: JsonObject = {};
  for (const [eventType, list] of node.transitions) {
    if (claimed.has(eventType)) continue;
    const own = list.filter((t) => !isInternal(t));
    if (own.length === 0) continue;
    if (eventType.startsWith("xstate.after.")) {
      const delay: unknown = (own[0] as { delay?: unknown }).delay;
      after[String(delay)] = own.map((t) => transitionConfig(node, t));
    } else {
      on[eventType] = own.map((t) => transitionConfig(node, t));
    }
  }
  if (Object.keys(on).length > 0) out.on = on;
  if (Object.keys(after).length > 0) out.after = after;
  const always = (node.always ?? []).map((t) => transitionConfig(node, t));
  if (always.length > 0) out.always = always;

  const children = Object.entries(node.states);
  if (children.length > 0) {
    out.states = Object.fromEntries(children.map(([key, child]) => [key, nodeConfig(child)]));
  }
  return out;
}

/** The raise/cancel pair xstate adds for each `after` transition: the `after` block recreates it. */
function isAfterTimer(action: unknown): boolean {
  if (typeof action !== "function") return false;
  const id: unknown = Reflect.get(action, "id");
  const sendId: unknown = Reflect.get(action, "sendId");
  const ref =
    actionName(action) === "xstate.raise" ? id : actionName(action) === "xstate.cancel" ? sendId : undefined;
  return typeof ref === "string" && ref.startsWith("xstate.after.");
}

function transitionConfig(source: AnyStateNode, t: AnyTransitionDefinition): JsonObject {
  const out: JsonObject = {};
  const targets = (t.target ?? []).map((target) => targetRef(source, target));
  if (targets.length === 1) out.target = targets[0]!;
  else if (targets.length > 1) out.target = targets;
  if (t.guard !== undefined) out.guard = guardConfig(t.guard);
  const actions = t.actions.map(actionConfig);
  if (actions.length > 0) out.actions = actions;
  if (t.reenter) out.reenter = true;
  if (t.description !== undefined) out.description = t.description;
  return out;
}

/** A sibling by key, a descendant by `.path`, anything else by its `#id`. */
function targetRef(source: AnyStateNode, target: AnyStateNode): string {
  if (target.parent !== undefined && target.parent === source.parent) return target.key;
  const inside = source.path.every((segment, i) => target.path[i] === segment);
  if (inside && target.path.length > source.path.length) {
    return `.${target.path.slice(source.path.length).join(".")}`;
  }
  return `#${target.id}`;
}

function guardConfig(guard: unknown): Json {
  if (typeof guard === "object" && guard !== null && "type" in guard) {
    const params = plain((guard as { params?: unknown }).params);
    return params === undefined ? guardLabel(guard) : { type: guardLabel(guard), params };
  }
  // Higher-order guards keep their shape in the name (`and(a, not(b))`): JSON cannot hold the functions.
  return guardLabel(guard);
}

function actionConfig(action: unknown): Json {
  const type = actionName(action);
  if (typeof action === "object" && action !== null) {
    const params = plain((action as { params?: unknown }).params);
    return params === undefined ? type : { type, params };
  }
  if (typeof action === "function" && type === "xstate.sendTo") {
    // A built-in sendTo keeps its static target and event as params, so the diagram says what it sends.
    const to: unknown = Reflect.get(action, "to");
    const event: unknown = Reflect.get(action, "event");
    const params = plain({ to, event });
    return params === undefined ? type : { type, params };
  }
  return type;
}

/** JSON-safe copy, or undefined when the value holds functions (dynamic params cannot be written down). */
function plain(value: unknown): Json | undefined {
  if (value === undefined || typeof value === "function") return undefined;
  if (value === null || typeof value === "string" || typeof value === "boolean") return value;
  if (typeof value === "number") return Number.isFinite(value) ? value : null;
  if (Array.isArray(value)) {
    const items = value.map(plain);
    return items.includes(undefined) ? undefined : (items as Json[]);
  }
  if (typeof value === "object") {
    const out: JsonObject = {};
    for (const [key, item] of Object.entries(value)) {
      const copy = plain(item);
      if (copy === undefined) return undefined;
      out[key] = copy;
    }
    return out;
  }
  return undefined;
}
