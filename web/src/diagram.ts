/**
 * Draws a machine graph as SVG with elkjs (layered layout, compound states as boxes holding their
 * children) and keeps it live: `show(value)` highlights the active states and marks the transition
 * that led there. The layout is computed once per machine; a state change only swaps CSS classes.
 *
 * The drawing is never scaled down: a state name shrunk to fit a narrow column is unreadable. It is laid
 * out left to right when that fits the width there is, else top to bottom; when neither fits, the card
 * scrolls sideways.
 */
import ELK, { type ElkExtendedEdge, type ElkNode } from "elkjs/lib/elk.bundled.js";
import { activeStates, type MachineGraph, takenEdges } from "./machine-graph.js";

const elk = new ELK();
const SVG = "http://www.w3.org/2000/svg";
const FONT = 12;
const LABEL_FONT = 10;

export interface LiveDiagram {
  element: SVGSVGElement;
  /** Highlights `value` (an XState state value); marks the edge from the previous value. */
  show(value: unknown, cause?: string): void;
}

/** Room around the layout, so the stroke of an active state at the edge is not cut in half. */
const MARGIN = 4;

/** Draws `graph` for a container `width` px wide (the layout that fits it, see the header). */
export async function drawMachine(
  graph: MachineGraph,
  width = Number.POSITIVE_INFINITY,
): Promise<LiveDiagram> {
  const laidOut = await layOut(graph, width);
  const svg = document.createElementNS(SVG, "svg");
  svg.classList.add("machine");
  const viewWidth = Math.ceil(laidOut.width ?? 100) + 2 * MARGIN;
  const viewHeight = Math.ceil(laidOut.height ?? 100) + 2 * MARGIN;
  svg.setAttribute("viewBox", `${-MARGIN} ${-MARGIN} ${viewWidth} ${viewHeight}`);
  // One unit of the layout is one pixel: the text keeps the size the stylesheet gives it.
  setAttrs(svg, { width: viewWidth, height: viewHeight });
  svg.setAttribute("role", "img");
  svg.setAttribute("aria-label", `${graph.id} machine`);
  svg.innerHTML = `<defs><marker id="arrow-${graph.id}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" class="arrowhead"/></marker><marker id="arrow-${graph.id}-hot" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" class="arrowhead hot"/></marker></defs>`;
  const nodes = new Map<string, SVGGElement>();
  const edgeEls = new Map<string, SVGGElement>();
  // Boxes, then edges, then states: an edge label that meets a state hides behind it instead of
  // covering its name, and edges inside a box stay above the box's fill.
  const boxLayer = document.createElementNS(SVG, "g");
  const nodeLayer = document.createElementNS(SVG, "g");
  const edgeLayer = document.createElementNS(SVG, "g");
  svg.append(boxLayer, edgeLayer, nodeLayer);

  const drawNode = (node: ElkNode): void => {
    const state = graph.states.get(node.id);
    const g = document.createElementNS(SVG, "g");
    const x = node.x ?? 0;
    const y = node.y ?? 0;
    if (node.id.endsWith(".__initial")) {
      g.innerHTML = `<circle cx="${x + 5}" cy="${y + 5}" r="5" class="initial"/>`;
    } else if (state) {
      const compound = state.children.length > 0;
      g.classList.add("state", compound ? "compound" : "atomic");
      if (state.final) g.classList.add("final");
      g.dataset.state = state.id;
      const title = document.createElementNS(SVG, "title");
      title.textContent = state.description ?? state.key;
      const rect = document.createElementNS(SVG, "rect");
      setAttrs(rect, { x, y, width: node.width ?? 0, height: node.height ?? 0, rx: compound ? 10 : 8 });
      const text = document.createElementNS(SVG, "text");
      text.textContent = state.key;
      setAttrs(text, compound ? { x: x + 10, y: y + 17 } : { x: x + (node.width ?? 0) / 2, y: y + 20 });
      text.classList.add(compound ? "title" : "name");
      g.append(title, rect, text);
      if (state.invokes.length > 0 && !compound) {
        const sub = document.createElementNS(SVG, "text");
        sub.textContent = state.invokes.join(", ");
        setAttrs(sub, { x: x + (node.width ?? 0) / 2, y: y + 34 });
        sub.classList.add("invokes");
        g.append(sub);
      }
      nodes.set(state.id, g);
    }
    (state && state.children.length > 0 ? boxLayer : nodeLayer).append(g);
    for (const child of node.children ?? []) drawNode(child);
  };
  for (const child of laidOut.children ?? []) drawNode(child);

  const drawEdges = (node: ElkNode): void => {
    for (const edge of (node.edges ?? []) as ElkExtendedEdge[]) {
      const section = edge.sections?.[0];
      if (!section) continue;
      const g = document.createElementNS(SVG, "g");
      g.classList.add("edge");
      const points = [section.startPoint, ...(section.bendPoints ?? []), section.endPoint];
      const path = document.createElementNS(SVG, "path");
      path.setAttribute("d", points.map((p, i) => `${i === 0 ? "M" : "L"}${p.x},${p.y}`).join(" "));
      path.setAttribute("marker-end", `url(#arrow-${graph.id})`);
      g.append(path);
      const labels = graph.edges.find((e) => e.id === edge.id)?.labels ?? [];
      if (labels.length > 0) {
        // Only the transition just taken shows its label (CSS); the others say it on hover.
        const title = document.createElementNS(SVG, "title");
        title.textContent = labels.join("\n");
        const mid = midpoint(points);
        const text = document.createElementNS(SVG, "text");
        text.classList.add("label");
        // Above its edge, but never above the drawing's top (the label is 11 px high).
        setAttrs(text, { x: mid.x, y: Math.max(mid.y - 5, 8) });
        text.dataset.x = String(mid.x);
        // A short edge has no room for a label: the card's caption names the event instead.
        if (pathLength(points) < 60) text.classList.add("no-room");
        g.append(title, text);
      }
      edgeEls.set(edge.id, g);
      edgeLayer.append(g);
    }
    for (const child of node.children ?? []) drawEdges(child);
  };
  drawEdges(laidOut);

  let previous: unknown;
  return {
    element: svg,
    show(value: unknown, cause?: string) {
      const active = new Set(activeStates(graph.id, value));
      for (const [id, g] of nodes) g.classList.toggle("active", active.has(id));
      const taken = previous === undefined ? [] : takenEdges(graph, previous, value);
      const hotIds = new Set(taken.map((e) => e.id));
      for (const [id, g] of edgeEls) {
        const hot = hotIds.has(id);
        g.classList.toggle("hot", hot);
        g.querySelector("path")?.setAttribute("marker-end", `url(#arrow-${graph.id}${hot ? "-hot" : ""})`);
      }
      for (const edge of taken) {
        // The label of the transition that fired: the one naming the event, else the edge's first.
        const wanted = cause === undefined ? undefined : causeLabel(cause);
        const label = firedLabel(edge.labels, wanted);
        const text = edgeEls.get(edge.id)?.querySelector<SVGTextElement>("text.label");
        if (text) {
          text.textContent = label ?? "";
          keepInside(text, viewWidth - 2 * MARGIN);
        }
      }
      previous = value;
    },
  };
}

