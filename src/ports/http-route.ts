import type { IncomingMessage, ServerResponse } from "node:http";

// The route a channel adapter mounts on the HTTP server (a webhook): the contract, apart from the server.

/** What a route handler gets: the request, the response, the matched path parameters and the URL. */
export interface RouteContext {
  req: IncomingMessage;
  res: ServerResponse;
  /** Path parameters, percent-decoded. */
  params: Record<string, string>;
  url: URL;
}

/**
 * One endpoint: `path` is literal segments and `:name` parameters (`/v1/sessions/:key`), matched
 * segment by segment on the raw path, so an encoded `/` (`%2F`) stays inside its parameter and an
 * encoded `.` or `..` is a parameter like any other.
 */
export interface Route {
  method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  path: string;
  handler(context: RouteContext): Promise<void> | void;
}
