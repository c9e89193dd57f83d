/** The panels beside the chat: lanes, the session's event timeline, commitments, and a message's story. */
import type { Explanation, GatewayEvent } from "./api.js";
import { clockTime, h } from "./dom.js";

type LaneTable = Record<string, { active: number; queued: number; capacity: number }>;
/** Capacity groups as `GET /v1/lanes` reports them. */
export type LaneGroupTable = Record<
  string,
  { active: number; queued: number; capacity: number; lanes: string[] }
>;

export function renderLanes(
  container: HTMLElement,
  lanes: LaneTable,
  session: string | null,
  groups: LaneGroupTable = {},
): void {
  const workload = Object.entries(lanes).filter(([name]) => !name.startsWith("session:"));
  const groupOf = new Map<string, string>();
  for (const [name, group] of Object.entries(groups)) for (const lane of group.lanes) groupOf.set(lane, name);
  // A group's budget is shared by its lanes: one row each, saying which lanes and how full.
  const groupRows = Object.entries(groups).map(([name, group]) =>
    h(
      "div",
      { class: "lane lane-group", "data-group": name },
      h(
        "span",
        { class: "lane-name", title: `capacity group of ${group.lanes.join(", ")}` },
        `group ${name}`,
      ),
      h("span", { class: "lane-members" }, group.lanes.join(" + ")),
      h("span", { class: "lane-count" }, `${group.active}/${group.capacity} active`),
      h("span", { class: `lane-queued${group.queued > 0 ? " some" : ""}` }, `${group.queued} queued`),
    ),
  );
  const own = session ? lanes[`session:${session}`] : undefined;
  const rows = workload.map(([name, lane]) => {
    const slots = Array.from({ length: Math.min(lane.capacity, 24) }, (_, i) =>
      h("span", { class: `slot${i < lane.active ? " busy" : ""}` }),
    );
    return h(
      "div",
      { class: "lane", "data-lane": name },
      h(
        "span",
        { class: "lane-name", ...(groupOf.has(name) ? { title: `in group ${groupOf.get(name)}` } : {}) },
        name,
      ),
      h(
        "span",
        { class: "slots", title: `${lane.active} of ${lane.capacity} slots busy` },
        ...slots,
        lane.capacity > 24 ? `+${lane.capacity - 24}` : "",
      ),
      h("span", { class: "lane-count" }, `${lane.active}/${lane.capacity} active`),
      h("span", { class: `lane-queued${lane.queued > 0 ? " some" : ""}` }, `${lane.queued} queued`),
    );
  });
  container.replaceChildren(
    ...(rows.length > 0 ? rows : [h("p", { class: "empty" }, "No workload lane has run anything yet.")]),
    ...groupRows,
    own
      ? h(
          "p",
          { class: "lane-own" },
          `This session's lane: ${own.active} running, ${own.queued} waiting behind it.`,
        )
      : "",
  );
}

/** One readable line for an event: its type and the fields that say what happened. */
export function eventSummary(event: GatewayEvent): string {
  const skip = new Set(["at", "type", "session", "runId", "text"]);
  const parts: string[] = [];
  if (event.type === "state") parts.push(`${String(event.machine)} → ${stateText(event.value)}`);
  else if (event.type === "model.delta") parts.push(JSON.stringify(event.text));
  else
    for (const [key, value] of Object.entries(event)) {
      if (skip.has(key) || value === undefined) continue;
      const shown = typeof value === "string" ? value : JSON.stringify(value);
      parts.push(`${key}=${shown.length > 60 ? `${shown.slice(0, 57)}…` : shown}`);
    }
  if (event.type === "message.acked" && typeof event.text === "string") parts.push(`“${event.text}”`);
  return parts.join("  ");
}

export function stateText(value: unknown): string {
  if (typeof value === "string") return value;
  if (value && typeof value === "object") {
    return Object.entries(value)
      .map(([key, inner]) => `${key}.${stateText(inner)}`)
      .join(", ");
  }
  return String(value);
}

