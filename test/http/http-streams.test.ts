import { afterEach, describe, expect, it } from "vitest";
import { DemoModel, demoTool } from "../../src/adapters/demo-model.js";
import { MemoryDeliveryLog } from "../../src/ports/delivery-log.js";
import { HeldClock } from "../support/held-clock.js";
import { startTestServer, type TestServer } from "../support/http-gateway.js";
import { SseRecorder } from "../support/sse-recorder.js";

// The live side of the HTTP API over real sockets: the deliveries and events streams (with replay),
// a steer while a tool runs, and /stop cutting a streaming reply.

const servers: TestServer[] = [];
const recorders: SseRecorder[] = [];
afterEach(async () => {
  for (const recorder of recorders.splice(0)) recorder.close();
  for (const server of servers.splice(0)) await server.close();
});

async function start(options: Parameters<typeof startTestServer>[0] = {}) {
  const server = await startTestServer(options);
  servers.push(server);
  return server;
}

function follow(url: string, options: ConstructorParameters<typeof SseRecorder>[1] = {}) {
  const recorder = new SseRecorder(url, options);
  recorders.push(recorder);
  return recorder;
}

const deliveriesOf = (server: TestServer, session: string, query = "") =>
  `${server.url}/v1/sessions/${encodeURIComponent(session)}/deliveries${query}`;
const eventsOf = (server: TestServer, session: string) =>
  `${server.url}/v1/events?session=${encodeURIComponent(session)}`;

describe("deliveries stream", { timeout: 20_000 }, () => {
  it("opened before the session's first message, it waits and then carries the reply with its id", async () => {
    const server = await start();
    const deliveries = follow(deliveriesOf(server, "web:1"));
    await deliveries.opened;
    const { body } = await server.post("web:1", { text: "hello there", id: "m1" });
    expect(body.ack).toMatchObject({ messageId: "m1", disposition: "started" });
    const delivery = await deliveries.waitFor((event) => event.event === "delivery");
    expect(delivery.id).toBe(delivery.data.messageId);
    expect(delivery.data).toMatchObject({ kind: "reply" });
    expect(String(delivery.data.text)).toContain('You said: "hello there"');
    // The demo says it is a demo in the first reply of a session, and only there.
    expect(String(delivery.data.text)).toContain("[demo]");
    await server.post("web:1", { text: "and again", id: "m2" });
    const second = await deliveries.waitFor((event) => String(event.data.text).includes("and again"));
    expect(String(second.data.text)).not.toContain("[demo]");
    // The transcript marks the reply delivered with the web channel's id.
    const response = await fetch(`${server.url}/v1/sessions/web%3A1/transcript?after=1`);
    const { records } = (await response.json()) as { records: Array<{ role: string; seq: number }> };
    const assistant = records.find((record) => record.role === "assistant");
    expect(assistant).toMatchObject({ delivered: true, deliveryMessageId: delivery.id });
    expect(records.every((record) => record.seq > 1)).toBe(true);
  });

  it("replays what a client missed from Last-Event-ID or ?after=, and everything without either", async () => {
    const server = await start();
    for (const [index, text] of ["one", "two", "three"].entries()) {
      await server.post("web:r", { text, id: `r${index}` });
      await follow(deliveriesOf(server, "web:r")).waitFor((event) =>
        String(event.data.text).includes(`"${text}"`),
      );
    }
    const all = follow(deliveriesOf(server, "web:r"));
    await all.waitFor(() => all.of("delivery").length === 3);
    const [first, second, third] = all.of("delivery");
    const fromHeader = follow(deliveriesOf(server, "web:r"), { lastEventId: first!.id! });
    const fromQuery = follow(deliveriesOf(server, "web:r", `?after=${encodeURIComponent(second!.id!)}`));
    await fromHeader.waitFor((event) => event.id === third!.id);
    await fromQuery.waitFor((event) => event.id === third!.id);
    expect(fromHeader.of("delivery").map((event) => event.id)).toEqual([second!.id, third!.id]);
    expect(fromQuery.of("delivery").map((event) => event.id)).toEqual([third!.id]);
  });

  it("replays only the newest `keep` deliveries; a pruned Last-Event-ID starts at the oldest kept", async () => {
    const server = await start({ log: new MemoryDeliveryLog({ keep: 2 }) });
    const live = follow(deliveriesOf(server, "web:k"));
    await live.opened;
    for (const [index, text] of ["one", "two", "three", "four"].entries()) {
      await server.post("web:k", { text, id: `k${index}` });
      await live.waitFor(() => live.of("delivery").length === index + 1);
    }
    const ids = live.of("delivery").map((event) => event.id);
    const fresh = follow(deliveriesOf(server, "web:k"));
    const pruned = follow(deliveriesOf(server, "web:k"), { lastEventId: ids[0]! });
    await fresh.waitFor(() => fresh.of("delivery").length === 2);
    await pruned.waitFor(() => pruned.of("delivery").length === 2);
    expect(fresh.of("delivery").map((event) => event.id)).toEqual(ids.slice(2));
    expect(pruned.of("delivery").map((event) => event.id)).toEqual(ids.slice(2));
    // The client that fell behind is told what it missed, before the oldest kept delivery.
    expect(pruned.events.map((event) => event.event)).toEqual(["pruned", "delivery", "delivery"]);
    expect(pruned.of("pruned")[0]!.data).toEqual({ after: ids[0], next: ids[2], missed: 1 });
    expect(fresh.of("pruned")).toEqual([]);
  });
});

