/** The schedules card: each configured schedule, when it runs next and what its last run did. */
import type { ScheduleSummary } from "./api.js";
import { h } from "./dom.js";
import "./schedules.css";

/** "every 15 min", "cron 0 9 * * 1-5 (Europe/Paris)", "at 2026-12-24 17:00:00". */
export function timingText(schedule: ScheduleSummary): string {
  if (schedule.kind === "everyMs") return `every ${duration(Number(schedule.expression))}`;
  if (schedule.kind === "cron") return `cron ${schedule.expression} (${schedule.timezone ?? "UTC"})`;
  const at = typeof schedule.expression === "number" ? schedule.expression : Date.parse(schedule.expression);
  return `at ${Number.isNaN(at) ? String(schedule.expression) : when(at)}`;
}

export function renderSchedules(
  container: HTMLElement,
  schedules: ScheduleSummary[] | null,
  selected: string | null,
  onSelect: (session: string) => void,
): void {
  if (schedules === null) {
    container.replaceChildren(h("p", { class: "empty" }, "Could not load the schedules."));
    return;
  }
  if (schedules.length === 0) {
    container.replaceChildren(h("p", { class: "empty" }, "No schedules in this gateway's config."));
    return;
  }
  const rows = schedules.map((schedule) => {
    const session = h(
      "button",
      { type: "button", class: "link", title: "Open this session" },
      schedule.session,
    );
    session.addEventListener("click", () => onSelect(schedule.session));
    const last = schedule.lastRun;
    return h(
      "tr",
      { "data-schedule": schedule.id, class: schedule.session === selected ? "on" : "" },
      h("td", { class: "sched-id" }, schedule.id),
      h("td", {}, session),
      h(
        "td",
        {},
        timingText(schedule),
        schedule.catchUp
          ? ""
          : h("span", { class: "muted", title: "a run missed while down is skipped" }, " · no catch-up"),
      ),
      h("td", { class: "sched-next" }, schedule.nextRunAt === null ? "done" : when(schedule.nextRunAt)),
      h(
        "td",
        { class: "sched-last" },
        last
          ? h(
              "span",
              { title: last.reason ?? "" },
              h("span", { class: `chip outcome-${last.outcome}` }, last.outcome),
              ` ${when(last.at)}`,
              last.reason ? h("span", { class: "muted" }, ` · ${last.reason}`) : "",
            )
          : h("span", { class: "muted" }, "not run yet"),
      ),
    );
  });
  container.replaceChildren(
    h(
      "table",
      { class: "schedules" },
      h(
        "thead",
        {},
        h(
          "tr",
          {},
          ...["id", "session", "timing", "next run", "last run"].map((label) => h("th", {}, label)),
        ),
      ),
      h("tbody", {}, ...rows),
    ),
  );
}

function when(at: number): string {
  const date = new Date(at);
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} ${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}`;
}

function duration(ms: number): string {
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000} h`;
  if (ms % 60_000 === 0) return `${ms / 60_000} min`;
  if (ms % 1000 === 0) return `${ms / 1000} s`;
  return `${ms} ms`;
}
