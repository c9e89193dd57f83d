// The building blocks of the OpenAPI document (src/http/openapi.ts): schema helpers, the shared
// parameters and error answers, and the named schemas of `components`.
/** A JSON Schema object of the document. */
export type Schema = Record<string, unknown>;

/** A reference to a named schema of `components.schemas`. */
export const ref = (name: string): Schema => ({ $ref: `#/components/schemas/${name}` });
// The scalar schemas, and nullable, object and array builders.
export const str: Schema = { type: "string" };
export const int: Schema = { type: "integer" };
const bool: Schema = { type: "boolean" };
const nullable = (schema: Schema): Schema => ({ anyOf: [schema, { type: "null" }] });
export const object = (
  properties: Record<string, Schema>,
  required: string[] = Object.keys(properties),
): Schema => ({
  type: "object",
  properties,
  required,
});
export const array = (items: Schema): Schema => ({ type: "array", items });

/** A JSON answer with its description and schema. */
export const json = (description: string, schema: Schema) => ({
  description,
  content: { "application/json": { schema } },
});
/** A server-sent events answer. */
export const eventStream = (description: string) => ({
  description,
  content: { "text/event-stream": { schema: str } },
});

/** The error answers an operation may give, by status, each with the one error body. */
export function errors(...statuses: number[]): Record<string, unknown> {
  const why: Record<number, string> = {
    400: "invalid input: `field` names what (a path parameter, a query parameter, the body or one of its fields)",
    401: "a token is required (`TILLER_TOKEN`) and the request lacks it",
    404: "no such session, message, commitment or path",
    405: "the path exists with other methods (`Allow`)",
    408: "the request was not received within the request timeout",
    413: "the body is over the limit",
    415: "the body is not declared `application/json`",
    431: "the request's headers are over the limit",
    500: "a fault in the server, logged; nothing accepted is lost",
    503: "draining (`GATEWAY_DRAINING`) or starting (`STARTING`): retry after `Retry-After` seconds",
  };
  return Object.fromEntries(statuses.map((status) => [String(status), json(why[status]!, ref("Error"))]));
}

/** The error answers every `/v1` route can give. */
export const v1Errors = [400, 401, 404, 405, 500] as const;
/** The `{key}` path parameter: a session key. */
export const key = {
  name: "key",
  in: "path",
  required: true,
  description: "the session key, percent-encoded",
  schema: str,
};
/** The optional `?session=` filter. */
export const sessionQuery = { name: "session", in: "query", required: false, schema: str };

/** The named schemas of `components.schemas`. */
export const schemas: Record<string, Schema> = {
  Error: object({
    error: object(
      {
        code: {
          type: "string",
          description: "stable, to branch on (`INVALID_INPUT`, `GATEWAY_DRAINING`, ...)",
        },
        message: str,
        field: { type: "string", description: "the field, parameter or header at fault" },
      },
      ["code", "message"],
    ),
  }),
  MessageBody: {
    ...object(
      {
        text: { type: "string", minLength: 1, description: "the message; not empty or only white space" },
        id: { type: "string", description: "the message id (made by the server when absent)" },
        channel: { type: "string", description: "one of the gateway's channels", default: "web" },
        mode: {
          type: "string",
          description: "inline queue mode: steer, followup, collect, interrupt, reject, rollback",
        },
        sender: object({ id: str, name: str, authority: array(str) }, ["id"]),
        editOf: {
          type: "string",
          description: "the id of an earlier message of the session this one replaces",
        },
      },
      ["text"],
    ),
    description: "Unknown fields are ignored.",
  },
  Ack: object(
    {
      session: str,
      messageId: str,
      disposition: {
        type: "string",
        enum: [
          "started",
          "steered",
          "queued",
          "collected",
          "interrupted",
          "rejected",
          "duplicate",
          "control",
        ],
      },
      mode: str,
      modeSource: { type: "string", enum: ["inline", "session", "channel", "global", "default"] },
      text: str,
      reason: str,
      runId: str,
      waitsFor: str,
      runningTool: object({ name: str, cancellable: bool }),
      completedEffects: array(str),
      dropped: array(str),
      queuePosition: int,
      durable: { const: false },
      busyWith: str,
      owner: str,
    },
    ["session", "messageId", "disposition", "mode", "modeSource", "text"],
  ),
  SessionInspection: object(
    {
      state: str,
      run: nullable(
        object(
          {
            runId: str,
            state: str,
            passes: int,
            currentTool: str,
            process: {
              ...str,
              description: "on a gateway of several processes: the process running it, when not this one",
            },
            lane: str,
          },
          ["runId", "state", "passes"],
        ),
      ),
      queue: array(object({ kind: str, messageIds: array(str) })),
      lane: nullable(object({ active: int, queued: int, capacity: int })),
      transcriptLength: int,
      owner: { ...nullable(str), description: "on a gateway of several processes: the owning process" },
    },
    ["state", "run", "queue", "lane", "transcriptLength"],
  ),
  TranscriptRecord: { ...object({ seq: int, role: str }), description: "a record as stored (docs/store.md)" },
  Explanation: object(
    {
      messageId: str,
      arrivedAt: { type: "number" },
      disposition: str,
      mode: str,
      modeSource: str,
      ackText: str,
      waited: array(object({ where: str, from: { type: "number" } }, ["where", "from"])),
      timeline: array(object({ at: { type: "number" }, what: str })),
    },
    ["messageId", "disposition", "timeline"],
  ),
  Event: { ...object({ at: { type: "number" }, type: str, session: str, runId: str }, ["at", "type"]) },
  Commitment: object({ id: str }),
  Schedule: object({
    id: str,
    session: str,
    kind: { type: "string", enum: ["everyMs", "cron", "at"] },
    expression: { type: ["string", "number"] },
    timezone: nullable(str),
    catchUp: bool,
    nextRunAt: nullable({ type: "number" }),
    lastRun: nullable(object({ at: { type: "number" }, outcome: str, reason: str }, ["at", "outcome"])),
  }),
};
