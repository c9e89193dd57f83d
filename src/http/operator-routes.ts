import type { ServerResponse } from "node:http";
import type { Gateway } from "../gateway/create-gateway.js";
import { laneEntryMachine } from "../machines/lane-entry.machine.js";
import { laneSchedulerMachine } from "../machines/lane-scheduler.machine.js";
import { runMachine } from "../machines/run.machine.js";
import { sessionMachine } from "../machines/session.machine.js";
import { toMachineConfig } from "../viz/machine-config.js";
import type { Route } from "./router.js";
import { idle, type SessionView, viewSessions } from "./session-view.js";

/**
 * One entry of `GET /v1/sessions`: `inspectSession()` plus its key, and on a gateway of several
 * processes the process that owns the session (`null`: nobody does, it is idle).
 */
export type SessionSummary = SessionView & { key: string };

/**
 * The endpoints the operator page reads besides the core API (docs/http.md, "Operator page
 * endpoints"): the session list, the machine configs it draws, and the lanes.
 *
 * @example
 * ```ts
 * createHttpServer({ gateway, web, routes: operatorRoutes(gateway) });
 * ```
 */
export function operatorRoutes(gateway: Gateway): Route[] {
  // The configs never change while the process runs: build the body once.
  const machines = JSON.stringify({
    machines: {
      session: toMachineConfig(sessionMachine),
      run: toMachineConfig(runMachine),
      laneScheduler: toMachineConfig(laneSchedulerMachine),
      laneEntry: toMachineConfig(laneEntryMachine),
    },
  });
  return [
    {
      method: "GET",
      path: "/v1/sessions",
      async handler({ res }) {
        send(res, 200, { sessions: await listSessions(gateway) });
      },
    },
    {
      method: "GET",
      path: "/v1/machines",
      handler({ res }) {
        res.writeHead(200, {
          "content-type": "application/json; charset=utf-8",
          "cache-control": "no-cache",
        });
        res.end(machines);
      },
    },
    {
      method: "GET",
      path: "/v1/lanes",
      handler({ res }) {
        send(res, 200, gateway.lanes.snapshot());
      },
    },
  ];
}

/** Live sessions first (most recent activity last seen), then the stored ones this process has not loaded. */
export async function listSessions(gateway: Gateway): Promise<SessionSummary[]> {
  const keys = new Set(gateway.sessionKeys());
  for (const key of await gateway.store.sessions()) keys.add(key);
  // Sessions not loaded here are listed without reading their transcripts.
  const views = await viewSessions(gateway, [...keys], async () => 0);
  const owner = gateway.cluster ? { owner: null } : {};
  const out: SessionSummary[] = [];
  for (const key of keys) out.push({ key, ...(views.get(key) ?? { ...idle(0), ...owner }) });
  return out.sort((a, b) => Number(b.run !== null) - Number(a.run !== null) || (a.key < b.key ? -1 : 1));
}

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/json; charset=utf-8", "cache-control": "no-cache" });
  res.end(JSON.stringify(body));
}
