import { afterEach, describe, expect, it } from "vitest";
import type { ModelProvider, ModelRequest } from "../../src/ports/model.js";
import { type Deferred, deferred } from "../support/deferred.js";
import { startTestServer, type TestServer } from "../support/http-gateway.js";

// Busy behaviours over HTTP: a `reject`-mode message to a busy session is answered 409 with its ack.

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** A model whose every call waits until the test releases it; it answers "Re: <newest user text>". */
function heldModel() {
  const calls: Array<{ request: ModelRequest; release: Deferred<void> }> = [];
  const started: Array<() => void> = [];
  const model: ModelProvider = {
    async complete(request) {
      const release = deferred<void>();
      calls.push({ request, release });
      for (const wake of started.splice(0)) wake();
      await release.promise;
      const users = request.context.filter((message) => message.role === "user");
      const latest = users.at(-1);
      return { text: `Re: ${latest?.role === "user" ? latest.text : ""}`, toolCalls: [] };
    },
  };
  const nextCall = (count: number) =>
    calls.length >= count
      ? Promise.resolve(calls[count - 1]!)
      : new Promise<(typeof calls)[number]>((resolve) =>
          started.push(() => {
            if (calls.length >= count) resolve(calls[count - 1]!);
          }),
        );
  return { model, calls, nextCall };
}

describe("HTTP: busy behaviours", () => {
  it("answers 409 with the ack when a reject-mode message finds the session busy", async () => {
    const held = heldModel();
    server = await startTestServer({ model: held.model, tools: [] });
    expect((await server.post("web:busy", { text: "first", id: "m1" })).status).toBe(200);
    const first = await held.nextCall(1);
    const refused = await server.post("web:busy", { text: "second", id: "m2", mode: "reject" });
    expect(refused.status).toBe(409);
    expect(refused.body.ack).toMatchObject({ messageId: "m2", disposition: "rejected", reason: "busy" });
    first.release.resolve();
    // Idle again: the same message is taken (200, started), not refused nor a duplicate.
    await waitFor(() => server!.gateway.inspectSession("web:busy")?.state === "idle");
    const again = await server.post("web:busy", { text: "second", id: "m2", mode: "reject" });
    expect(again.status).toBe(200);
    expect(again.body.ack.disposition).toBe("started");
    (await held.nextCall(2)).release.resolve();
  });
});

async function waitFor(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 2000 && !condition(); i++) await new Promise((resolve) => setTimeout(resolve, 10));
  expect(condition()).toBe(true);
}
