/**
 * A machine config (as `GET /v1/machines` serves it, the same JSON as `visualizations/<id>.json`) turned
 * into the graph the page lays out: one node per state (compound states hold their children), one
 * initial marker per compound state, one edge per source/target pair with every event that takes it.
 * Transitions that stay in their state (targetless) and the machine's own transitions are listed apart:
 * drawn as edges they would only clutter the picture.
 */

export interface TransitionConfig {
  target?: string | string[];
  guard?: string | { type: string };
  description?: string;
}
export interface StateConfig {
  id?: string;
  type?: string;
  initial?: string;
  description?: string;
  on?: Record<string, TransitionConfig[]>;
  after?: Record<string, TransitionConfig[]>;
  always?: TransitionConfig[];
  invoke?: Array<{ id: string; src: string; onDone?: TransitionConfig[]; onError?: TransitionConfig[] }>;
  states?: Record<string, StateConfig>;
}

export interface GraphState {
  /** Dotted path from the machine id: `run.toolBatch.nextTool`. */
  id: string;
  key: string;
  parent: string | null;
  children: string[];
  initial?: string;
  final: boolean;
  description?: string;
  /** What the state runs while active: `callModel`, `runTool`. */
  invokes: string[];
}

export interface GraphEdge {
  id: string;
  source: string;
  target: string;
  /** One line per transition: `callModel done [hasToolCalls]`. */
  labels: string[];
}

export interface MachineGraph {
  id: string;
  states: Map<string, GraphState>;
  /** Top-level state ids, in document order. */
  roots: string[];
  initial?: string;
  edges: GraphEdge[];
  /** Transitions that do not change the state, and those the machine takes from any state. */
  notes: string[];
}

/**
 * @example
 * ```ts
 * const graph = machineGraph(await (await fetch("/v1/machines")).json().then((m) => m.machines.run));
 * graph.states.get("run.toolBatch")!.children; // ["run.toolBatch.nextTool", "run.toolBatch.toolRunning"]
 * ```
 */
export function machineGraph(config: StateConfig): MachineGraph {
  const id = config.id ?? "machine";
  const states = new Map<string, GraphState>();
  const visit = (node: StateConfig, path: string, key: string, parent: string | null): void => {
    const children = Object.keys(node.states ?? {}).map((child) => `${path}.${child}`);
    states.set(path, {
      id: path,
      key,
      parent,
      children,
      ...(node.initial ? { initial: `${path}.${node.initial}` } : {}),
      final: node.type === "final",
      ...(node.description ? { description: node.description } : {}),
      invokes: (node.invoke ?? []).map((item) => item.src),
    });
    for (const [childKey, child] of Object.entries(node.states ?? {})) {
      visit(child, `${path}.${childKey}`, childKey, path);
    }
  };
  visit(config, id, id, null);
  const root = states.get(id)!;
  states.delete(id);
  for (const childId of root.children) states.get(childId)!.parent = null;

  const edges = new Map<string, GraphEdge>();
  const notes: string[] = [];
  const add = (sourceId: string, label: string, transition: TransitionConfig): void => {
    const full = transition.guard ? `${label} [${guardName(transition.guard)}]` : label;
    const targets = transition.target === undefined ? [] : [transition.target].flat();
    if (targets.length === 0 || sourceId === id) {
      const where = sourceId === id ? "any state" : sourceId.slice(id.length + 1);
      const to =
        targets.length > 0
          ? ` → ${targets.map((t) => resolve(id, sourceId, t).slice(id.length + 1)).join(", ")}`
          : "";
      notes.push(`${where}: ${full}${to}`);
      return;
    }
    for (const target of targets) {
      const targetId = resolve(id, sourceId, target);
      const key = `${sourceId}->${targetId}`;
      const edge = edges.get(key) ?? { id: `e${edges.size}`, source: sourceId, target: targetId, labels: [] };
      if (!edge.labels.includes(full)) edge.labels.push(full);
      edges.set(key, edge);
    }
  };
  const walk = (node: StateConfig, path: string): void => {
    for (const [event, list] of Object.entries(node.on ?? {})) for (const t of list) add(path, event, t);
    for (const [delay, list] of Object.entries(node.after ?? {}))
      for (const t of list) add(path, `after ${/^\d+$/.test(delay) ? `${delay}ms` : delay}`, t);
    for (const t of node.always ?? []) add(path, "always", t);
    for (const item of node.invoke ?? []) {
      for (const t of item.onDone ?? []) add(path, `${item.id} done`, t);
      for (const t of item.onError ?? []) add(path, `${item.id} error`, t);
    }
    for (const [childKey, child] of Object.entries(node.states ?? {})) walk(child, `${path}.${childKey}`);
  };
  walk(config, id);
  return {
    id,
    states,
    roots: root.children,
    ...(root.initial ? { initial: root.initial } : {}),
    edges: [...edges.values()],
    notes,
  };
}

/** A target as the config writes it (sibling key, `.child` path, `#id`) as a state id. */
export function resolve(machineId: string, sourceId: string, target: string): string {
  if (target.startsWith("#")) return target.slice(1);
  if (target.startsWith(".")) return `${sourceId}${target}`;
  const parent = sourceId === machineId ? machineId : sourceId.slice(0, sourceId.lastIndexOf("."));
  return `${parent}.${target}`;
}

function guardName(guard: string | { type: string }): string {
  return typeof guard === "string" ? guard : guard.type;
}

/**
 * The ids of the states a state value names, outermost first: `{ toolBatch: { toolRunning: "working" } }`
 * → `run.toolBatch`, `run.toolBatch.toolRunning`, `run.toolBatch.toolRunning.working`.
 *
 * @example
 * ```ts
 * activeStates("run", "streaming"); // ["run.streaming"]
 * ```
 */
export function activeStates(machineId: string, value: unknown): string[] {
  const out: string[] = [];
  const walk = (prefix: string, v: unknown): void => {
    if (typeof v === "string") out.push(`${prefix}.${v}`);
    else if (v && typeof v === "object") {
      for (const [key, inner] of Object.entries(v)) {
        out.push(`${prefix}.${key}`);
        walk(`${prefix}.${key}`, inner);
      }
    }
  };
  walk(machineId, value);
  return out;
}

/**
 * The edges a step from one state value to the next took: one edge whose source holds the old state
 * and whose target holds the new one (the most specific pair wins), or two through a state that only
 * lasted a moment (`toolRunning → nextTool → streaming`: `nextTool` never shows in a snapshot).
 */
export function takenEdges(graph: MachineGraph, from: unknown, to: unknown): GraphEdge[] {
  const before = activeStates(graph.id, from);
  const after = activeStates(graph.id, to);
  let best: { edges: GraphEdge[]; score: number } | undefined;
  for (const edge of graph.edges) {
    const s = before.indexOf(edge.source);
    if (s < 0) continue;
    const t = after.indexOf(edge.target);
    if (t >= 0) {
      const score = 100 + s + t;
      if (!best || score > best.score) best = { edges: [edge], score };
      continue;
    }
    for (const next of graph.edges) {
      if (next.source !== edge.target) continue;
      const t2 = after.indexOf(next.target);
      if (t2 < 0) continue;
      const score = s + t2;
      if (!best || score > best.score) best = { edges: [edge, next], score };
    }
  }
  return best?.edges ?? [];
}
