/**
 * The operator page: pick a session, talk to it, and watch why it does what it does. Everything comes
 * from the HTTP API (`/v1/...`): the session list, the machines' configs, the lanes, the event stream
 * (with `state` events for the diagrams) and the session's deliveries.
 */
import { type Ack, api, type GatewayEvent, openDeliveries, openEvents, type SessionSummary } from "./api.js";
import { onTokenWanted } from "./auth.js";
import { ChatView } from "./chat-view.js";
import { mountClusterView } from "./cluster-view.js";
import { drawMachine, type LiveDiagram } from "./diagram.js";
import { h } from "./dom.js";
import { machineGraph, type StateConfig } from "./machine-graph.js";
import { type RunView, stateValueOf } from "./run-view.js";
import { renderSchedules } from "./schedules-view.js";
import { sessionItem } from "./session-item.js";
import { sessionTree } from "./session-tree.js";
import {
  type LaneGroupTable,
  renderCommitments,
  renderExplanation,
  renderLanes,
  stateText,
  Timeline,
} from "./side-views.js";
import { statusOf } from "./status.js";
import "./style.css";

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;

const app = {
  selected: null as string | null,
  sessions: new Map<string, SessionSummary>(),
  sessionValue: "idle" as unknown,
  run: null as RunView | null,
  lanes: {} as Record<string, { active: number; queued: number; capacity: number }>,
  laneGroups: {} as LaneGroupTable,
  diagrams: {} as { session?: LiveDiagram; run?: LiveDiagram },
  closeDeliveries: null as (() => void) | null,
  /** The selected session's live events that came while its recent past was being fetched. */
  early: null as Array<{ id: string | undefined; event: GatewayEvent }> | null,
};

const chat = new ChatView((id) => void explain(id));
const timeline = new Timeline();

async function boot(): Promise<void> {
  $("messages").replaceWith(chat.element);
  chat.element.id = "messages";
  $("timeline-box").append(timeline.element);
  $("composer").addEventListener("submit", (e) => {
    e.preventDefault();
    void send();
  });
  $<HTMLTextAreaElement>("input").addEventListener("keydown", (e) => {
    // Enter sends; Shift+Enter is a new line (and IME composition is left alone).
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      void send();
    }
  });
  $("new-session").addEventListener("submit", (e) => {
    e.preventDefault();
    const input = $<HTMLInputElement>("new-key");
    if (input.value.trim()) select(input.value.trim());
    input.value = "";
  });
  for (const tab of document.querySelectorAll<HTMLButtonElement>(".tabs button")) {
    tab.addEventListener("click", () => showTab(tab.dataset.tab!));
  }
  onTokenWanted((asking) => {
    if (!asking) return;
    $("conn").className = "conn off";
    $("conn").textContent = "needs a token";
  });
  window.addEventListener("hashchange", () => {
    const key = keyFromHash();
    if (key && key !== app.selected) select(key);
  });

  const machines = await api.machines();
  for (const name of ["session", "run"] as const) {
    const config = machines[name] as StateConfig | undefined;
    if (!config) continue;
    const diagram = await drawMachine(machineGraph(config), $(`${name}-diagram`).clientWidth);
    app.diagrams[name] = diagram;
    $(`${name}-diagram`).replaceChildren(diagram.element);
  }
  openEvents(onEvent, (open) => {
    $("conn").className = open ? "conn on" : "conn off";
    $("conn").textContent = open ? "live" : "reconnecting…";
  });
  await refreshSessions();
  await refreshLanes();
  await refreshSchedules();
  select(keyFromHash() ?? [...app.sessions.keys()][0] ?? "web:operator");
  setInterval(() => void refreshSessions(), 2000);
  setInterval(() => void refreshLanes(), 1500);
  setInterval(() => void refreshSchedules(), 5000);
  mountClusterView();
}

function keyFromHash(): string | null {
  const match = /session=([^&]+)/.exec(location.hash);
  return match ? decodeURIComponent(match[1]!) : null;
}

function showTab(name: string): void {
  for (const tab of document.querySelectorAll<HTMLButtonElement>(".tabs button")) {
    tab.classList.toggle("on", tab.dataset.tab === name);
  }
  for (const panel of document.querySelectorAll<HTMLElement>(".tab-panel")) {
    panel.hidden = panel.id !== `tab-${name}`;
  }
}