describe("events stream", { timeout: 20_000 }, () => {
  it("streams one session's events with ids and replays from Last-Event-ID", async () => {
    const server = await start();
    const events = follow(eventsOf(server, "web:e"));
    const other = follow(eventsOf(server, "web:other"));
    await Promise.all([events.opened, other.opened]);
    await server.post("web:e", { text: "hello", id: "e1" });
    await events.waitFor((event) => event.event === "final.delivered");
    expect(events.events.every((event) => event.data.session === "web:e")).toBe(true);
    expect(events.of("model.delta").length).toBeGreaterThan(3); // the demo streams word by word
    expect(other.events).toEqual([]);
    const acked = events.of("message.acked")[0]!;
    const replay = follow(eventsOf(server, "web:e"), { lastEventId: acked.id! });
    await replay.waitFor((event) => event.event === "final.delivered");
    const after = events.events.slice(events.events.indexOf(acked) + 1).map((event) => event.id);
    expect(replay.events.map((event) => event.id)).toEqual(after);
  });

  it("lists a session's recent events for a page that opens late: the same ids the stream gave, oldest first", async () => {
    const server = await start();
    const events = follow(eventsOf(server, "web:late"));
    await events.opened;
    await server.post("web:late", { text: "hello", id: "l1" });
    await server.post("web:busy", { text: "someone else", id: "b1" });
    await events.waitFor((event) => event.event === "final.delivered");
    interface Listed {
      events?: Array<{ id: string; event: { type: string; session?: string } }>;
      error?: { code: string; field: string };
    }
    const recent = async (query = "") => {
      const response = await fetch(`${server.url}/v1/sessions/web%3Alate/events${query}`);
      return { status: response.status, body: (await response.json()) as Listed };
    };
    const all = await recent();
    expect(all.status).toBe(200);
    const streamed = events.events.map((event) => [event.id, event.event]);
    expect(all.body.events!.map((e) => [e.id, e.event.type])).toEqual(streamed);
    expect(all.body.events!.every((e) => e.event.session === "web:late")).toBe(true);
    const lastTwo = await recent("?limit=2");
    expect(lastTwo.body.events!.map((e) => e.id)).toEqual(streamed.slice(-2).map(([id]) => id));
    const bad = await recent("?limit=0");
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatchObject({ code: "INVALID_INPUT", field: "limit" });
  });
});

describe("events stream with types", { timeout: 20_000 }, () => {
  it("carries only the named types, and refuses a name that is no event with the field named", async () => {
    const server = await start();
    const finals = follow(`${server.url}/v1/events?types=final.delivered,turn.ended`);
    const all = follow(eventsOf(server, "web:t"));
    await Promise.all([finals.opened, all.opened]);
    await server.post("web:t", { text: "hello", id: "t1" });
    await all.waitFor(() => all.of("final.delivered").length === 1 && all.of("turn.ended").length === 1);
    await finals.waitFor(
      () => finals.of("final.delivered").length === 1 && finals.of("turn.ended").length === 1,
    );
    expect(all.events.length).toBeGreaterThan(4);
    expect(finals.events.map((event) => event.event).sort()).toEqual(["final.delivered", "turn.ended"]);
    expect(finals.events.find((event) => event.event === "final.delivered")!.id).toBe(
      all.events.find((event) => event.event === "final.delivered")!.id,
    );
    for (const query of ["types=final.deliverd", "types=", "types=turn.ended,,final.delivered"]) {
      const response = await fetch(`${server.url}/v1/events?${query}`);
      expect(response.status).toBe(400);
      const body = (await response.json()) as { error: { code: string; field: string; message: string } };
      expect(body.error).toMatchObject({ code: "INVALID_INPUT", field: "types" });
    }
  });
});

