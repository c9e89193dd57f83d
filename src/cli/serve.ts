import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { WebChannel } from "../adapters/channels/web-channel.js";
import { PostgresStore } from "../adapters/postgres/postgres-store.js";
import { SystemClock } from "../adapters/system-clock.js";
import { errorMessage } from "../errors.js";
import type { TillerEvent } from "../events.js";
import { createGateway } from "../gateway/create-gateway.js";
import { createGatewayMetrics } from "../gateway/telemetry/gateway-metrics.js";
import { clusterRoute } from "../http/cluster-route.js";
import { createHttpServer } from "../http/create-http-server.js";
import { metricsRoute } from "../http/metrics-route.js";
import { operatorRoutes } from "../http/operator-routes.js";
import { createStateFeed } from "../http/state-feed.js";
import { createLogger } from "../logger.js";
import { openChatChannels } from "./serve-channels.js";
import { chooseModel } from "./serve-model.js";
import {
  isLoopback,
  loadConfigFile,
  loadInstructionsFile,
  loadToolsFile,
  parseMs,
  parsePort,
  UsageError,
} from "./serve-setup.js";
import { openServeStore } from "./serve-store.js";
import { startServeTracing } from "./serve-tracing.js";

export const SERVE_USAGE = `usage: tiller serve [--host 127.0.0.1] [--port 8787] [--store DIR] [--config FILE]
                    [--tools FILE.mjs] [--instructions FILE] [--drain-timeout MS] [--request-timeout MS]
                    [--provider openai|anthropic] [--model-url URL] [--model NAME]
                    [--postgres URL] [--schema NAME] [--lease MS]`;

const PAGE_DIR = fileURLToPath(new URL("../../dist/web", import.meta.url));

export interface ServeIo {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  env: NodeJS.ProcessEnv;
}

/**
 * `tiller serve`: the gateway behind its HTTP API, on the JSONL store (or PostgreSQL with cluster lanes,
 * `--postgres URL`), with the `web` channel, the
 * configured model (the demo model without one), until SIGTERM or SIGINT drains it. Resolves with the
 * exit status once stopped; throws UsageError for a problem the user must fix (exit 2).
 */