function select(key: string): void {
  app.selected = key;
  history.replaceState(null, "", `#session=${encodeURIComponent(key)}`);
  $("session-key").textContent = key;
  $("session-key").classList.remove("no-session");
  const summary = app.sessions.get(key);
  app.sessionValue = summary ? stateValueOf(summary.state) : "idle";
  app.run = summary?.run
    ? {
        runId: summary.run.runId,
        value: stateValueOf(summary.run.state),
        status: "active",
        ...(summary.run.currentTool ? { tool: { name: summary.run.currentTool } } : {}),
      }
    : null;
  chat.clear();
  fillTimeline(key);
  app.closeDeliveries?.();
  app.closeDeliveries = openDeliveries(key, (delivery) => chat.addDelivery(delivery));
  void api.transcript(key).then(
    (records) => chat.reset(records),
    () => chat.reset([]),
  );
  void api.commitments(key).then(
    (list) => renderCommitments($("tab-commitments"), list),
    () => renderCommitments($("tab-commitments"), null),
  );
  renderSessions();
  renderMachines();
  renderLanes($("lanes"), app.lanes, key, app.laneGroups);
  showSchedules();
  $<HTMLTextAreaElement>("input").focus();
}

/**
 * The timeline starts with what the session did before the page looked (the events the server still
 * holds), then goes on live; events that arrive while the past is fetched are shown after it, once.
 * The chat takes the same past: the acks of its messages, and messages not stored yet (a steer that
 * waits for the running turn's next step) or never stored (a control command).
 */
function fillTimeline(key: string): void {
  timeline.clear();
  const early: NonNullable<typeof app.early> = [];
  app.early = early;
  const done = (past: Array<{ id: string; event: GatewayEvent }>) => {
    if (app.early !== early) return; // another session was chosen meanwhile
    app.early = null;
    const shown = new Set(past.map((item) => item.id));
    for (const item of past) {
      timeline.add(item.event);
      toChat(item.event);
    }
    for (const item of early) if (item.id === undefined || !shown.has(item.id)) timeline.add(item.event);
  };
  void api.recentEvents(key).then(done, () => done([]));
}

