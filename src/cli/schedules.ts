import { parseArgs } from "node:util";
import { errorMessage } from "../errors.js";
import type { ScheduleSummary } from "../http/schedule-routes.js";
import { UsageError } from "./serve-setup.js";

export const SCHEDULES_USAGE =
  "usage: tiller schedules list [--url http://127.0.0.1:8787] [--session KEY] [--json]";

/**
 * `tiller schedules list`: the schedules of a running `tiller serve` (`GET /v1/schedules`, with
 * `TILLER_TOKEN` as the bearer token when set), one line each, or the JSON body with `--json`.
 * Returns what to print; a server that cannot be reached or refuses is an error that says so.
 *
 * @example
 * ```ts
 * await schedulesCommand(["list", "--json"], process.env); // '[{"id":"digest",...}]'
 * ```
 */
export async function schedulesCommand(argv: string[], env: NodeJS.ProcessEnv): Promise<string> {
  const [action, ...rest] = argv;
  if (action !== "list") throw new UsageError(SCHEDULES_USAGE);
  let values: { url?: string; session?: string; json?: boolean };
  try {
    values = parseArgs({
      args: rest,
      strict: true,
      allowPositionals: false,
      options: { url: { type: "string" }, session: { type: "string" }, json: { type: "boolean" } },
    }).values;
  } catch (error) {
    throw new UsageError(`${errorMessage(error)}\n${SCHEDULES_USAGE}`);
  }
  const base = (values.url ?? env.TILLER_URL ?? "http://127.0.0.1:8787").replace(/\/+$/, "");
  const query = values.session === undefined ? "" : `?session=${encodeURIComponent(values.session)}`;
  let response: Response;
  try {
    response = await fetch(`${base}/v1/schedules${query}`, {
      headers: env.TILLER_TOKEN ? { authorization: `Bearer ${env.TILLER_TOKEN}` } : {},
    });
  } catch (error) {
    throw new UsageError(`cannot reach ${base} (${errorMessage(error)}); is tiller serve running?`);
  }
  const body = (await response.json().catch(() => ({}))) as {
    schedules?: ScheduleSummary[];
    error?: { message?: string };
  };
  if (!response.ok || !body.schedules)
    throw new UsageError(`${base}: ${response.status} ${body.error?.message ?? response.statusText}`);
  if (values.json) return JSON.stringify(body.schedules);
  return body.schedules.map(scheduleLine).join("\n") || "no schedules";
}

function scheduleLine(s: ScheduleSummary): string {
  const timing =
    s.kind === "everyMs"
      ? `every ${s.expression} ms`
      : s.kind === "cron"
        ? `cron "${s.expression}" ${s.timezone}`
        : `at ${s.expression}`;
  const next = s.nextRunAt === null ? "no next run" : `next ${new Date(s.nextRunAt).toISOString()}`;
  const last = s.lastRun
    ? `last ${new Date(s.lastRun.at).toISOString()} ${s.lastRun.outcome}${s.lastRun.reason ? ` (${s.lastRun.reason})` : ""}`
    : "never ran";
  return `${s.id}  ${s.session}  ${timing}${s.catchUp ? "" : "  catchUp: false"}  ${next}  ${last}`;
}
