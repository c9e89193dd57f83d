import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../support/http-gateway.js";
import { rawRequest } from "../support/raw-http.js";

// Hostile input against the HTTP API: each case gets its status and the JSON error body naming the
// field, nothing of it is stored, and the server answers a normal request at once afterwards.

const TIMEOUT_MS = 600;
let server: TestServer;
let normal = 0;
beforeAll(async () => {
  server = await startTestServer({ http: { bodyLimit: 4096, requestTimeoutMs: TIMEOUT_MS } });
});
afterAll(() => server.close());

/**
 * A normal message is acked with 200 right after the hostile one. "At once" is far below what a held
 * server would take (the hostile request's own socket lives up to Node's 60 s header timeout) and far
 * above one ack on a loaded 2-core machine, where it takes up to a few seconds.
 */
async function answersAtOnce(): Promise<void> {
  const started = performance.now();
  const { status, body } = await server.post("web:normal", { text: "still there?", id: `n${normal++}` });
  expect(status).toBe(200);
  expect(body.ack.messageId).toBe(`n${normal - 1}`);
  expect(performance.now() - started).toBeLessThan(10_000);
}

/** A connection the request timeout cut: well before the drip ends or Node's own timeouts would. */
const CUT_WITHIN_MS = TIMEOUT_MS * 10;

const post = (path: string, headers: string[], body: string | Buffer) => [
  Buffer.from(
    `POST ${path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n${headers.map((h) => `${h}\r\n`).join("")}\r\n`,
  ),
  typeof body === "string" ? Buffer.from(body) : body,
];

