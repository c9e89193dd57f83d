import type { AddressInfo } from "node:net";
import { WebChannel } from "../../src/adapters/channels/web-channel.js";
import { DemoModel, demoTool } from "../../src/adapters/demo-model.js";
import { SystemClock } from "../../src/adapters/system-clock.js";
import type { GatewayConfigInput } from "../../src/config.js";
import { createGateway } from "../../src/gateway/create-gateway.js";
import type { Ack } from "../../src/gateway/inbound/compose-ack.js";
import { createHttpServer, type HttpServerOptions } from "../../src/http/create-http-server.js";
import { silentLogger } from "../../src/logger.js";
import { type DeliveryLog, MemoryDeliveryLog } from "../../src/ports/delivery-log.js";
import type { ModelProvider } from "../../src/ports/model.js";
import type { TranscriptStore } from "../../src/ports/store.js";
import type { ToolDefinition } from "../../src/ports/tool.js";

/** A response body as a test reads it: an ack on 200, an error otherwise. */
export interface ApiBody {
  ack: Ack;
  error: { code: string; message: string; field?: string };
}

/** Posts one message to a running server's HTTP API, as a client does. */
export async function postMessage(url: string, session: string, text: string, id: string) {
  const response = await fetch(`${url}/v1/sessions/${encodeURIComponent(session)}/messages`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ text, id }),
  });
  return { status: response.status, body: (await response.json()) as ApiBody };
}

export interface TestServerOptions {
  model?: ModelProvider;
  tools?: ToolDefinition[];
  config?: GatewayConfigInput;
  store?: TranscriptStore;
  log?: DeliveryLog;
  http?: Partial<Omit<HttpServerOptions, "gateway" | "web">>;
  /** The demo model's pause per word and its tool's duration. */
  demo?: { wordDelayMs?: number; toolMs?: number };
}

/** A gateway behind its HTTP server on 127.0.0.1 and an ephemeral port, in this process. */
export async function startTestServer(options: TestServerOptions = {}) {
  const clock = new SystemClock();
  const web = new WebChannel(options.log ?? new MemoryDeliveryLog());
  const gateway = createGateway({
    config: options.config ?? {},
    model: options.model ?? new DemoModel({ clock, wordDelayMs: options.demo?.wordDelayMs ?? 2 }),
    tools: options.tools ?? [demoTool({ clock, durationMs: options.demo?.toolMs ?? 600 })],
    channels: { web },
    clock,
    logger: silentLogger,
    ...(options.store ? { store: options.store } : {}),
  });
  const http = createHttpServer({ gateway, web, heartbeatMs: 200, ...options.http });
  await gateway.start();
  http.markReady();
  await new Promise<void>((resolve) => http.server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(http.server.address() as AddressInfo).port}`;
  return {
    url,
    gateway,
    http,
    web,
    /** POSTs a message and returns the status and parsed body. */
    async post(session: string, body: unknown, headers: Record<string, string> = {}) {
      const response = await fetch(`${url}/v1/sessions/${encodeURIComponent(session)}/messages`, {
        method: "POST",
        headers: { "content-type": "application/json", ...headers },
        body: typeof body === "string" ? body : JSON.stringify(body),
      });
      return { status: response.status, headers: response.headers, body: (await response.json()) as ApiBody };
    },
    async close() {
      await http.close();
      await gateway.stop();
    },
  };
}

export type TestServer = Awaited<ReturnType<typeof startTestServer>>;