export async function serve(argv: string[], io: ServeIo): Promise<number> {
  const { values } = parseCli(argv);
  const host = values.host ?? "127.0.0.1";
  const port = parsePort(values.port, 8787, "--port");
  const drainTimeoutMs = parseMs(values["drain-timeout"], 30_000, "--drain-timeout");
  const requestTimeoutMs = parseMs(values["request-timeout"], 30_000, "--request-timeout");
  if (requestTimeoutMs === 0)
    throw new UsageError("--request-timeout: expected milliseconds above 0 (a slow client is always cut)");
  const storeDir = resolve(values.store ?? ".tiller");
  const token = io.env.TILLER_TOKEN || undefined;
  if (!isLoopback(host) && token === undefined)
    throw new UsageError(
      `--host ${host}: refusing to listen beyond this machine without a token; set TILLER_TOKEN (clients then send Authorization: Bearer <token>) or bind 127.0.0.1`,
    );
  const config = await loadConfigFile(values.config);
  if (values.instructions !== undefined)
    config.model.instructions = await loadInstructionsFile(values.instructions);
  const clock = new SystemClock();
  const userTools = await loadToolsFile(values.tools);
  const modelUrl = values["model-url"] ?? (io.env.TILLER_MODEL_URL || undefined);
  // Before anything runs: the SDK (only when OTEL_* asks for it) must be the global provider first.
  const tracing = await startServeTracing(io.env);
  const demoTaskMs = parseMs(io.env.TILLER_DEMO_TASK_MS || undefined, 5000, "TILLER_DEMO_TASK_MS");
  const { model, tools, description, real } = chooseModel({
    provider: values.provider,
    modelUrl,
    modelName: values.model ?? (io.env.TILLER_MODEL || undefined),
    modelFlag: values.model !== undefined,
    env: io.env,
    clock,
    demoTaskMs,
  });

  const logger = createLogger();
  // With a PostgreSQL URL, several processes on one database (and schema) are one gateway.
  const {
    store,
    lanes,
    cluster,
    deliveries,
    description: storeDescription,
  } = await openServeStore({
    storeDir,
    postgresUrl: values.postgres ?? (io.env.TILLER_DATABASE_URL || undefined),
    schema: values.schema,
    capacity: config.lanes,
    groups: config.laneGroups,
    agingMs: config.laneAgingMs,
    warnAfterMs: config.warnAfterMs,
    leaseMs: values.lease === undefined ? undefined : parseMs(values.lease, 10_000, "--lease"),
    dedupeWindowMs: config.limits.dedupeWindowMs,
    keepDeliveries: config.web.keepDeliveries,
    logger,
  });
  const closeCluster = async () => {
    await cluster?.close();
    await lanes?.close();
  };
  const closeStore = async () => {
    await deliveries.close();
    await store.close();
    await closeCluster();
  };
  const web = new WebChannel(deliveries);
  const metrics = createGatewayMetrics();
  let chat: Awaited<ReturnType<typeof openChatChannels>>;
  try {
    chat = await openChatChannels(config, io.env, storeDir, createLogger());
  } catch (error) {
    await closeStore();
    throw error;
  }
  // The operator page's `state` events: made from inspection, pushed into the HTTP event stream only
  // (the server that owns that stream is created after the gateway that needs the callback).
  let pushState: (event: TillerEvent) => void = () => {};
  const states = createStateFeed({ now: () => clock.now(), emit: (event) => pushState(event) });
  let gateway: ReturnType<typeof createGateway>;
  try {
    gateway = createGateway({
      config,
      model,
      tools: [...tools, ...userTools],
      channels: { ...metrics.channels(chat.channels), web: metrics.channel(web) },
      store,
      clock,
      logger,
      telemetry: { model: modelUrl ? (values.model ?? io.env.TILLER_MODEL ?? "model") : "demo" },
      inspect: states.inspect,
      ...(lanes ? { lanes } : {}),
      ...(cluster ? { cluster } : {}),
    });
  } catch (error) {
    await closeStore();
    throw new UsageError(errorMessage(error));
  }
  metrics.observe(gateway);
  const http = createHttpServer({
    gateway,
    web,
    ...(token ? { token } : {}),
    pageDir: PAGE_DIR,
    ...(store instanceof PostgresStore ? { storeCheck: () => store.ping() } : {}),
    requestTimeoutMs,
    routes: [
      ...chat.routes,
      ...operatorRoutes(gateway),
      clusterRoute(store instanceof PostgresStore ? () => store.clusterView() : undefined),
      metricsRoute(metrics.registry, token),
    ],
  });
  pushState = http.feed.push;
  try {
    await listen(http.server, port, host);
  } catch (error) {
    await closeStore();
    throw new UsageError(`--port ${port}: cannot listen on ${host}:${port} (${errorMessage(error)})`);
  }
  const address = http.server.address();
  const actualPort = typeof address === "object" && address ? address.port : port;
  const url = `http://${host.includes(":") && !host.startsWith("[") ? `[${host}]` : host}:${actualPort}`;

  const stopped = onSignals(io, async () => {
    http.startDraining();
    await chat.stop();
    io.stdout.write("draining: new messages get 503; send the signal again to stop at once\n");
    const finished = await Promise.race([gateway.drain().then(() => true), delay(drainTimeoutMs, false)]);
    if (!finished)
      io.stdout.write(`drain timeout (${drainTimeoutMs} ms): unfinished turns resume at the next start\n`);
    await http.close();
    await Promise.race([gateway.stop(), delay(finished ? 5000 : 500, undefined)]);
    // The cluster: this process leaves it (its rows go, its sessions are free at once).
    await closeCluster();
    await web.log.close();
    await tracing?.shutdown().catch(() => undefined);
  });

  try {
    await gateway.start();
  } catch (error) {
    await http.close();
    await Promise.race([gateway.stop().catch(() => undefined), delay(1000, undefined)]);
    await closeCluster().catch(() => undefined);
    throw new UsageError(`${storeDescription}: cannot resume (${errorMessage(error)})`);
  }
  http.markReady();
  try {
    await chat.start((message) => gateway.receive(message));
  } catch (error) {
    await chat.stop();
    await http.close();
    await Promise.race([gateway.stop().catch(() => undefined), delay(1000, undefined)]);
    await closeCluster().catch(() => undefined);
    throw error;
  }
  io.stdout.write(
    [
      `tiller serve: listening on ${url}`,
      `  browser: open ${url}/   terminal: tiller chat --url ${url}`,
      `  store:   ${storeDescription}`,
      ...chat.lines.map((line) => `  channel: ${line}`),
      `  model:   ${description}`,
      ...(real
        ? []
        : [
            "  A real model: tiller serve --model-url http://127.0.0.1:11434/v1 --model llama3.2",
            "  (any OpenAI-compatible server; the key from TILLER_MODEL_KEY or OPENAI_API_KEY)",
            "  or: tiller serve --provider anthropic --model claude-sonnet-4-5 (the key from ANTHROPIC_API_KEY)",
          ]),
      `  traces:  ${tracing ? tracing.description : "off (set OTEL_EXPORTER_OTLP_ENDPOINT to export OTLP)"}`,
      `  metrics: ${url}/metrics`,
      `  auth:    ${token ? "Authorization: Bearer $TILLER_TOKEN on every /v1 request" : "none (loopback only; set TILLER_TOKEN to require one)"}`,
      "",
    ].join("\n"),
  );
  await stopped;
  io.stdout.write("stopped\n");
  return 0;
}

function parseCli(argv: string[]) {
  try {
    return parseArgs({
      args: argv,
      strict: true,
      allowPositionals: false,
      options: {
        host: { type: "string" },
        port: { type: "string" },
        store: { type: "string" },
        config: { type: "string" },
        instructions: { type: "string" },
        tools: { type: "string" },
        provider: { type: "string" },
        "model-url": { type: "string" },
        model: { type: "string" },
        "drain-timeout": { type: "string" },
        "request-timeout": { type: "string" },
        postgres: { type: "string" },
        schema: { type: "string" },
        lease: { type: "string" },
      },
    });
  } catch (error) {
    throw new UsageError(`${errorMessage(error)}\n${SERVE_USAGE}`);
  }
}

function listen(server: import("node:http").Server, port: number, host: string): Promise<void> {
  return new Promise((resolvePromise, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolvePromise();
    });
  });
}

/** Resolves once `shutdown` has run after the first SIGTERM/SIGINT; a second one exits at once. */
function onSignals(io: ServeIo, shutdown: () => Promise<void>): Promise<void> {
  return new Promise((resolvePromise, reject) => {
    let signalled = false;
    const handler = (signal: NodeJS.Signals) => {
      if (signalled) {
        io.stderr.write(`${signal} again: stopping at once\n`);
        process.exit(signal === "SIGINT" ? 130 : 143);
      }
      signalled = true;
      shutdown().then(resolvePromise, reject);
    };
    process.on("SIGTERM", handler);
    process.on("SIGINT", handler);
  });
}

function delay<T>(ms: number, value: T): Promise<T> {
  return new Promise((resolvePromise) => setTimeout(() => resolvePromise(value), ms));
}
