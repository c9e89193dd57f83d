import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  type FakeOpenAIServer,
  textStream,
  toolCallStream,
  useFakeOpenAIServer,
} from "../support/fake-openai-server.js";
import { startOtlpReceiver } from "../support/otlp-receiver.js";
import { parsePrometheus } from "../support/prometheus.js";
import { eventually } from "../support/serve-cluster.js";
import { startServe, useServeProcesses, waitForOutput } from "../support/serve-process.js";
import { SseRecorder } from "../support/sse-recorder.js";

// `tiller serve` as a real process exporting its spans over OTLP/HTTP to a receiver in the test, the
// OpenTelemetry SDK configured from the standard OTEL_* variables, and its /metrics behind the token.

const procs = useServeProcesses("tiller-serve-telemetry");
const fakes = useFakeOpenAIServer();
const TOKEN = "metrics-token";
const TOOLS = `export default [{
  name: "lookup",
  description: "Looks something up",
  parameters: { type: "object", properties: { query: { type: "string" } }, required: ["query"] },
  async execute(args) { return "found: " + args.query; },
}];
`;
const receivers: Array<{ close(): Promise<void> }> = [];

beforeAll(() => writeFile(join(procs.dir, "tools.mjs"), TOOLS));
afterEach(async () => {
  for (const running of procs.live) running.proc.kill("SIGKILL");
  procs.live.clear();
  await Promise.all(receivers.splice(0).map((receiver) => receiver.close()));
});

async function serveTraced(store: string, fake: FakeOpenAIServer, env: NodeJS.ProcessEnv) {
  const args = ["--store", join(procs.dir, store), "--model-url", fake.url, "--model", "fake-model"];
  const running = await startServe(procs.command, [...args, "--tools", join(procs.dir, "tools.mjs")], {
    TILLER_TOKEN: TOKEN,
    TILLER_MODEL_KEY: "key",
    ...env,
  });
  procs.live.add(running);
  return running;
}

const TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER_SPAN = "00f067aa0ba902b7";

/** One turn: the model asks for the tool, then answers; the client sent a W3C traceparent. */
async function oneTurn(url: string, fake: FakeOpenAIServer) {
  fake.reply(
    { stream: toolCallStream([{ id: "call_1", name: "lookup", args: { query: "tides" } }]) },
    { stream: textStream(["High tide ", "at noon."], { usage: [42, 7] }) },
  );
  const deliveries = procs.record(
    new SseRecorder(`${url}/v1/sessions/web%3At/deliveries`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    }),
  );
  await deliveries.opened;
  const response = await fetch(`${url}/v1/sessions/web%3At/messages`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      authorization: `Bearer ${TOKEN}`,
      traceparent: `00-${TRACE_ID}-${CALLER_SPAN}-01`,
    },
    body: JSON.stringify({ text: "when is high tide?", id: "t1" }),
  });
  expect(response.status).toBe(200);
  await deliveries.waitFor((event) => event.event === "delivery");
}

