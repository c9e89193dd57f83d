import { Ajv2020 } from "ajv/dist/2020.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { clusterRoute } from "../../src/http/cluster-route.js";
import { OPENAPI_DOCUMENT } from "../../src/http/openapi.js";
import { operatorRoutes } from "../../src/http/operator-routes.js";
import { startTestServer, type TestServer } from "../support/http-gateway.js";

// The OpenAPI document against the server: every route is in it, and a request to every operation
// (answers and refusals) gets an answer whose status, content type and body the document describes.

type Operation = { responses: Record<string, { content?: Record<string, unknown> }> };
const doc = OPENAPI_DOCUMENT as unknown as { paths: Record<string, Record<string, Operation>> };
const ajv = new Ajv2020({ strict: false, allErrors: true });
ajv.addSchema(OPENAPI_DOCUMENT as object, "openapi");

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({
    demo: { wordDelayMs: 0, toolMs: 50 },
    config: {
      commitments: { enabled: true },
      laneGroups: { background: { capacity: 2, lanes: ["cron", "subagent"] } },
    },
    http: { bodyLimit: 4096 },
  });
  // The routes `tiller serve` adds: the document covers them too.
  server.http.router.add(...operatorRoutes(server.gateway), clusterRoute());
  await server.post("web:1", { text: "hello", id: "m1" });
  for (let i = 0; i < 2000 && server.gateway.inspectSession("web:1")?.state !== "idle"; i++)
    await new Promise((resolve) => setTimeout(resolve, 10));
});
afterAll(() => server.close());

const exercised = new Set<string>();
const pointer = (...parts: string[]) =>
  parts.map((part) => part.replaceAll("~", "~0").replaceAll("/", "~1")).join("/");

/** Sends the request and checks the answer against the document's operation `method path`. */
async function check(method: "get" | "post", path: string, actual: string, init: RequestInit = {}) {
  const response = await fetch(`${server.url}${actual}`, { ...init, method: method.toUpperCase() });
  const status = String(response.status);
  const operation = doc.paths[path]?.[method];
  expect(operation, `${method} ${path} is in the document`).toBeDefined();
  const documented = operation!.responses[status];
  expect(
    documented,
    `${method} ${actual} answered ${status}, which the document does not list`,
  ).toBeDefined();
  const type = (response.headers.get("content-type") ?? "").split(";")[0]!;
  expect(Object.keys(documented!.content ?? {}), `${method} ${actual}: content type`).toContain(type);
  exercised.add(`${method} ${path}`);
  if (type === "text/event-stream" || type === "text/html") {
    await response.body?.cancel();
    return;
  }
  const body = await response.json();
  const validate = ajv.compile({
    $ref: `openapi#/${pointer("paths", path, method, "responses", status, "content", type, "schema")}`,
  });
  expect(
    validate(body),
    `${method} ${actual} ${status}: ${ajv.errorsText(validate.errors)}\n${JSON.stringify(body)}`,
  ).toBe(true);
}

const asJson = (body: unknown): RequestInit => ({
  headers: { "content-type": "application/json" },
  body: typeof body === "string" ? body : JSON.stringify(body),
});

describe("GET /openapi.json", { timeout: 30_000 }, () => {
  it("is the document, OpenAPI 3.1", async () => {
    const response = await fetch(`${server.url}/openapi.json`);
    expect(await response.json()).toEqual(JSON.parse(JSON.stringify(OPENAPI_DOCUMENT)));
    expect(OPENAPI_DOCUMENT.openapi).toBe("3.1.0");
  });

  it("lists every route the server has", () => {
    const routes = server.http.router
      .list()
      .map((route) => `${route.method.toLowerCase()} ${route.path.replace(/:(\w+)/g, "{$1}")}`);
    const documented = Object.entries(doc.paths).flatMap(([path, operations]) =>
      Object.keys(operations).map((method) => `${method} ${path}`),
    );
    expect(routes.filter((route) => !documented.includes(route))).toEqual([]);
  });

  it("describes every answer of every operation, refusals included", async () => {
    const s = "/v1/sessions/web%3A1";
    await check("get", "/healthz", "/healthz");
    await check("get", "/readyz", "/readyz");
    await check("get", "/openapi.json", "/openapi.json");
    await check("get", "/", "/");
    await check("post", "/v1/sessions/{key}/messages", `${s}/messages`, asJson({ text: "again", id: "m2" }));
    await check("post", "/v1/sessions/{key}/messages", `${s}/messages`, asJson({ text: " " }));
    await check("post", "/v1/sessions/{key}/messages", `${s}/messages`, asJson("{bad"));
    await check("post", "/v1/sessions/{key}/messages", `${s}/messages`, asJson({ text: "x".repeat(5000) }));
    await check("post", "/v1/sessions/{key}/messages", `${s}/messages`, { body: "{}" });
    await check("post", "/v1/sessions/{key}/messages", "/v1/sessions/%00/messages", asJson({ text: "hi" }));
    await check("get", "/v1/sessions/{key}", s);
    await check("get", "/v1/sessions/{key}", "/v1/sessions/web%3Anever");
    await check("get", "/v1/sessions/{key}/transcript", `${s}/transcript?after=0&all=1`);
    await check("get", "/v1/sessions/{key}/transcript", `${s}/transcript?after=-1`);
    await check("get", "/v1/sessions/{key}/messages/{id}", `${s}/messages/m1`);
    await check("get", "/v1/sessions/{key}/messages/{id}", `${s}/messages/nope`);
    await check("get", "/v1/sessions/{key}/deliveries", `${s}/deliveries`);
    await check("get", "/v1/sessions/{key}/events", `${s}/events?limit=50`);
    await check("get", "/v1/sessions/{key}/events", `${s}/events?limit=0`);
    await check("get", "/v1/events", "/v1/events?session=web%3A1");
    await check("get", "/v1/commitments", "/v1/commitments?session=web%3A1");
    await check("get", "/v1/commitments", "/v1/commitments?status=nope");
    await check("post", "/v1/commitments/{id}/dismiss", "/v1/commitments/nope/dismiss");
    await check("get", "/v1/schedules", "/v1/schedules");
    await check("get", "/v1/sessions", "/v1/sessions");
    await check("get", "/v1/machines", "/v1/machines");
    await check("get", "/v1/lanes", "/v1/lanes");
    await check("get", "/v1/cluster", "/v1/cluster");
    server.http.startDraining();
    await check("get", "/readyz", "/readyz");
    await check("post", "/v1/sessions/{key}/messages", `${s}/messages`, asJson({ text: "late" }));
    const operations = Object.entries(doc.paths).flatMap(([path, ops]) =>
      Object.keys(ops).map((method) => `${method} ${path}`),
    );
    expect(operations.filter((operation) => !exercised.has(operation))).toEqual([]);
  });
});