export class Timeline {
  readonly element = h("ol", { class: "timeline" });
  private count = 0;

  clear(): void {
    this.element.replaceChildren();
    this.count = 0;
  }

  add(event: GatewayEvent): void {
    // Drafts stream many small pieces: one line per model call is enough here.
    if (event.type === "model.delta") {
      const last = this.element.lastElementChild as HTMLElement | null;
      if (last?.dataset.type === "model.delta" && last.dataset.run === event.runId) {
        last.querySelector(".what")!.textContent += String(event.text ?? "");
        return;
      }
    }
    const group = event.type.split(".")[0] ?? event.type;
    const item = h(
      "li",
      { class: `ev ev-${group}`, "data-type": event.type, "data-run": event.runId },
      h("span", { class: "at" }, clockTime(event.at)),
      h("span", { class: "type" }, event.type),
      h(
        "span",
        { class: "what" },
        event.type === "model.delta" ? String(event.text ?? "") : eventSummary(event),
      ),
    );
    this.element.append(item);
    this.count++;
    if (this.count > 400) {
      this.element.firstElementChild?.remove();
      this.count--;
    }
    const box = this.element.parentElement;
    if (box) box.scrollTop = box.scrollHeight;
  }
}

export function renderCommitments(container: HTMLElement, list: Array<Record<string, unknown>> | null): void {
  if (list === null) {
    container.replaceChildren(h("p", { class: "empty" }, "Commitments are off for this gateway."));
    return;
  }
  if (list.length === 0) {
    container.replaceChildren(h("p", { class: "empty" }, "No commitments for this session."));
    return;
  }
  container.replaceChildren(
    ...list.map((c) =>
      h(
        "div",
        { class: "commitment" },
        h("span", { class: `chip status-${String(c.status)}` }, String(c.status ?? "")),
        h("span", {}, String(c.reason ?? c.suggestedText ?? c.id ?? "")),
        c.dueWindow ? h("span", { class: "muted" }, ` due ${JSON.stringify(c.dueWindow)}`) : null,
      ),
    ),
  );
}

export function renderExplanation(container: HTMLElement, story: Explanation): void {
  const facts: Array<[string, string]> = [
    ["arrived", clockTime(story.arrivedAt)],
    ["disposition", story.disposition],
    ["mode", `${story.mode} (from ${story.modeSource})`],
    ["ack", story.ackText],
  ];
  if (story.sender) {
    const { id, name, authority } = story.sender;
    const scopes = authority?.length ? `, scopes ${authority.join(", ")}` : "";
    facts.splice(1, 0, ["from", `${name ? `${name} (${id})` : id}${scopes}`]);
  }
  if (story.firstSeenBy)
    facts.push([
      "first seen by",
      `${story.firstSeenBy.runId}, model call ${story.firstSeenBy.call}${story.firstSeenBy.recheck ? " (re-check)" : ""}`,
    ]);
  if (story.answeredBy)
    facts.push([
      "answered by",
      `${story.answeredBy.runId}${story.answeredBy.delivered ? ", delivered" : ", not delivered"}`,
    ]);
  if (story.dropped) facts.push(["dropped", story.dropped.reason]);
  container.replaceChildren(
    h("h3", {}, `Message ${story.messageId}`),
    h("dl", {}, ...facts.flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, v)])),
    story.waited.length > 0
      ? h(
          "div",
          {},
          h("h4", {}, "Where it waited"),
          h(
            "ul",
            {},
            ...story.waited.map((w) =>
              h(
                "li",
                {},
                `${w.where}: ${clockTime(w.from)} → ${w.until === undefined ? "still waiting" : clockTime(w.until)}`,
              ),
            ),
          ),
        )
      : "",
    h("h4", {}, "Story"),
    h(
      "ol",
      { class: "story" },
      ...story.timeline.map((step) =>
        h("li", {}, h("span", { class: "at" }, clockTime(step.at)), ` ${step.what}`),
      ),
    ),
  );
}
