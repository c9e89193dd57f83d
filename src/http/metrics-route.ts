import { hasBearer } from "./bearer-auth.js";
import { HttpError } from "./http-error.js";
import type { Route } from "./router.js";

/** What the route serves: a Prometheus registry (prom-client's `Registry`). */
export interface MetricsRegistry {
  readonly contentType: string;
  metrics(): Promise<string>;
}

/**
 * `GET /metrics` (docs/observability.md): the Prometheus text format, behind the bearer token when the
 * server has one (metrics name sessions' lanes and tools: not for anyone on the network).
 *
 * @example
 * ```ts
 * createHttpServer({ gateway, web, routes: [metricsRoute(metrics.registry, token)] });
 * ```
 */
export function metricsRoute(registry: MetricsRegistry, token?: string): Route {
  return {
    method: "GET",
    path: "/metrics",
    async handler({ req, res }) {
      if (token !== undefined && !hasBearer(req, token)) {
        throw new HttpError(401, "UNAUTHORIZED", "expected Authorization: Bearer <token>", "authorization", {
          "www-authenticate": 'Bearer realm="tiller"',
        });
      }
      const text = await registry.metrics();
      res.writeHead(200, { "content-type": registry.contentType, "cache-control": "no-store" });
      res.end(text);
    },
  };
}
