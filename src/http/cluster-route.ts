import type { ClusterView } from "../adapters/postgres/cluster-view.types.js";
import { sendJson } from "./http-error.js";
import type { Route } from "./router.js";

/**
 * `GET /v1/cluster` (docs/http.md): the cluster's lanes, processes and session owners, read from the
 * database, when the server runs on PostgreSQL; `{ "clustered": false }` when it runs alone.
 *
 * @example
 * ```ts
 * createHttpServer({ gateway, web, routes: [clusterRoute(() => store.clusterView())] });
 * ```
 */
export function clusterRoute(read?: () => Promise<ClusterView>): Route {
  return {
    method: "GET",
    path: "/v1/cluster",
    async handler({ res }) {
      sendJson(res, 200, read ? await read() : { clustered: false });
    },
  };
}
