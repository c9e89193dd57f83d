import { nanoid } from "nanoid";
import type { WebChannel } from "../adapters/channels/web-channel.js";
import { GatewayDrainingError } from "../errors.js";
import { EVENT_TYPES } from "../events/event-types.js";
import type { Gateway } from "../gateway/create-gateway.js";
import { validateSessionKey } from "../gateway/inbound/validate-inbound.js";
import { parseControl } from "../policy/control.js";
import type { Sender } from "../policy/sender.js";
import { rolledBackSeqs } from "../policy/turn-context.js";
import { refusalOfAck } from "./error-status.js";
import type { EventFeed } from "./event-feed.js";
import { HttpError, sendJson } from "./http-error.js";
import { readJsonBody } from "./read-json-body.js";
import type { Route, RouteContext } from "./router.js";
import { idle, viewSessions } from "./session-view.js";
import { SseStream } from "./sse-stream.js";
import { streamDeliveries } from "./stream-deliveries.js";
import { streamEvents } from "./stream-events.js";

export interface V1Deps {
  gateway: Gateway;
  web: WebChannel;
  feed: EventFeed;
  bodyLimit: number;
  heartbeatMs: number;
  /** Why new messages are refused now (503): starting, draining; undefined while ready. */
  refusal(): "starting" | "draining" | undefined;
}

