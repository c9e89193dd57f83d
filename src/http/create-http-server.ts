import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { WebChannel } from "../adapters/channels/web-channel.js";
import { errorMessage } from "../errors.js";
import type { Gateway } from "../gateway/create-gateway.js";
import { type Logger, silentLogger } from "../logger.js";
import { hasBearer } from "./bearer-auth.js";
import { answerClientError } from "./client-error.js";
import { commitmentRoutes } from "./commitment-routes.js";
import { toHttpError } from "./error-status.js";
import { EventFeed } from "./event-feed.js";
import { HttpError, sendError, sendJson } from "./http-error.js";
import { OPENAPI_DOCUMENT } from "./openapi.js";
import { serveOperatorPage } from "./operator-page.js";
import { type Route, Router } from "./router.js";
import { scheduleRoutes } from "./schedule-routes.js";
import { traceRequest } from "./trace-request.js";
import { v1Routes } from "./v1-routes.js";

/** Options of {@link createHttpServer}: the gateway it serves, the token, the web channel and the page. */
export interface HttpServerOptions {
  gateway: Gateway;
  /** The gateway's `web` channel: its deliveries are what the deliveries stream serves. */
  web: WebChannel;
  /** When set, every `/v1` request needs `Authorization: Bearer <token>`. */
  token?: string;
  /** Largest request body accepted, in bytes. @default 262144 */
  bodyLimit?: number;
  /** Interval of the keep-alive comment on event streams. @default 15000 */
  heartbeatMs?: number;
  /** Events kept for replay from `Last-Event-ID`. @default 4096 */
  eventBuffer?: number;
  /**
   * A client that has not sent its whole request (headers and body) this long after it began, or
   * sends nothing, is answered 408 and cut. Streams, once open, are not limited. @default 30000
   */
  requestTimeoutMs?: number;
  /** The built operator page; without one `GET /` says how to build it. */
  pageDir?: string;
  /** More routes, tried after the built-in ones (before the page). */
  routes?: Route[];
  /** @default a logger that writes nothing */
  logger?: Logger;
  /**
   * Asked by every `GET /readyz` once the server is ready: rejects while the store cannot be reached
   * (then `/readyz` is 503 `STORE_UNAVAILABLE`). @default none (the store is not checked)
   */
  storeCheck?: () => Promise<void>;
}

/**
 * The gateway's HTTP API (docs/http.md) on `node:http`: a route table, JSON bodies with a size limit,
 * error bodies `{ error: { code, message, field? } }`, bearer auth, server-sent-event streams, health
 * and readiness. The server is not listening yet: call `server.listen`.
 *
 * @example
 * ```ts
 * const web = new WebChannel(new MemoryDeliveryLog());
 * const gateway = createGateway({ model, channels: { web } });
 * const http = createHttpServer({ gateway, web });
 * await gateway.start();
 * http.markReady();
 * http.server.listen(8787, "127.0.0.1");
 * ```
 */
export function createHttpServer(options: HttpServerOptions) {
  const { gateway, web } = options;
  const logger = options.logger ?? silentLogger;
  const feed = new EventFeed(options.eventBuffer ?? 4096);
  const unsubscribe = gateway.subscribe(feed.push);
  let state: "starting" | "ready" | "draining" = "starting";

  const router = new Router();
  router.add(
    { method: "GET", path: "/healthz", handler: ({ res }) => sendJson(res, 200, { ok: true }) },
    {
      method: "GET",
      path: "/readyz",
      handler: async ({ res }) => {
        if (state !== "ready" || gateway.isDraining) {
          sendJson(res, 503, {
            error: {
              code: state === "starting" ? "STARTING" : "GATEWAY_DRAINING",
              message: `the server is ${state}`,
            },
          });
          return;
        }
        // Not ready while the store cannot be reached: a load balancer sends the traffic elsewhere.
        const storeDown = await options.storeCheck?.().then(
          () => false,
          () => true,
        );
        if (storeDown)
          sendJson(
            res,
            503,
            { error: { code: "STORE_UNAVAILABLE", message: "the store cannot be reached" } },
            { "retry-after": "5" },
          );
        else sendJson(res, 200, { ready: true });
      },
    },
    { method: "GET", path: "/openapi.json", handler: ({ res }) => sendJson(res, 200, OPENAPI_DOCUMENT) },
    ...v1Routes({
      gateway,
      web,
      feed,
      bodyLimit: options.bodyLimit ?? 256 * 1024,
      heartbeatMs: options.heartbeatMs ?? 15_000,
      refusal: () => (state === "ready" ? undefined : state),
    }),
    ...commitmentRoutes(gateway),
    ...scheduleRoutes(gateway),
    ...(options.routes ?? []),
  );

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://localhost");
    const method = req.method ?? "GET";
    // Routes match the path as sent: URL parsing would resolve `.`, `..` and their encodings (`%2E`)
    // and land a key of that name on another route.
    const raw = req.url?.startsWith("/") ? req.url.split(/[?#]/, 1)[0]! : url.pathname;
    if (url.pathname.startsWith("/v1/") && options.token !== undefined && !hasBearer(req, options.token)) {
      throw new HttpError(401, "UNAUTHORIZED", "expected Authorization: Bearer <token>", "authorization", {
        "www-authenticate": 'Bearer realm="tiller"',
      });
    }
    const match = router.match(method, raw);
    if (match.kind === "found") {
      await match.route.handler({ req, res, params: match.params, url });
      return;
    }
    if (match.kind === "method") {
      throw new HttpError(
        405,
        "METHOD_NOT_ALLOWED",
        `${method} is not allowed on ${url.pathname}`,
        undefined,
        {
          allow: match.allowed.join(", "),
        },
      );
    }
    if (method === "GET" && !url.pathname.startsWith("/v1/")) {
      if (await serveOperatorPage({ req, res, params: {}, url }, options.pageDir)) return;
    }
    throw new HttpError(404, "NOT_FOUND", `nothing at ${method} ${url.pathname}`);
  }

  const requestTimeout = options.requestTimeoutMs ?? 30_000;
  const server: Server = createServer(
    {
      requestTimeout,
      headersTimeout: requestTimeout,
      keepAliveTimeout: Math.min(5000, requestTimeout),
      // How often Node checks those timeouts (its default, 30 s, would double a short one).
      connectionsCheckingInterval: Math.max(10, Math.min(1000, Math.floor(requestTimeout / 4))),
    },
    (req, res) => {
      traceRequest(req, res, () => handle(req, res)).catch((error: unknown) => {
        const http = toHttpError(error);
        if (http.status >= 500) logger.error({ url: req.url, error: errorMessage(error) }, "http.error");
        if (res.headersSent) {
          res.destroy();
          return;
        }
        sendError(res, http);
      });
    },
  );
  server.on("clientError", answerClientError);

  return {
    server,
    router,
    feed,
    handle,
    /** The gateway has started: `/readyz` answers 200. */
    markReady(): void {
      if (state === "starting") state = "ready";
    },
    /** New messages get 503 and `/readyz` 503; controls still act. */
    startDraining(): void {
      state = "draining";
    },
    get state() {
      return state;
    },
    /** Stops listening, ends every open stream and connection. */
    async close(): Promise<void> {
      unsubscribe();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}

/** What {@link createHttpServer} returns: the `node:http` server, its router and event feed, and the readiness switch. */
export type HttpServer = ReturnType<typeof createHttpServer>;
