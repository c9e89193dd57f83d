import { createInterface } from "node:readline";
import { parseArgs } from "node:util";
import { nanoid } from "nanoid";
import createClient from "openapi-fetch";
import { errorMessage } from "../errors.js";
import type { paths } from "../http/api-types.js";
import { UsageError } from "./serve-setup.js";
import { followSse } from "./sse-client.js";

export const CHAT_USAGE = "usage: tiller chat [--url http://127.0.0.1:8787] [--session KEY]";

export interface ChatIo {
  stdin: NodeJS.ReadableStream;
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  env: NodeJS.ProcessEnv;
}

/**
 * `tiller chat`: a terminal chat against a running `tiller serve`. Each line typed is posted as a
 * message (`/stop`, `/new`, `/queue <mode>` included: the gateway acts on them); its ack is shown at
 * once, the model's draft streams in as it is written, and every delivery of the session is shown as
 * it arrives (replayed after a reconnect, so nothing is missed). Ends at end of input or `/quit`.
 */
export async function chat(argv: string[], io: ChatIo): Promise<number> {
  const values = parseCli(argv);
  const base = (values.url ?? io.env.TILLER_URL ?? "http://127.0.0.1:8787").replace(/\/+$/, "");
  const session = values.session ?? `chat:${nanoid(8)}`;
  const headers: Record<string, string> = io.env.TILLER_TOKEN
    ? { authorization: `Bearer ${io.env.TILLER_TOKEN}` }
    : {};
  const path = `${base}/v1/sessions/${encodeURIComponent(session)}`;
  // The JSON endpoints through the client typed from the server's OpenAPI document.
  const api = createClient<paths>({ baseUrl: base, headers });
  const out = (text: string) => io.stdout.write(text);
  const stop = new AbortController();

  try {
    const { response } = await api.GET("/healthz");
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
  } catch (error) {
    io.stderr.write(`tiller chat: cannot reach ${base} (${errorMessage(error)}); is tiller serve running?\n`);
    return 1;
  }

  let draft: string | undefined;
  const endDraft = () => {
    if (draft !== undefined) out("\n");
    draft = undefined;
  };
  let opened = 0;
  const bothOpen = new Promise<void>((resolve) => {
    const onOpen = () => {
      if (++opened === 2) resolve();
    };
    void followSse(`${path}/deliveries`, {
      headers,
      signal: stop.signal,
      onOpen,
      onDrop: (reason) => io.stderr.write(`(deliveries stream: ${reason}; reconnecting)\n`),
      onEvent(message) {
        if (message.event !== "delivery") return;
        const delivery = JSON.parse(message.data) as { kind: string; text: string };
        endDraft();
        out(`tiller${delivery.kind === "reply" ? "" : ` (${delivery.kind})`}> ${delivery.text}\n`);
      },
    });
    void followSse(`${base}/v1/events?session=${encodeURIComponent(session)}`, {
      headers,
      signal: stop.signal,
      onOpen,
      onEvent(message) {
        const event = JSON.parse(message.data) as Record<string, unknown>;
        const key = `${String(event.runId)}#${String(event.call)}`;
        if (message.event === "model.delta") {
          if (draft !== key) {
            endDraft();
            out("[draft] ");
            draft = key;
          }
          out(String(event.text));
        } else if (message.event === "tool.started") {
          endDraft();
          out(`[tool] ${String(event.name)} started\n`);
        } else if (message.event === "tool.ended") {
          endDraft();
          out(`[tool] ${String(event.name)} ${String(event.status ?? "ended")}\n`);
        }
      },
    });
  });
  await bothOpen;
  out(`connected to ${base} as session ${session} (type /quit to leave)\n`);

  const lines = createInterface({ input: io.stdin, terminal: false });
  for await (const line of lines) {
    const text = line.trim();
    if (text === "") continue;
    if (text === "/quit" || text === "/exit") break;
    try {
      const { data, error, response } = await api.POST("/v1/sessions/{key}/messages", {
        params: { path: { key: session } },
        body: { text },
      });
      endDraft();
      // A 409 (`reject` mode, the session busy) still carries the ack that says why.
      const ack = data?.ack ?? (error && "ack" in error ? error.ack : undefined);
      if (ack) out(`[ack] ${ack.disposition}: ${ack.text}\n`);
      else
        out(
          `[error] ${error && "error" in error ? error.error.code : response.status}: ${error && "error" in error ? error.error.message : ""}\n`,
        );
    } catch (error) {
      endDraft();
      out(`[error] ${errorMessage(error)}\n`);
    }
  }
  stop.abort();
  return 0;
}

function parseCli(argv: string[]) {
  try {
    return parseArgs({
      args: argv,
      strict: true,
      allowPositionals: false,
      options: { url: { type: "string" }, session: { type: "string" } },
    }).values;
  } catch (error) {
    throw new UsageError(`${errorMessage(error)}\n${CHAT_USAGE}`);
  }
}
