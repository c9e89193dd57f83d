/**
 * The cluster card of the operator page: shown only when the server runs on PostgreSQL with other
 * processes (`GET /v1/cluster` answers `clustered: true`). The lanes are the cluster's (capacity,
 * active and queued across every process), then the processes and which one owns or runs each
 * session.
 */
import { h, wallTime } from "./dom.js";
import "./cluster-view.css";

export interface ClusterInfo {
  clustered: boolean;
  schema?: string;
  process?: string;
  at?: string;
  lanes?: Array<{ lane: string; capacity: number | null; active: number; queued: number }>;
  processes?: Array<{ id: string; startedAt: string; aliveUntil: string; alive: boolean; active: number }>;
  sessions?: Array<{
    session: string;
    owner: string | null;
    ownerLeaseUntil: string | null;
    runningOn: string | null;
    lane: string | null;
  }>;
}

export async function fetchCluster(): Promise<ClusterInfo> {
  const response = await fetch("/v1/cluster");
  // An older server without the endpoint runs alone.
  if (response.status === 404) return { clustered: false };
  if (!response.ok) throw new Error(`${response.status} ${response.statusText}`);
  return (await response.json()) as ClusterInfo;
}

/** Adds the (hidden) cluster card after the lanes card and keeps it current. */
export function mountClusterView(everyMs = 1500): void {
  const lanesCard = document.getElementById("lanes")?.closest(".card");
  if (!lanesCard) return;
  const body = h("div", { id: "cluster", class: "cluster" });
  const caption = h("span", { class: "caption", id: "cluster-caption" });
  const card = h(
    "div",
    { class: "card", id: "cluster-card", hidden: true },
    h("div", { class: "card-head" }, h("h2", {}, "Cluster"), caption),
    body,
  );
  lanesCard.after(card);
  const refresh = async () => {
    try {
      const info = await fetchCluster();
      card.hidden = !info.clustered;
      if (info.clustered) {
        caption.textContent = `schema ${info.schema} · this process ${info.process}`;
        renderCluster(body, info);
      }
    } catch {
      // The next poll tries again; the connection badge says whether the server is there.
    }
  };
  void refresh();
  setInterval(() => void refresh(), everyMs);
}

export function renderCluster(container: HTMLElement, info: ClusterInfo): void {
  const lanes = (info.lanes ?? []).map((lane) =>
    h(
      "tr",
      { "data-cluster-lane": lane.lane },
      h("td", { class: "mono" }, lane.lane),
      h("td", {}, lane.capacity === null ? "–" : String(lane.capacity)),
      h("td", { class: "active" }, String(lane.active)),
      h("td", { class: lane.queued > 0 ? "queued some" : "queued" }, String(lane.queued)),
    ),
  );
  const processes = (info.processes ?? []).map((proc) =>
    h(
      "li",
      { "data-process": proc.id, class: proc.alive ? "alive" : "dead" },
      h("span", { class: "mono" }, proc.id),
      proc.id === info.process ? h("span", { class: "tag" }, "this one") : "",
      h("span", { class: "muted" }, `${proc.active} running`),
      h("span", { class: "muted" }, proc.alive ? `alive until ${time(proc.aliveUntil)}` : "gone"),
    ),
  );
  const sessions = (info.sessions ?? []).map((s) =>
    h(
      "tr",
      { "data-cluster-session": s.session },
      h("td", { class: "mono" }, s.session),
      h("td", { class: "mono owner" }, s.owner ?? "–"),
      h("td", { class: "mono running" }, s.runningOn ? `${s.runningOn} (${s.lane})` : "–"),
    ),
  );
  container.replaceChildren(
    h(
      "table",
      { class: "cluster-lanes" },
      h("tr", {}, h("th", {}, "lane"), h("th", {}, "capacity"), h("th", {}, "active"), h("th", {}, "queued")),
      ...lanes,
    ),
    h("h3", {}, `Processes (${processes.length})`),
    h("ul", { class: "cluster-processes" }, ...processes),
    h("h3", {}, "Sessions"),
    sessions.length > 0
      ? h(
          "table",
          { class: "cluster-sessions" },
          h("tr", {}, h("th", {}, "session"), h("th", {}, "owner"), h("th", {}, "running on")),
          ...sessions,
        )
      : h("p", { class: "empty" }, "No session is owned or running right now."),
  );
}

function time(iso: string): string {
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : wallTime(date.getTime());
}
