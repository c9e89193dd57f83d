import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import { extname, join, resolve, sep } from "node:path";
import type { RouteContext } from "./router.js";

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".json": "application/json; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".map": "application/json; charset=utf-8",
  ".woff2": "font/woff2",
};

const NOT_BUILT = `<!doctype html>
<meta charset="utf-8">
<title>Tiller</title>
<body style="font-family: system-ui, sans-serif; max-width: 40rem; margin: 3rem auto; line-height: 1.5">
<h1>Tiller is running</h1>
<p>The operator page is not built. Build it with <code>npm run build</code> and restart the server,
or talk to the gateway from a terminal with <code>tiller chat</code>.</p>
<p>The HTTP API is under <code>/v1</code>: <code>POST /v1/sessions/{key}/messages</code> with
<code>{"text": "..."}</code>, then read <code>GET /v1/sessions/{key}/deliveries</code> (server-sent events).</p>
</body>
`;

/**
 * Serves the operator page: files of the built page folder (`dir`, its `index.html` at `/`), or, when
 * there is none, a short page that says how to build it. A path never leaves the folder.
 * Resolves false when the path names no file, so the caller can answer 404.
 */
export async function serveOperatorPage(context: RouteContext, dir: string | undefined): Promise<boolean> {
  const { res, url } = context;
  const root = dir === undefined ? undefined : resolve(dir);
  const wanted = url.pathname === "/" ? "/index.html" : url.pathname;
  if (root !== undefined && (await isFile(join(root, "index.html")))) {
    let path: string;
    try {
      path = resolve(root, `.${decodeURIComponent(wanted)}`);
    } catch {
      return false;
    }
    if (!path.startsWith(root + sep) || !(await isFile(path))) return false;
    res.writeHead(200, {
      "content-type": TYPES[extname(path)] ?? "application/octet-stream",
      "cache-control": wanted === "/index.html" ? "no-cache" : "public, max-age=3600",
    });
    createReadStream(path).pipe(res);
    return true;
  }
  if (url.pathname !== "/") return false;
  res.writeHead(200, { "content-type": "text/html; charset=utf-8", "cache-control": "no-cache" });
  res.end(NOT_BUILT);
  return true;
}

async function isFile(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isFile();
  } catch {
    return false;
  }
}
