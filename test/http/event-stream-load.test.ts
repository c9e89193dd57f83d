import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ModelProvider } from "../../src/ports/model.js";
import { startTestServer, type TestServer } from "../support/http-gateway.js";
import { openIdleStreams } from "../support/idle-streams.js";

// Many open event streams whose clients do not read slow nothing else: acks stay as fast as with
// none, and every stream's memory goes when it closes. (The full figure, 2,000 streams, is in the bench.)

const STREAMS = 300;
const MESSAGES = 60;
const WARM_UP = 20;
const instant: ModelProvider = {
  async complete() {
    return { text: "ok", toolCalls: [] };
  },
};

// Two servers, one with the idle streams and one without, posted to in turn: load from the rest of the
// machine falls on both alike, so the ratio measures the streams and not what else runs meanwhile.
let server: TestServer;
let bare: TestServer;
beforeAll(async () => {
  server = await startTestServer({ model: instant, tools: [] });
  bare = await startTestServer({ model: instant, tools: [] });
});
afterAll(async () => {
  await server.close();
  await bare.close();
});

const median = (values: number[]) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/** Median ack latency of each server, the two posted to alternately. */
async function medianAckMs(tag: string, messages: number): Promise<{ loaded: number; none: number }> {
  const loaded: number[] = [];
  const none: number[] = [];
  for (let i = 0; i < messages; i++) {
    for (const [target, latencies] of [
      [server, loaded],
      [bare, none],
    ] as const) {
      const started = performance.now();
      const { status } = await target.post(`web:${tag}${i % 10}`, { text: `hello ${i}`, id: `${tag}${i}` });
      latencies.push(performance.now() - started);
      expect(status).toBe(200);
    }
  }
  return { loaded: median(loaded), none: median(none) };
}

// A deadline for a run that never ends: on a loaded 2-core machine one post can take 100 ms or more.
describe("event streams under load", { timeout: 180_000 }, () => {
  it(`${STREAMS} streams that never read leave ack latency within 3x of none, and are forgotten once closed`, async () => {
    await medianAckMs("warm", WARM_UP);
    const unfiltered = await openIdleStreams(server.url, "/v1/events", STREAMS / 2);
    const filtered = await openIdleStreams(server.url, "/v1/events?session=web%3Ab1", STREAMS / 2);
    expect(server.http.feed.listenerCount).toBe(STREAMS);
    const { loaded, none } = await medianAckMs("b", MESSAGES);
    expect(loaded / none, `median ack ${loaded.toFixed(2)} ms against ${none.toFixed(2)} ms`).toBeLessThan(3);
    for (const socket of [...unfiltered, ...filtered]) socket.destroy();
    for (let i = 0; i < 2000 && server.http.feed.listenerCount > 0; i++)
      await new Promise((resolve) => setTimeout(resolve, 10));
    expect(server.http.feed.listenerCount).toBe(0);
    expect(server.http.feed.groupCount).toBe(0);
    // And a normal request is answered at once.
    expect((await server.post("web:after", { text: "still here", id: "after1" })).status).toBe(200);
  });
});