/**
 * Left to right when it fits `width` at full size; else top to bottom (a narrow column), or whichever of
 * the two is narrower when neither fits.
 */
async function layOut(graph: MachineGraph, width: number): Promise<ElkNode> {
  const across = await elk.layout(toElk(graph, "RIGHT"));
  if ((across.width ?? 0) + 2 * MARGIN <= width) return across;
  const down = await elk.layout(toElk(graph, "DOWN"));
  return (down.width ?? 0) < (across.width ?? 0) ? down : across;
}

/**
 * Moves a shown edge label (centred on its edge's midpoint) sideways so that all of it stays inside the
 * drawing: a label on an edge near the border would otherwise be cut.
 */
function keepInside(text: SVGTextElement, width: number): void {
  const half = text.getComputedTextLength() / 2;
  const x = Number(text.dataset.x ?? text.getAttribute("x") ?? 0);
  const inside = half * 2 >= width ? width / 2 : Math.min(Math.max(x, half), width - half);
  text.setAttribute("x", String(inside));
}

function toElk(graph: MachineGraph, direction: "RIGHT" | "DOWN"): ElkNode {
  const build = (id: string): ElkNode => {
    const state = graph.states.get(id)!;
    if (state.children.length === 0) {
      const sub = state.invokes.join(", ");
      const width = Math.max(textWidth(state.key, FONT), textWidth(sub, LABEL_FONT)) + 28;
      return { id, width: Math.max(width, 70), height: sub ? 42 : 30 };
    }
    const children = state.children.map(build);
    if (state.initial) children.unshift({ id: `${id}.__initial`, width: 10, height: 10 });
    return {
      id,
      layoutOptions: { "elk.padding": "[top=30,left=14,bottom=14,right=14]" },
      children,
    };
  };
  const children = graph.roots.map(build);
  const edges: ElkExtendedEdge[] = graph.edges.map((edge) => ({
    id: edge.id,
    sources: [edge.source],
    targets: [edge.target],
  }));
  const addInitial = (id: string, initial: string | undefined) => {
    if (initial) edges.push({ id: `${id}.__initial->`, sources: [`${id}.__initial`], targets: [initial] });
  };
  if (graph.initial) children.unshift({ id: `${graph.id}.__initial`, width: 10, height: 10 });
  addInitial(graph.id, graph.initial);
  for (const state of graph.states.values()) addInitial(state.id, state.initial);
  return {
    id: graph.id,
    layoutOptions: {
      "elk.algorithm": "layered",
      "elk.direction": direction,
      "elk.hierarchyHandling": "INCLUDE_CHILDREN",
      "elk.json.edgeCoords": "ROOT",
      "elk.json.shapeCoords": "ROOT",
      "elk.layered.spacing.nodeNodeBetweenLayers": "26",
      "elk.spacing.nodeNode": "18",
      "elk.layered.spacing.edgeNodeBetweenLayers": "12",
      "elk.spacing.edgeEdge": "6",
      "elk.padding": "[top=8,left=8,bottom=8,right=8]",
    },
    children,
    edges,
  };
}

