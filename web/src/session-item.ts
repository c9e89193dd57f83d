import type { SessionSummary } from "./api.js";
import { h } from "./dom.js";
import type { SessionNode } from "./session-tree.js";

/**
 * A session's entry in the list: its key, state, queue and lane, and its subagent sessions in a list of
 * their own under it. `onSelect` is called with the key of the entry clicked.
 */
export function sessionItem(
  node: SessionNode,
  sessions: ReadonlyMap<string, SessionSummary>,
  selected: string | null,
  onSelect: (key: string) => void,
): HTMLLIElement {
  const key = node.key;
  const s = sessions.get(key);
  const queued = s ? s.queue.reduce((n, item) => n + Math.max(1, item.messageIds.length), 0) : 0;
  const last = (name: string) => name.split(".").at(-1) ?? name;
  const state = s?.run ? `${last(s.state)} · run ${last(s.run.state)}` : s ? last(s.state) : "new";
  const item = h(
    "li",
    { class: key === selected ? "on" : "", "data-session": key },
    h(
      "button",
      { type: "button" },
      h("span", { class: "key" }, key),
      h("span", { class: "st" }, state),
      h(
        "span",
        { class: "meta" },
        `${queued} queued`,
        s?.lane ? ` · lane ${s.lane.active}/${s.lane.capacity}` : "",
      ),
    ),
    node.children.length > 0
      ? h(
          "ul",
          { class: "subagents", "aria-label": `subagents of ${key}` },
          ...node.children.map((child) =>
            sessionItem({ key: child, children: [] }, sessions, selected, onSelect),
          ),
        )
      : null,
  );
  item.querySelector("button")!.addEventListener("click", () => onSelect(key));
  return item;
}
