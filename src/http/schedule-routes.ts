import type { Gateway } from "../gateway/create-gateway.js";
import { validateSessionKey } from "../gateway/inbound/validate-inbound.js";
import type { ScheduleView } from "../gateway/schedules/schedule-runner.js";
import { sendJson } from "./http-error.js";
import type { Route } from "./router.js";

/** One entry of `GET /v1/schedules` (docs/http.md). */
export interface ScheduleSummary {
  id: string;
  session: string;
  kind: ScheduleView["kind"];
  /** The cron expression, the interval in ms, or the `at` time, as configured. */
  expression: string | number;
  /** The zone a cron expression is read in (UTC unless configured); null for the other kinds. */
  timezone: string | null;
  catchUp: boolean;
  /** ms since the epoch on the gateway's clock; null once a one-off schedule has run. */
  nextRunAt: number | null;
  /** The slot that ran last and what its trigger said; null before the first run. */
  lastRun: { at: number; outcome: string; reason?: string } | null;
}

/** `GET /v1/schedules?session=`: the config's schedules with their next and last run. */
export function scheduleRoutes(gateway: Gateway): Route[] {
  return [
    {
      method: "GET",
      path: "/v1/schedules",
      handler({ url, res }) {
        const param = url.searchParams.get("session");
        const session = param === null ? undefined : validateSessionKey(param, gateway.config, "session");
        const schedules = gateway.schedules
          .list()
          .filter((view) => session === undefined || view.session === session)
          .map(scheduleSummary);
        sendJson(res, 200, { schedules });
      },
    },
  ];
}

export function scheduleSummary(view: ScheduleView): ScheduleSummary {
  return {
    id: view.id,
    session: view.session,
    kind: view.kind,
    expression: view.timing,
    timezone: view.kind === "cron" ? (view.timezone ?? "UTC") : (view.timezone ?? null),
    catchUp: view.catchUp,
    nextRunAt: view.nextRunAt,
    lastRun:
      view.lastRunAt === undefined
        ? null
        : {
            at: view.lastRunAt,
            outcome: view.lastDisposition ?? "unknown",
            ...(view.lastReason ? { reason: view.lastReason } : {}),
          },
  };
}