async function send(): Promise<void> {
  const input = $<HTMLTextAreaElement>("input");
  const text = input.value;
  if (!text.trim() || !app.selected) return;
  const key = app.selected;
  const mode = $<HTMLSelectElement>("mode").value;
  const id = `w${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;
  input.value = "";
  chat.addUser(id, text);
  try {
    const ack: Ack = await api.send(key, { text, id, ...(mode ? { mode } : {}) });
    chat.setAck(ack);
  } catch (error) {
    chat.setAck({
      session: key,
      messageId: id,
      disposition: "rejected",
      mode: mode || "steer",
      modeSource: "inline",
      text: (error as Error).message,
    });
  }
  if (!app.sessions.has(key)) void refreshSessions();
}

function onEvent(event: GatewayEvent, id?: string): void {
  // A slot is released without a lane event of its own: a session changing state may have freed one.
  if (event.type.startsWith("lane.") || (event.type === "state" && event.machine === "session"))
    scheduleLanes();
  if (event.type.startsWith("schedule.")) void refreshSchedules();
  if (event.type === "subagent.started") void refreshSessions();
  if (event.type === "state" && event.session) {
    const summary = app.sessions.get(event.session);
    if (summary && event.machine === "session") {
      summary.state = stateText(event.value).replaceAll(", ", ".");
      if (summary.state === "idle") summary.run = null;
      renderSessions();
    } else if (summary && event.machine === "run" && event.runId) {
      const state = stateText(event.value).replaceAll(", ", ".");
      summary.run =
        event.status === "active" ? { ...(summary.run ?? { passes: 0 }), runId: event.runId, state } : null;
      renderSessions();
    }
  }
  if (event.session !== app.selected) return;
  if (app.early) app.early.push({ id, event });
  else timeline.add(event);
  switch (event.type) {
    case "state":
      if (event.machine === "session") {
        app.sessionValue = event.value;
        app.diagrams.session?.show(event.value, String(event.cause ?? ""));
        caption("session", event);
      } else if (event.machine === "run" && event.runId) {
        if (app.run?.runId !== event.runId)
          app.run = { runId: event.runId, value: event.value, status: String(event.status) };
        app.run.value = event.value;
        app.run.status = String(event.status);
        app.diagrams.run?.show(event.value, String(event.cause ?? ""));
        caption("run", event);
      }
      break;
    case "model.called":
      if (app.run && app.run.runId === event.runId) app.run.call = Number(event.call);
      break;
    case "model.delta":
      chat.delta(
        String(event.runId),
        Number(event.call ?? 1),
        event.recheck === true,
        String(event.text ?? ""),
      );
      break;
    case "tool.started":
      chat.markInterim(String(event.runId));
      if (app.run && app.run.runId === event.runId) {
        app.run.tool = {
          name: String(event.name),
          ...(typeof event.cancellable === "boolean" ? { cancellable: event.cancellable } : {}),
        };
      }
      break;
    case "tool.ended":
    case "tool.skipped":
      if (app.run && app.run.runId === event.runId) delete app.run.tool;
      break;
    case "recheck.fired":
      if (app.run && app.run.runId === event.runId) app.run.recheckReason = String(event.reason);
      break;
    case "turn.ended":
      chat.endRun(String(event.runId));
      break;
    case "message.received":
    case "message.acked":
      toChat(event);
      break;
  }
  renderStatus();
}

/** A message of the selected session, from any client, and its ack. */
function toChat(event: GatewayEvent): void {
  if (event.type === "message.received")
    chat.addArrival(String(event.messageId), String(event.text ?? ""), event.at);
  else if (event.type === "message.acked") chat.setAck(event as unknown as Ack);
}

function caption(name: "session" | "run", event: GatewayEvent): void {
  const cause = String(event.cause ?? "")
    .replace(/^xstate\.done\.actor\.(.+)$/, "$1 done")
    .replace(/^xstate\.error\.actor\.(.+)$/, "$1 error")
    .replace(/^xstate\.after\.([^.]+)\..*$/, "after $1");
  $(`${name}-caption`).textContent =
    `now ${stateText(event.value)}${cause ? ` · after ${cause}` : ""}${name === "run" && event.runId ? ` · ${event.runId}` : ""}`;
}

function renderMachines(): void {
  app.diagrams.session?.show(app.sessionValue);
  $("session-caption").textContent = `now ${stateText(app.sessionValue)}`;
  if (app.run) {
    app.diagrams.run?.show(app.run.value);
    $("run-caption").textContent = `now ${stateText(app.run.value)} · ${app.run.runId}`;
  } else {
    app.diagrams.run?.show(undefined);
    $("run-caption").textContent = "no run yet: the next message starts one";
  }
  renderStatus();
}

function renderStatus(): void {
  const summary = app.selected ? app.sessions.get(app.selected) : undefined;
  const runActive = app.run && app.run.status === "active";
  const laneName = Object.keys(app.lanes).find((name) => !name.startsWith("session:")) ?? "main";
  const lane = app.lanes[laneName];
  const status = statusOf({
    session: app.sessionValue,
    run: runActive ? app.run!.value : undefined,
    currentTool: runActive ? app.run!.tool : undefined,
    recheckReason: runActive ? app.run!.recheckReason : undefined,
    modelCall: runActive ? app.run!.call : undefined,
    queued: summary?.queue.reduce((n, item) => n + Math.max(1, item.messageIds.length), 0) ?? 0,
    lane: lane ? { name: laneName, ...lane } : undefined,
  });
  const badge = $("status");
  badge.className = `status tone-${status.tone}`;
  badge.replaceChildren(
    h("span", { class: "dot" }),
    h("strong", {}, status.label),
    status.detail ? h("span", { class: "detail" }, status.detail) : "",
  );
}

async function refreshSessions(): Promise<void> {
  try {
    const list = await api.sessions();
    app.sessions = new Map(list.map((s) => [s.key, s]));
    renderSessions();
    renderStatus();
  } catch {
    // The next poll tries again; the connection badge says whether the server is there.
  }
}

function renderSessions(): void {
  const keys = [...app.sessions.keys()];
  if (app.selected && !app.sessions.has(app.selected)) keys.unshift(app.selected);
  $("session-list").replaceChildren(
    ...sessionTree(keys).map((node) => sessionItem(node, app.sessions, app.selected, select)),
  );
}

let schedules: Parameters<typeof renderSchedules>[1] = [];
async function refreshSchedules(): Promise<void> {
  try {
    schedules = await api.schedules();
  } catch {
    schedules = null;
  }
  showSchedules();
}

function showSchedules(): void {
  renderSchedules($("schedules"), schedules, app.selected, select);
}

let lanesTimer: ReturnType<typeof setTimeout> | undefined;
function scheduleLanes(): void {
  if (lanesTimer !== undefined) return;
  lanesTimer = setTimeout(() => {
    lanesTimer = undefined;
    void refreshLanes();
  }, 150);
}

async function refreshLanes(): Promise<void> {
  try {
    const snapshot = await api.lanes();
    app.lanes = snapshot.lanes;
    app.laneGroups = snapshot.groups ?? {};
    renderLanes($("lanes"), app.lanes, app.selected, app.laneGroups);
  } catch {
    // As above.
  }
}

async function explain(id: string): Promise<void> {
  if (!app.selected) return;
  showTab("explain");
  const panel = $("tab-explain");
  panel.replaceChildren(h("p", { class: "empty" }, "Loading…"));
  try {
    renderExplanation(panel, await api.explain(app.selected, id));
  } catch (error) {
    panel.replaceChildren(h("p", { class: "empty" }, `No story for ${id}: ${(error as Error).message}`));
  }
}

void boot();
