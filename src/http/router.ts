import type { Route, RouteContext } from "../ports/http-route.js";
import { HttpError } from "./http-error.js";

export type { Route, RouteContext };

export type RouteMatch =
  | { kind: "found"; route: Route; params: Record<string, string> }
  | { kind: "method"; allowed: string[] }
  | { kind: "none" };

/**
 * The server's route table. Routes are tried in the order added; a path that matches with another
 * method answers 405 with `Allow`.
 *
 * @example
 * ```ts
 * const router = new Router();
 * router.add({ method: "GET", path: "/v1/sessions/:key", handler: ({ params, res }) => res.end(params.key) });
 * router.match("GET", "/v1/sessions/web%3A1"); // { kind: "found", params: { key: "web:1" }, ... }
 * ```
 */
export class Router {
  private readonly routes: Array<{ route: Route; segments: string[] }> = [];

  add(...routes: Route[]): this {
    for (const route of routes) this.routes.push({ route, segments: route.path.split("/") });
    return this;
  }

  /** Every route, in order (for listings and tests). */
  list(): readonly Route[] {
    return this.routes.map((entry) => entry.route);
  }

  match(method: string, pathname: string): RouteMatch {
    const parts = pathname.split("/");
    const allowed: string[] = [];
    for (const { route, segments } of this.routes) {
      const params = matchSegments(segments, parts);
      if (!params) continue;
      if (route.method === method) return { kind: "found", route, params };
      allowed.push(route.method);
    }
    return allowed.length > 0 ? { kind: "method", allowed } : { kind: "none" };
  }
}

function matchSegments(segments: string[], parts: string[]): Record<string, string> | undefined {
  if (segments.length !== parts.length) return undefined;
  const params: Record<string, string> = {};
  for (let i = 0; i < segments.length; i++) {
    const segment = segments[i]!;
    const part = parts[i]!;
    if (segment.startsWith(":")) {
      const name = segment.slice(1);
      if (part === "") return undefined;
      // A bare `.` or `..` is a dot segment, which clients and proxies resolve away: such a key
      // must come percent-encoded (`%2E`, `%2E%2E`), and then it is an ordinary key.
      if (part === "." || part === "..")
        throw new HttpError(
          400,
          "INVALID_INPUT",
          `${name}: "${part}" is a dot segment; percent-encode it (${part.replaceAll(".", "%2E")})`,
          name,
        );
      try {
        params[name] = decodeURIComponent(part);
      } catch {
        throw new HttpError(400, "INVALID_INPUT", `${name}: malformed percent-encoding in the path`, name);
      }
    } else if (segment !== part) return undefined;
  }
  return params;
}
