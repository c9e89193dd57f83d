/**
 * One gateway process of the whole-gateway kill -9 harness (gateway-kill9.test.ts):
 *
 *   node gateway-kill9-driver.mjs DIR SEED ACKED_FILE DELIVERIES_FILE K
 *
 * Opens the JSONL store at DIR (resuming what a killed process left), then sends process K's batch of
 * messages (K = -1: none, the final process only resumes) and redelivers a few that ACKED_FILE holds
 * (a channel redelivering what a dead process may not have acknowledged), printing `{"ack":id,"session","disposition"}`
 * per acknowledgement. Its channel appends each send to DELIVERIES_FILE with fsync before it answers,
 * and drops a deliveryId the file already holds (a deduplicating channel), so the parent can count
 * every delivery across processes. Prints `{"idle":true}` once every message is acked and nothing runs.
 */
import { closeSync, existsSync, fsyncSync, openSync, readFileSync, writeSync } from "node:fs";
import { JsonlStore } from "../../src/adapters/jsonl/jsonl-store.js";
import { SystemClock } from "../../src/adapters/system-clock.js";
import { createGateway } from "../../src/gateway/create-gateway.js";
import { silentLogger } from "../../src/logger.js";
import type { Channel, DeliveryReceipt, OutboundMessage } from "../../src/ports/channel.js";
import type { ModelProvider, ModelReply, ModelRequest } from "../../src/ports/model.js";
import type { ToolDefinition } from "../../src/ports/tool.js";
import { mulberry32 } from "../support/random.js";
import { batchOf, type PlannedMessage } from "./gateway-kill9-plan.js";

const [dir, seedArg, ackedFile, deliveriesFile, kArg] = process.argv.slice(2);
if (!dir || !seedArg || !ackedFile || !deliveriesFile || !kArg)
  throw new Error("usage: DIR SEED ACKED_FILE DELIVERIES_FILE K");
const seed = Number(seedArg);
const k = Number(kArg);
const random = mulberry32(seed + process.pid);

function wait(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => {
      clearTimeout(timer);
      reject(signal.reason);
    });
  });
}

/** A deduplicating channel whose every send is durable in a file before it answers. */
class FileChannel implements Channel {
  private readonly taken = new Map<string, string>();
  private readonly fd: number;
  private counter = 0;
  constructor(file: string) {
    if (existsSync(file))
      for (const line of readFileSync(file, "utf8").split("\n")) {
        if (!line.endsWith("}")) continue;
        const sent = JSON.parse(line) as { deliveryId: string; messageId: string; duplicate?: boolean };
        if (!sent.duplicate) this.taken.set(sent.deliveryId, sent.messageId);
      }
    this.fd = openSync(file, "a");
  }
  async send(message: OutboundMessage): Promise<DeliveryReceipt> {
    const deliveryId = message.deliveryId ?? "";
    const earlier = this.taken.get(deliveryId);
    const messageId = earlier ?? `${process.pid}-${++this.counter}`;
    const line = { ...message, messageId, pid: process.pid, ...(earlier ? { duplicate: true } : {}) };
    writeSync(this.fd, `${JSON.stringify(line)}\n`);
    fsyncSync(this.fd);
    this.taken.set(deliveryId, messageId);
    await wait(Math.floor(random() * 10));
    return { messageId };
  }
}

const model: ModelProvider = {
  async complete(request: ModelRequest): Promise<ModelReply> {
    await wait(20 + Math.floor(random() * 60), request.signal);
    const turn = request.context.slice(request.turnStart);
    const ids = turn.flatMap((message) => (message.role === "user" ? [message.messageId] : []));
    const latest = turn.findLast((message) => message.role === "user");
    const text = latest?.role === "user" ? latest.text : "";
    if (request.call === 1 && (text.includes("look") || text.includes("write"))) {
      const name = text.includes("look") ? "lookup" : "write_file";
      return { text: "", toolCalls: [{ callId: `${request.runId}-${name}`, name, args: {} }] };
    }
    return { text: `Answer to [${ids.join(",")}]`, toolCalls: [] };
  },
};

const tools: ToolDefinition[] = [
  {
    name: "lookup",
    cancellable: true,
    execute: (_args, context) => wait(40, context.signal).then(() => "found"),
  },
  { name: "write_file", cancellable: false, execute: () => wait(60).then(() => "written") },
];

const store = await JsonlStore.openDir({ dir });
const gateway = createGateway({
  config: { queue: { mode: "followup", debounceMs: 30 } },
  model,
  tools,
  channels: { web: new FileChannel(deliveriesFile) },
  store,
  clock: new SystemClock(),
  logger: silentLogger,
});
await gateway.start();

const acked = existsSync(ackedFile)
  ? (JSON.parse(readFileSync(ackedFile, "utf8")) as Record<string, number>)
  : {};
const redeliveries: PlannedMessage[] = [];
for (const [id, from] of Object.entries(acked))
  if (random() < 0.02) {
    const earlier = batchOf(seed, from).find((message) => message.id === id);
    if (earlier) redeliveries.push(earlier);
  }
const plan = [...batchOf(seed, k), ...redeliveries];
const out = (line: object) => process.stdout.write(`${JSON.stringify(line)}\n`);
// Resumed and serving: the parent's kill clock starts now.
out({ started: true });
for (const message of plan) {
  const ack = await gateway.receive({
    session: message.session,
    channel: "web",
    id: message.id,
    text: message.text,
    mode: message.mode,
  });
  out({ ack: ack.messageId, session: ack.session, disposition: ack.disposition });
  await wait(Math.floor(random() * 20));
}
const sessions = [
  ...new Set(
    [...plan, ...Object.keys(acked).map((id) => ({ session: `web:k${/s(\d+)m/.exec(id)?.[1]}` }))].map(
      (message) => message.session,
    ),
  ),
];
for (;;) {
  const busy =
    gateway.isBusy ||
    sessions.some((key) => {
      const seen = gateway.inspectSession(key);
      return seen !== undefined && (seen.state !== "idle" || seen.queue.length > 0);
    });
  if (!busy) break;
  await wait(20);
}
out({ idle: true });
await gateway.stop();
closeSync(openSync(deliveriesFile, "a"));