/**
 * The label of the transition that fired: the one whose event is the cause when only one is; else just
 * the event (which guard held is not known, and the diagram must not claim one).
 */
function firedLabel(labels: string[], wanted: string | undefined): string {
  const eventOf = (label: string) => label.split(" [")[0] ?? label;
  const matching = labels.filter((label) => eventOf(label) === wanted);
  if (matching.length === 1) return matching[0]!;
  const events = [...new Set((matching.length > 0 ? matching : labels).map(eventOf))];
  return events.join(" / ");
}

/** An event type as the graph's labels name it (`xstate.done.actor.callModel` → `callModel done`). */
function causeLabel(type: string): string {
  const done = /^xstate\.done\.actor\.(.+)$/.exec(type);
  if (done) return `${done[1]} done`;
  const error = /^xstate\.error\.actor\.(.+)$/.exec(type);
  if (error) return `${error[1]} error`;
  const after = /^xstate\.after\.([^.]+)\./.exec(type);
  if (after) return `after ${/^\d+$/.test(after[1]!) ? `${after[1]}ms` : after[1]}`;
  return type;
}

function pathLength(points: Array<{ x: number; y: number }>): number {
  return points.slice(1).reduce((sum, p, i) => sum + Math.hypot(p.x - points[i]!.x, p.y - points[i]!.y), 0);
}

/** The point halfway along a polyline. */
function midpoint(points: Array<{ x: number; y: number }>): { x: number; y: number } {
  const lengths = points.slice(1).map((p, i) => Math.hypot(p.x - points[i]!.x, p.y - points[i]!.y));
  let rest = lengths.reduce((a, b) => a + b, 0) / 2;
  for (let i = 0; i < lengths.length; i++) {
    const length = lengths[i]!;
    if (rest <= length && length > 0) {
      const a = points[i]!;
      const b = points[i + 1]!;
      return { x: a.x + ((b.x - a.x) * rest) / length, y: a.y + ((b.y - a.y) * rest) / length };
    }
    rest -= length;
  }
  return points[0] ?? { x: 0, y: 0 };
}

function textWidth(text: string, size: number): number {
  return Math.ceil(text.length * size * 0.58);
}

function setAttrs(el: Element, attrs: Record<string, string | number>): void {
  for (const [key, value] of Object.entries(attrs)) el.setAttribute(key, String(value));
}