describe("hostile input", { timeout: 30_000 }, () => {
  it.each([
    [
      "a duplicate Content-Length",
      ["content-length: 2", "content-length: 3"],
      400,
      "BAD_REQUEST",
      "content-length",
    ],
    [
      "Content-Length with Transfer-Encoding",
      ["content-length: 5", "transfer-encoding: chunked"],
      400,
      "BAD_REQUEST",
      "transfer-encoding",
    ],
    ["headers over the limit", [`x-big: ${"a".repeat(20_000)}`], 431, "HEADERS_TOO_LARGE", "headers"],
  ] as const)("%s: refused by the parser with the JSON body", async (_name, headers, status, code, field) => {
    const answer = await rawRequest(
      server.url,
      post("/v1/sessions/web%3Ah/messages", [...headers], '{"text":"hi"}'),
    );
    expect(answer.status).toBe(status);
    expect(answer.headers["content-type"]).toContain("application/json");
    expect(answer.body.error).toMatchObject({ code, field });
    expect(answer.closed).toBe(true);
    await answersAtOnce();
  });

  it("a bare LF for CRLF: refused by the parser with the JSON body", async () => {
    const answer = await rawRequest(server.url, ["GET /healthz HTTP/1.1\nhost: x\n\n"]);
    expect(answer.status).toBe(400);
    expect(answer.body.error).toMatchObject({ code: "BAD_REQUEST", field: "request" });
    await answersAtOnce();
  });

  it("a body that is not UTF-8: 400 naming the body, nothing stored (no U+FFFD)", async () => {
    const bytes = Buffer.concat([Buffer.from('{"text":"caf'), Buffer.from([0xc3, 0x28]), Buffer.from('"}')]);
    const answer = await rawRequest(
      server.url,
      post(
        "/v1/sessions/web%3Autf/messages",
        ["content-type: application/json", `content-length: ${bytes.length}`],
        bytes,
      ),
      { waitMs: 1000 },
    );
    expect(answer.status).toBe(400);
    expect(answer.body.error).toMatchObject({ code: "INVALID_JSON", field: "body" });
    expect((await fetch(`${server.url}/v1/sessions/web%3Autf`)).status).toBe(404);
    await answersAtOnce();
  });

  it("an empty or white-space text: 400 naming text, no turn starts", async () => {
    for (const text of ["", "   ", "\n\t \u00a0"]) {
      const { status, body } = await server.post("web:empty", { text, id: "e1" });
      expect(status, JSON.stringify(text)).toBe(400);
      expect(body.error).toMatchObject({ code: "INVALID_INPUT", field: "text" });
    }
    expect((await fetch(`${server.url}/v1/sessions/web%3Aempty`)).status).toBe(404);
    await answersAtOnce();
  });

  it("bad JSON, a body over the limit, the wrong content type: each names its field", async () => {
    const notJson = await server.post("web:h", "{nope");
    expect(notJson.status).toBe(400);
    expect(notJson.body.error).toMatchObject({ code: "INVALID_JSON", field: "body" });
    await answersAtOnce();
    const big = await server.post("web:h", { text: "x".repeat(10_000) });
    expect(big.status).toBe(413);
    expect(big.body.error).toMatchObject({ code: "BODY_TOO_LARGE", field: "body" });
    await answersAtOnce();
    const typed = await fetch(`${server.url}/v1/sessions/web%3Ah/messages`, { method: "POST", body: "{}" });
    expect(typed.status).toBe(415);
    expect(((await typed.json()) as { error: { field: string } }).error.field).toBe("content-type");
    await answersAtOnce();
  });

  it("unknown fields are ignored (a newer client still works): 200, only the known fields count", async () => {
    const { status, body } = await server.post("web:u", {
      text: "hello",
      id: "u1",
      colour: "red",
      __proto__: { x: 1 },
    });
    expect(status).toBe(200);
    expect(body.ack).toMatchObject({ messageId: "u1", disposition: "started" });
    await answersAtOnce();
  });

  it("hostile keys: 400 naming key; bare dot segments refused, encoded ones are ordinary keys", async () => {
    for (const key of ["%00x", "a%0Ab", "%E0%A4%A", "x".repeat(600), ".", ".."]) {
      const answer = await rawRequest(
        server.url,
        post(
          `/v1/sessions/${key}/messages`,
          ["content-type: application/json", "content-length: 13"],
          '{"text":"hi"}',
        ),
        { waitMs: 1000 },
      );
      expect(answer.status, key).toBe(400);
      expect(answer.body.error?.field, key).toBe("key");
      await answersAtOnce();
    }
    // fetch and browsers resolve `%2E` segments as URLs say; a client that sends the path as it is
    // (curl --path-as-is, any HTTP library below URL parsing) reaches the key.
    for (const [encoded, key] of [
      ["%2E", "."],
      ["%2E%2E", ".."],
      ["%2e%2e", ".."],
    ] as const) {
      const body = JSON.stringify({ text: "dots", id: `dot-${encoded}` });
      const sent = await rawRequest(
        server.url,
        post(
          `/v1/sessions/${encoded}/messages`,
          ["content-type: application/json", `content-length: ${body.length}`],
          body,
        ),
      );
      expect(sent.status, encoded).toBe(200);
      expect((sent.body.ack as { session: string }).session).toBe(key);
      const read = await rawRequest(server.url, [
        `GET /v1/sessions/${encoded} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n`,
      ]);
      expect(read.status, encoded).toBe(200);
      expect(read.body.state).toBeDefined();
    }
  });

  it("slowloris: headers sent a byte at a time past the request timeout get 408 and are cut", async () => {
    // 300 bytes 40 ms apart: 12 s of drip, cut at the request timeout.
    const head =
      "POST /v1/sessions/web%3As/messages HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n";
    const drip = [...`${head}x-pad: `.padEnd(300, "a")];
    const pending = rawRequest(server.url, drip, { gapMs: 40, waitMs: 20_000 });
    await answersAtOnce(); // others are served while it drips
    const answer = await pending;
    expect(answer.status).toBe(408);
    expect(answer.body.error).toMatchObject({ code: "REQUEST_TIMEOUT", field: "request" });
    expect(answer.closed).toBe(true);
    expect(answer.elapsedMs).toBeLessThan(CUT_WITHIN_MS);
    await answersAtOnce();
  });

  it("a body sent slower than the request timeout, and a client that sends nothing, are cut", async () => {
    const slowBody = await rawRequest(
      server.url,
      [
        ...post(
          "/v1/sessions/web%3As/messages",
          ["content-type: application/json", "content-length: 200"],
          "",
        ),
        ..."x".repeat(100),
      ],
      { gapMs: 30, waitMs: 10_000 },
    );
    expect(slowBody.status).toBe(408);
    expect(slowBody.body.error?.code).toBe("REQUEST_TIMEOUT");
    const silent = await rawRequest(server.url, [], { waitMs: 20_000 });
    expect(silent.closed).toBe(true);
    expect(silent.elapsedMs).toBeLessThan(CUT_WITHIN_MS);
    await answersAtOnce();
  });

  it("an open event stream is not cut by the request timeout", async () => {
    const response = await fetch(`${server.url}/v1/events`);
    const reader = response.body!.getReader();
    await reader.read(); // ": open"
    await new Promise((resolve) => setTimeout(resolve, TIMEOUT_MS * 3));
    const next = await reader.read(); // a heartbeat (every 200 ms here): still open
    expect(next.done).toBe(false);
    await reader.cancel();
  });
});