describe("stream clients", { timeout: 20_000 }, () => {
  it("are cleaned up when they go away, and kept alive by comment lines meanwhile", async () => {
    const server = await start({ http: { heartbeatMs: 50 } });
    const raw = new AbortController();
    const response = await fetch(`${server.url}/v1/events`, { signal: raw.signal });
    const reader = response.body!.getReader();
    let text = "";
    while (!text.includes(": keep-alive")) text += new TextDecoder().decode((await reader.read()).value);
    const deliveries = follow(deliveriesOf(server, "web:gone"));
    await deliveries.opened;
    expect(server.web.listenerCount("web:gone")).toBe(1);
    expect(server.http.feed.listenerCount).toBe(1);
    deliveries.close();
    raw.abort();
    for (let i = 0; i < 1000 && (server.web.listenerCount("web:gone") || server.http.feed.listenerCount); i++)
      await new Promise((resolve) => setTimeout(resolve, 10));
    expect(server.web.listenerCount("web:gone")).toBe(0);
    expect(server.http.feed.listenerCount).toBe(0);
  });
});

describe("a person talking to a busy agent", { timeout: 20_000 }, () => {
  it("a steer while the demo tool runs is acked as waiting for the tool and answered in the same turn", async () => {
    // The tool runs until the steer is in, however slow the machine.
    const toolTime = new HeldClock();
    const server = await start({ tools: [demoTool({ clock: toolTime, durationMs: 800 })] });
    const deliveries = follow(deliveriesOf(server, "web:s"));
    const events = follow(eventsOf(server, "web:s"));
    await Promise.all([deliveries.opened, events.opened]);
    const first = await server.post("web:s", { text: "please run a task on the report", id: "s1" });
    expect(first.body.ack.disposition).toBe("started");
    await events.waitFor((event) => event.event === "tool.started");
    const steer = await server.post("web:s", { text: "also include the appendix", id: "s2" });
    expect(steer.body.ack).toMatchObject({
      disposition: "steered",
      waitsFor: "tool-to-finish",
      runningTool: { name: "demo_task", cancellable: true },
    });
    toolTime.release();
    const reply = await deliveries.waitFor((event) => event.event === "delivery");
    expect(String(reply.data.text)).toContain("demo_task finished");
    expect(String(reply.data.text)).toContain('While it ran you wrote: "also include the appendix"');
    expect(deliveries.of("delivery")).toHaveLength(1);
    expect(events.of("steer.injected")).toHaveLength(1);
  });

  it("a message written while the reply streams makes the re-check answer it instead", async () => {
    // The reply streams its first word, then waits until the newer message is in.
    const words = new HeldClock();
    const server = await start({ model: new DemoModel({ clock: words, wordDelayMs: 30 }) });
    const deliveries = follow(deliveriesOf(server, "web:rc"));
    const events = follow(eventsOf(server, "web:rc"));
    await Promise.all([deliveries.opened, events.opened]);
    await server.post("web:rc", { text: "hello", id: "rc1" });
    await words.step();
    await events.waitFor((event) => event.event === "model.delta");
    const newer = await server.post("web:rc", { text: "actually, what is the plan for friday", id: "rc2" });
    expect(newer.body.ack.disposition).toBe("steered");
    words.release();
    const fired = await events.waitFor((event) => event.event === "recheck.fired");
    expect(fired.data.reason).toBe("newer-message");
    const reply = await deliveries.waitFor((event) => event.event === "delivery");
    expect(String(reply.data.text)).toContain("Re-checked");
    expect(String(reply.data.text)).toContain('You said: "actually, what is the plan for friday"');
    expect(deliveries.of("delivery")).toHaveLength(1);
  }, 20_000);

  it("/stop aborts a reply that is streaming: the draft stops and nothing is delivered", async () => {
    // The reply streams its first word, then waits until /stop is in; after it, words run on real time.
    const words = new HeldClock();
    const server = await start({ model: new DemoModel({ clock: words, wordDelayMs: 150 }) });
    const deliveries = follow(deliveriesOf(server, "web:x"));
    const events = follow(eventsOf(server, "web:x"));
    await Promise.all([deliveries.opened, events.opened]);
    await server.post("web:x", { text: "tell me something long", id: "x1" });
    await words.step();
    await events.waitFor((event) => event.event === "model.delta");
    const stop = await server.post("web:x", { text: "/stop", id: "x2" });
    expect(stop.body.ack.disposition).toBe("control");
    words.release();
    const ended = await events.waitFor((event) => event.event === "turn.ended");
    expect(ended.data.status).toBe("aborted");
    const deltas = events.of("model.delta").length;
    await new Promise((resolve) => setTimeout(resolve, 600)); // four more words' time
    expect(events.of("model.delta").length).toBe(deltas);
    expect(deliveries.of("delivery")).toEqual([]);
    const session = await (await fetch(`${server.url}/v1/sessions/web%3Ax`)).json();
    expect(session).toMatchObject({ run: null });
  });
});