/** The `/v1` endpoints of the HTTP API (docs/http.md). */
export function v1Routes(deps: V1Deps): Route[] {
  const { gateway, web, feed } = deps;
  const key = (context: RouteContext) => validateSessionKey(context.params.key, gateway.config, "key");

  return [
    {
      method: "POST",
      path: "/v1/sessions/:key/messages",
      async handler(context) {
        const session = key(context);
        const body = await readJsonBody(context.req, deps.bodyLimit);
        if (body === null || typeof body !== "object" || Array.isArray(body))
          throw invalid("body", "expected a JSON object");
        const { text, id, channel, mode, sender, editOf } = body as Record<string, unknown>;
        if (typeof text !== "string") throw invalid("text", "expected a string");
        // Nothing to answer: an empty message would start a model turn on nothing.
        if (text.trim() === "") throw invalid("text", "expected a message, received only white space");
        if (id !== undefined && typeof id !== "string") throw invalid("id", "expected a string");
        if (channel !== undefined && typeof channel !== "string")
          throw invalid("channel", "expected a string");
        if (mode !== undefined && typeof mode !== "string") throw invalid("mode", "expected a string");
        if (editOf !== undefined && typeof editOf !== "string")
          throw invalid("editOf", "expected the id of an earlier message");
        const refusal = deps.refusal() ?? (gateway.isDraining ? "draining" : undefined);
        if (refusal === "starting")
          throw new HttpError(503, "STARTING", "the gateway is still starting", undefined, {
            "retry-after": "1",
          });
        // Controls (`/stop`) still act while draining: they help the drain end.
        if (refusal === "draining" && !parseControl(text)) throw new GatewayDrainingError("the server");
        const ack = await gateway.receive({
          session,
          channel: channel ?? "web",
          text,
          id: id ?? `http-${nanoid(12)}`,
          ...(mode !== undefined ? { mode } : {}),
          ...(editOf !== undefined ? { editOf } : {}),
          // Checked by receive(): a bad sender is a 400 naming the field.
          ...(sender !== undefined ? { sender: sender as Sender } : {}),
        });
        const refused = refusalOfAck(ack);
        if (refused) throw refused;
        // `reject` mode: the session was busy and did not take the message.
        sendJson(context.res, ack.disposition === "rejected" && ack.reason === "busy" ? 409 : 200, { ack });
      },
    },
    {
      method: "GET",
      path: "/v1/sessions/:key",
      async handler(context) {
        const session = key(context);
        const length = async (name: string) => (await gateway.store.read(name)).at(-1)?.seq ?? 0;
        // Several processes: the session as the cluster has it, wherever its turn runs.
        const view = (await viewSessions(gateway, [session], length)).get(session);
        if (view) return sendJson(context.res, 200, view);
        // A stored session this process has not loaded yet is idle, not unknown.
        const transcriptLength = await length(session);
        if (transcriptLength === 0) throw notFound("session", `no session "${session}"`);
        sendJson(context.res, 200, {
          ...idle(transcriptLength),
          ...(gateway.cluster ? { owner: null } : {}),
        });
      },
    },
    {
      method: "GET",
      path: "/v1/sessions/:key/transcript",
      async handler(context) {
        const session = key(context);
        const afterText = context.url.searchParams.get("after");
        const after = afterText === null ? 0 : Number(afterText);
        if (!Number.isInteger(after) || after < 0)
          throw invalid("after", `expected a non-negative integer, received ${JSON.stringify(afterText)}`);
        const all = ["1", "true"].includes(context.url.searchParams.get("all") ?? "");
        const stored = await gateway.store.read(session);
        // A rolled-back turn's records are hidden ones: only `all` shows them.
        const rolledBack = all ? new Set<number>() : rolledBackSeqs(stored);
        const records = stored.filter(
          (record) =>
            record.seq > after &&
            (all || ((record.role !== "custom" || record.display) && !rolledBack.has(record.seq))),
        );
        sendJson(context.res, 200, { records });
      },
    },
    {
      method: "GET",
      path: "/v1/sessions/:key/messages/:id",
      handler(context) {
        const session = key(context);
        const id = context.params.id!;
        const explanation = gateway.explain(session, id);
        if (!explanation) throw notFound("id", `no message "${id}" in session "${session}"`);
        sendJson(context.res, 200, explanation);
      },
    },
    {
      method: "GET",
      path: "/v1/sessions/:key/deliveries",
      async handler(context) {
        const session = key(context);
        const after = lastEventId(context) ?? context.url.searchParams.get("after") ?? undefined;
        const sse = new SseStream(context.req, context.res, deps.heartbeatMs);
        await streamDeliveries(sse, web, session, after === "" ? undefined : after);
      },
    },
    {
      method: "GET",
      path: "/v1/sessions/:key/events",
      handler(context) {
        const session = key(context);
        const limitText = context.url.searchParams.get("limit");
        const limit = limitText === null ? 200 : Number(limitText);
        if (!Number.isInteger(limit) || limit < 1 || limit > feed.capacity)
          throw invalid(
            "limit",
            `expected an integer from 1 to ${feed.capacity}, received ${JSON.stringify(limitText)}`,
          );
        sendJson(context.res, 200, { events: feed.recent(session, limit) });
      },
    },
    {
      method: "GET",
      path: "/v1/events",
      handler(context) {
        const sessionParam = context.url.searchParams.get("session");
        const session =
          sessionParam === null ? undefined : validateSessionKey(sessionParam, gateway.config, "session");
        const after = lastEventId(context) ?? context.url.searchParams.get("after") ?? undefined;
        const types = eventTypesParam(context.url.searchParams.get("types"));
        const sse = new SseStream(context.req, context.res, deps.heartbeatMs);
        streamEvents(sse, feed, session, after, types);
      },
    },
  ];
}

function lastEventId(context: RouteContext): string | undefined {
  const value = context.req.headers["last-event-id"];
  return typeof value === "string" && value !== "" ? value : undefined;
}

/** `types=final.delivered,turn.ended`: names of events, each one Tiller emits; absent means every type. */
function eventTypesParam(text: string | null): ReadonlySet<string> | undefined {
  if (text === null) return undefined;
  const names = text.split(",");
  if (names.length > EVENT_TYPES.size) throw invalid("types", `at most ${EVENT_TYPES.size} names`);
  for (const name of names) {
    if (!EVENT_TYPES.has(name))
      throw invalid(
        "types",
        `unknown event type ${JSON.stringify(name.slice(0, 64))} (comma-separated names, e.g. final.delivered)`,
      );
  }
  return new Set(names);
}

function invalid(field: string, message: string): HttpError {
  return new HttpError(400, "INVALID_INPUT", `${field}: ${message}`, field);
}

function notFound(field: string, message: string): HttpError {
  return new HttpError(404, "NOT_FOUND", message, field);
}
