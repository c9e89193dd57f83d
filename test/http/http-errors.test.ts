import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../support/http-gateway.js";

// Every refusal of the HTTP API answers with its status and the body { error: { code, message, field? } }.

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ http: { bodyLimit: 4096 } });
});
afterAll(() => server.close());

async function call(path: string, init: RequestInit = {}) {
  const response = await fetch(`${server.url}${path}`, init);
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : undefined };
}

const json = { "content-type": "application/json" };

describe("HTTP API refusals", { timeout: 20_000 }, () => {
  it("400 for a body that is not JSON, naming the body", async () => {
    const { status, body } = await server.post("web:e1", "{not json");
    expect(status).toBe(400);
    expect(body.error).toMatchObject({ code: "INVALID_JSON", field: "body" });
  });

  it("400 naming each invalid field of the message", async () => {
    for (const [payload, field] of [
      [[1, 2], "body"],
      [{}, "text"],
      [{ text: 5 }, "text"],
      [{ text: "hi", id: 7 }, "id"],
      [{ text: "hi", channel: 7 }, "channel"],
      [{ text: "hi", mode: false }, "mode"],
      [{ text: "hi", channel: "telegram" }, "channel"],
      [{ text: "hi", id: "" }, "id"],
      [{ text: "hi", sender: "bob" }, "sender"],
      [{ text: "hi", sender: { id: "b\nob" } }, "sender.id"],
      [{ text: "hi", sender: { id: "b".repeat(300) } }, "sender.id"],
      [{ text: "hi", sender: { id: "bob", authority: "admin" } }, "sender.authority"],
      [{ text: "hi", sender: { id: "bob", authority: [7] } }, "sender.authority"],
    ] as const) {
      const { status, body } = await server.post("web:e1", payload);
      expect(status, JSON.stringify(payload)).toBe(400);
      expect(body.error.field, JSON.stringify(payload)).toBe(field);
      expect(typeof body.error.message).toBe("string");
    }
  });

  it("400 naming the key for hostile session keys in the path", async () => {
    const hostile = [
      "%00evil", // a control character
      "a%0Ab", // a newline
      "%ED%A0%80", // a lone surrogate, as UTF-8 bytes: not decodable
      "%E0%A4%A", // broken percent-encoding
      "x".repeat(600), // longer than limits.maxSessionKeyChars
    ];
    for (const key of hostile) {
      for (const path of [`/v1/sessions/${key}`, `/v1/sessions/${key}/transcript`]) {
        const { status, body } = await call(path);
        expect(status, path).toBe(400);
        expect(body.error).toMatchObject({ field: "key" });
      }
      const { status, body } = await call(`/v1/sessions/${key}/messages`, {
        method: "POST",
        headers: json,
        body: JSON.stringify({ text: "hi" }),
      });
      expect(status).toBe(400);
      expect(body.error.field).toBe("key");
    }
    // A key with a slash, encoded, is one key (and a valid one).
    const ok = await server.post("web/with/slashes", { text: "hello", id: "s1" });
    expect(ok.status).toBe(200);
    expect(ok.body.ack.session).toBe("web/with/slashes");
  });

  it("413 for a body over the limit, declared or streamed", async () => {
    const { status, body } = await server.post("web:e2", { text: "x".repeat(5000) });
    expect(status).toBe(413);
    expect(body.error).toMatchObject({ code: "BODY_TOO_LARGE", field: "body" });
    // The server answered without storing anything of it.
    expect((await call("/v1/sessions/web:e2")).status).toBe(404);
  });

  it("415 for a body that is not declared JSON", async () => {
    for (const type of ["text/plain", ""]) {
      const { status, body } = await call("/v1/sessions/web:e3/messages", {
        method: "POST",
        headers: type ? { "content-type": type } : {},
        body: JSON.stringify({ text: "hi" }),
      });
      expect(status).toBe(415);
      expect(body.error).toMatchObject({ code: "UNSUPPORTED_MEDIA_TYPE", field: "content-type" });
    }
  });

  it("404 for unknown sessions, messages and paths; 405 with Allow for a wrong method", async () => {
    const session = await call("/v1/sessions/web:never");
    expect(session.status).toBe(404);
    expect(session.body.error).toMatchObject({ code: "NOT_FOUND", field: "session" });
    const message = await call("/v1/sessions/web:never/messages/m404");
    expect(message.status).toBe(404);
    expect(message.body.error).toMatchObject({ code: "NOT_FOUND", field: "id" });
    const path = await call("/v1/nothing/here");
    expect(path.status).toBe(404);
    expect(path.body.error.code).toBe("NOT_FOUND");
    const method = await call("/v1/sessions/web:e1", { method: "DELETE" });
    expect(method.status).toBe(405);
    expect(method.headers.get("allow")).toBe("GET");
    expect(method.body.error.code).toBe("METHOD_NOT_ALLOWED");
  });

  it("400 naming `after` for a transcript cursor that is not a sequence number", async () => {
    const { status, body } = await call("/v1/sessions/web:e1/transcript?after=-3");
    expect(status).toBe(400);
    expect(body.error.field).toBe("after");
  });
});

describe("bearer token", { timeout: 20_000 }, () => {
  let guarded: TestServer;
  beforeAll(async () => {
    guarded = await startTestServer({ http: { token: "s3cret-token" } });
  });
  afterAll(() => guarded.close());

  it("401 on every /v1 request without the right token; health, readiness and the page stay open", async () => {
    const attempts: Array<Record<string, string>> = [
      {},
      { authorization: "Bearer wrong" },
      { authorization: "Basic s3cret-token" },
    ];
    for (const headers of attempts) {
      const { status, body, headers: answer } = await guarded.post("web:a", { text: "hi" }, headers);
      expect(status).toBe(401);
      expect(body.error).toMatchObject({ code: "UNAUTHORIZED", field: "authorization" });
      expect(answer.get("www-authenticate")).toContain("Bearer");
      const events = await fetch(`${guarded.url}/v1/events`, { headers });
      expect(events.status).toBe(401);
      await events.body?.cancel();
    }
    const ok = await guarded.post(
      "web:a",
      { text: "hi", id: "a1" },
      { authorization: "Bearer s3cret-token" },
    );
    expect(ok.status).toBe(200);
    expect(ok.body.ack.disposition).toBe("started");
    expect((await fetch(`${guarded.url}/healthz`)).status).toBe(200);
    expect((await fetch(`${guarded.url}/readyz`)).status).toBe(200);
    expect((await fetch(`${guarded.url}/`)).status).toBe(200);
  });
});

describe("draining", { timeout: 20_000 }, () => {
  it("503 for new messages and /readyz while draining; a control still acts", async () => {
    const draining = await startTestServer();
    try {
      expect((await fetch(`${draining.url}/readyz`)).status).toBe(200);
      draining.http.startDraining();
      const refused = await draining.post("web:d", { text: "hello", id: "d1" });
      expect(refused.status).toBe(503);
      expect(refused.body.error.code).toBe("GATEWAY_DRAINING");
      expect(refused.headers.get("retry-after")).toBe("5");
      const ready = await fetch(`${draining.url}/readyz`);
      expect(ready.status).toBe(503);
      expect(((await ready.json()) as { error: { code: string } }).error.code).toBe("GATEWAY_DRAINING");
      expect((await fetch(`${draining.url}/healthz`)).status).toBe(200);
      const stop = await draining.post("web:d", { text: "/stop", id: "d2" });
      expect(stop.status).toBe(200);
      expect(stop.body.ack.disposition).toBe("control");
    } finally {
      await draining.close();
    }
  });
});