describe("tiller serve with OpenTelemetry and Prometheus", { timeout: 60_000 }, () => {
  it("exports a turn's spans over OTLP http/json to the configured endpoint, linked to the posting request", async () => {
    const receiver = await startOtlpReceiver();
    receivers.push(receiver);
    const fake = await fakes.start();
    const running = await serveTraced("json", fake, {
      OTEL_EXPORTER_OTLP_ENDPOINT: `${receiver.url}/`,
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
      OTEL_BSP_SCHEDULE_DELAY: "50",
    });
    expect(running.stdout()).toContain(`traces:  OTLP http/json to ${receiver.url}/v1/traces`);
    await oneTurn(running.url, fake);
    // The batch goes out within its delay; SIGTERM flushes whatever is left.
    running.proc.kill("SIGTERM");
    await waitForOutput(running, running.stdout, /stopped/);
    const spans = receiver.jsonSpans();
    expect(receiver.exports.every((e) => e.path === "/v1/traces")).toBe(true);
    expect(new Set(spans.map((span) => span.service))).toEqual(new Set(["tiller"]));
    const post = spans.find(
      (span) => span.name === "POST" && span.attributes["url.path"] === "/v1/sessions/web%3At/messages",
    );
    expect(post?.traceId).toBe(TRACE_ID);
    expect(post?.parentSpanId).toBe(CALLER_SPAN);
    const turn = spans.find((span) => span.name === "invoke_agent");
    expect(turn?.links).toEqual([{ traceId: TRACE_ID, spanId: post?.spanId }]);
    expect(turn?.attributes).toMatchObject({
      "tiller.session": "web:t",
      "tiller.turn.status": "done",
      "tiller.lane": "main",
    });
    const children = spans.filter(
      (span) => span.traceId === turn?.traceId && span.parentSpanId === turn?.spanId,
    );
    expect(children.map((span) => span.name).sort()).toEqual(
      ["chat fake-model", "chat fake-model", "execute_tool lookup", "tiller.deliver"].sort(),
    );
    const answer = children.find(
      (span) => span.name === "chat fake-model" && span.attributes["gen_ai.usage.input_tokens"] === 42,
    );
    expect(answer?.attributes).toMatchObject({
      "gen_ai.request.model": "fake-model",
      "gen_ai.usage.output_tokens": 7,
    });
  });

  it("exports protobuf by default to the traces endpoint, under OTEL_SERVICE_NAME", async () => {
    const receiver = await startOtlpReceiver();
    receivers.push(receiver);
    const fake = await fakes.start();
    const running = await serveTraced("proto", fake, {
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${receiver.url}/custom/traces`,
      OTEL_SERVICE_NAME: "gateway-under-test",
    });
    await oneTurn(running.url, fake);
    running.proc.kill("SIGTERM");
    await waitForOutput(running, running.stdout, /stopped/);
    expect(receiver.exports.length).toBeGreaterThan(0);
    for (const received of receiver.exports) {
      expect(received.path).toBe("/custom/traces");
      expect(received.contentType).toBe("application/x-protobuf");
    }
    // Protobuf strings are their UTF-8 bytes on the wire.
    const body = Buffer.concat(receiver.exports.map((e) => e.body));
    for (const text of [
      "gateway-under-test",
      "invoke_agent",
      "chat fake-model",
      "execute_tool lookup",
      "tiller.deliver",
    ])
      expect(body.includes(Buffer.from(text))).toBe(true);
  });

  it("serves /metrics in the Prometheus text format behind the token, with the turn counted", async () => {
    const fake = await fakes.start();
    const running = await serveTraced("metrics", fake, {});
    expect(running.stdout()).toContain("traces:  off");
    await oneTurn(running.url, fake);
    expect((await fetch(`${running.url}/metrics`)).status).toBe(401);
    // The reply reaches the stream before the turn gives its lane slot back: read once it has.
    const metrics = await eventually("the turn's lane slot given back", async () => {
      const response = await fetch(`${running.url}/metrics`, {
        headers: { authorization: `Bearer ${TOKEN}` },
      });
      expect(response.status).toBe(200);
      expect(response.headers.get("content-type")).toContain("text/plain");
      const read = parsePrometheus(await response.text());
      return read.value("tiller_lane_active", { lane: "main" }) === 0 && read;
    });
    expect(metrics.value("tiller_messages_total", { disposition: "started" })).toBe(1);
    expect(metrics.value("tiller_turns_total", { status: "done", trigger: "user" })).toBe(1);
    expect(metrics.value("tiller_model_calls_total", { status: "done" })).toBe(2);
    expect(metrics.value("tiller_tool_calls_total", { tool: "lookup", status: "done" })).toBe(1);
    expect(metrics.value("tiller_gen_ai_tokens_total", { type: "input" })).toBe(20 + 42);
    expect(metrics.value("tiller_gen_ai_tokens_total", { type: "output" })).toBe(10 + 7);
    expect(metrics.value("tiller_deliveries_total", { kind: "reply", outcome: "delivered" })).toBe(1);
    expect(metrics.value("tiller_turn_duration_seconds_count", {})).toBe(1);
    expect(metrics.value("tiller_model_call_duration_seconds_count", {})).toBe(2);
    expect(metrics.value("tiller_lane_wait_seconds_count", { lane: "main" })).toBe(1);
    expect(metrics.value("tiller_lane_active", { lane: "main" })).toBe(0);
    expect(metrics.value("tiller_lane_queued", { lane: "main" })).toBe(0);
    expect(metrics.types.get("tiller_turn_duration_seconds")).toBe("histogram");
    expect(metrics.types.get("process_cpu_user_seconds_total")).toBe("counter");
  });
});
