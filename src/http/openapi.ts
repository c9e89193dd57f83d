/**
 * The HTTP API described as OpenAPI 3.1, served at `GET /openapi.json`. Written by hand beside the
 * routes (they validate by hand too, not from schemas): the tests send a request to every route and
 * check the real answer against this document, and fail on a route it lacks, so the two cannot drift.
 * `npm run api:types` turns it into the types of the typed client (web/ and `tiller chat`).
 */

import {
  array,
  errors,
  eventStream,
  int,
  json,
  key,
  object,
  ref,
  schemas,
  sessionQuery,
  str,
  v1Errors,
} from "./openapi-schemas.js";

const sseNote =
  "Server-sent events. Starts with the comment `: open`, then a `: keep-alive` comment while idle. A reconnecting client sends `Last-Event-ID` (or `?after=`).";

const paths: Record<string, Record<string, unknown>> = {
  "/healthz": {
    get: {
      operationId: "health",
      responses: { "200": json("the process is up", object({ ok: { const: true } })) },
    },
  },
  "/readyz": {
    get: {
      operationId: "ready",
      responses: {
        "200": json("started and not draining", object({ ready: { const: true } })),
        ...errors(503),
      },
    },
  },
  "/openapi.json": {
    get: { operationId: "openapi", responses: { "200": json("this document", { type: "object" }) } },
  },
  "/": {
    get: {
      operationId: "operatorPage",
      responses: { "200": { description: "the operator page", content: { "text/html": { schema: str } } } },
    },
  },
  "/v1/sessions/{key}/messages": {
    post: {
      operationId: "sendMessage",
      parameters: [key],
      requestBody: { required: true, content: { "application/json": { schema: ref("MessageBody") } } },
      responses: {
        "200": json("the message is durable: what happened to it", object({ ack: ref("Ack") })),
        "409": json(
          "`reject` mode: the session is busy and did not take the message (`reason: busy`)",
          object({ ack: ref("Ack") }),
        ),
        ...errors(...v1Errors, 408, 413, 415, 431, 503),
      },
    },
  },
  "/v1/sessions/{key}": {
    get: {
      operationId: "inspectSession",
      parameters: [key],
      responses: { "200": json("the session's state", ref("SessionInspection")), ...errors(...v1Errors) },
    },
  },
  "/v1/sessions/{key}/transcript": {
    get: {
      operationId: "transcript",
      parameters: [
        key,
        { name: "after", in: "query", required: false, schema: { type: "integer", minimum: 0 } },
        { name: "all", in: "query", required: false, schema: { type: "string", enum: ["1", "true"] } },
      ],
      responses: {
        "200": json("the records after `after`", object({ records: array(ref("TranscriptRecord")) })),
        ...errors(...v1Errors),
      },
    },
  },
  "/v1/sessions/{key}/messages/{id}": {
    get: {
      operationId: "explain",
      parameters: [key, { name: "id", in: "path", required: true, schema: str }],
      responses: { "200": json("what became of the message", ref("Explanation")), ...errors(...v1Errors) },
    },
  },
  "/v1/sessions/{key}/deliveries": {
    get: {
      operationId: "deliveries",
      parameters: [key, { name: "after", in: "query", required: false, schema: str }],
      responses: {
        "200": eventStream(
          `${sseNote} \`event: delivery\` (id: its messageId, data { messageId, kind, text, runId?, at }); \`event: pruned\` (data { after, next, missed }).`,
        ),
        ...errors(...v1Errors),
      },
    },
  },
  "/v1/sessions/{key}/events": {
    get: {
      operationId: "recentEvents",
      parameters: [
        key,
        { name: "limit", in: "query", required: false, schema: { type: "integer", minimum: 1 } },
      ],
      responses: {
        "200": json(
          "the session's newest events still held",
          object({ events: array(object({ id: str, event: ref("Event") })) }),
        ),
        ...errors(...v1Errors),
      },
    },
  },
  "/v1/events": {
    get: {
      operationId: "events",
      parameters: [
        sessionQuery,
        { name: "after", in: "query", required: false, schema: str },
        {
          name: "types",
          in: "query",
          required: false,
          description:
            "Comma-separated event types (e.g. `final.delivered,turn.ended`): only these are streamed.",
          schema: str,
        },
      ],
      responses: {
        "200": eventStream(
          `${sseNote} \`event:\` the event's type, \`id:\` its id, data the event; \`event: gap\` (no id, data { dropped }) when events were dropped for a client that did not read.`,
        ),
        ...errors(...v1Errors),
      },
    },
  },
  "/v1/commitments": {
    get: {
      operationId: "commitments",
      parameters: [
        sessionQuery,
        {
          name: "status",
          in: "query",
          required: false,
          schema: { type: "string", enum: ["pending", "sent", "dismissed", "expired"] },
        },
      ],
      responses: {
        "200": json("oldest first", object({ commitments: array(ref("Commitment")) })),
        ...errors(...v1Errors),
      },
    },
  },
  "/v1/commitments/{id}/dismiss": {
    post: {
      operationId: "dismissCommitment",
      parameters: [{ name: "id", in: "path", required: true, schema: str }],
      responses: {
        "200": json("the commitment", object({ commitment: ref("Commitment") })),
        ...errors(...v1Errors),
      },
    },
  },
  "/v1/schedules": {
    get: {
      operationId: "schedules",
      parameters: [sessionQuery],
      responses: {
        "200": json("the config's schedules", object({ schedules: array(ref("Schedule")) })),
        ...errors(...v1Errors),
      },
    },
  },
  "/v1/sessions": {
    get: {
      operationId: "sessions",
      responses: {
        "200": json(
          "every session seen or stored",
          object({ sessions: array({ allOf: [ref("SessionInspection"), object({ key: str })] }) }),
        ),
        ...errors(...v1Errors),
      },
    },
  },
  "/v1/machines": {
    get: {
      operationId: "machines",
      responses: {
        "200": json(
          "each machine's config",
          object({
            machines: object({
              session: { type: "object" },
              run: { type: "object" },
              laneScheduler: { type: "object" },
              laneEntry: { type: "object" },
            }),
          }),
        ),
        ...errors(...v1Errors),
      },
    },
  },
  "/v1/lanes": {
    get: {
      operationId: "lanes",
      responses: {
        "200": json(
          "the lane scheduler's snapshot: each lane's running and waiting tasks and capacity, and each capacity group's (when any is configured)",
          object(
            {
              lanes: {
                type: "object",
                additionalProperties: object({ active: int, queued: int, capacity: int }),
              },
              groups: {
                type: "object",
                description:
                  "Capacity groups (`laneGroups`): tasks running in the group's lanes together, waiting, and its budget.",
                additionalProperties: object({ active: int, queued: int, capacity: int, lanes: array(str) }),
              },
            },
            ["lanes"],
          ),
        ),
        ...errors(...v1Errors),
      },
    },
  },
  "/v1/cluster": {
    get: {
      operationId: "cluster",
      responses: {
        "200": json("the cluster as the database has it; `{ clustered: false }` alone", {
          oneOf: [
            object({ clustered: { const: false } }),
            object(
              {
                clustered: { const: true },
                schema: str,
                process: str,
                at: str,
                lanes: array({ type: "object" }),
                processes: array({ type: "object" }),
                sessions: array({ type: "object" }),
              },
              ["clustered", "process", "lanes", "processes", "sessions"],
            ),
          ],
        }),
        ...errors(...v1Errors),
      },
    },
  },
};

/** The document served at `GET /openapi.json`. */
export const OPENAPI_DOCUMENT = {
  openapi: "3.1.0",
  info: {
    title: "Tiller gateway HTTP API",
    version: "1",
    description:
      "Errors are `{ error: { code, message, field? } }`. With `TILLER_TOKEN` set, every `/v1` request needs `Authorization: Bearer <token>`.",
  },
  components: {
    schemas,
    securitySchemes: { bearer: { type: "http", scheme: "bearer" } },
  },
  security: [{}, { bearer: [] }],
  paths,
} as const;
