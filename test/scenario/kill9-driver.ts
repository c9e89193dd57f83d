/**
 * The victim of the kill -9 test (kill9.test.ts):
 *
 *   node --import tsx test/scenario/kill9-driver.ts DIR SEED
 *
 * Starts a real gateway on a JsonlStore at DIR with the system clock and a model that takes ~200 ms of
 * wall time per call (every message containing "look" first calls the `lookup` tool, which takes
 * ~150 ms). It receives a few follow-up messages in one session, a few tens of milliseconds apart, and
 * prints one JSON line per message once `receive()` has resolved: `{"ack":"<id>","disposition":"..."}`
 * (an acknowledged message is durable; stdout to a pipe is synchronous on Linux, so a printed ack has
 * left the process). Then it waits forever, until the test kills it with SIGKILL.
 */

import { LoopbackChannel } from "../../src/adapters/channels/loopback-channel.js";
import { JsonlStore } from "../../src/adapters/jsonl/jsonl-store.js";
import { SystemClock } from "../../src/adapters/system-clock.js";
import { createGateway } from "../../src/gateway/create-gateway.js";
import { silentLogger } from "../../src/logger.js";
import type { ModelProvider, ModelReply, ModelRequest } from "../../src/ports/model.js";
import { latestUserText } from "../../src/ports/model.js";
import type { ToolDefinition } from "../../src/ports/tool.js";
import { mulberry32 } from "../support/random.js";

const KILL9_SESSION = "web:kill9";
const KILL9_MESSAGES = 4;

const [dir, seedArg] = process.argv.slice(2);
if (!dir || !seedArg) throw new Error("usage: kill9-driver.ts DIR SEED");
const random = mulberry32(Number(seedArg));

/** Resolves after `ms` of wall time; rejects with the signal's reason when it aborts first. */
function wait(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      "abort",
      () => {
        clearTimeout(timer);
        reject(signal.reason);
      },
      { once: true },
    );
  });
}

const model: ModelProvider = {
  async complete(request: ModelRequest): Promise<ModelReply> {
    await wait(200, request.signal);
    const latest = latestUserText(request.context);
    if (request.call === 1 && latest.includes("look")) {
      return {
        text: "",
        toolCalls: [{ callId: `${request.runId}-lookup`, name: "lookup", args: { query: latest } }],
      };
    }
    return { text: `Answer to: ${latest}`, toolCalls: [] };
  },
};

const lookup: ToolDefinition = {
  name: "lookup",
  cancellable: true,
  async execute(_args, context) {
    await wait(150, context.signal);
    return "found it";
  },
};

const clock = new SystemClock();
const store = await JsonlStore.openDir({ dir });
const gateway = createGateway({
  config: { queue: { mode: "followup" } },
  model,
  tools: [lookup],
  channels: { web: new LoopbackChannel() },
  store,
  clock,
  logger: silentLogger,
});
await gateway.start();

for (let i = 1; i <= KILL9_MESSAGES; i++) {
  const id = `k${i}`;
  const text = i % 2 === 0 ? `please look up item ${i}` : `question number ${i}`;
  const ack = await gateway.receive({ session: KILL9_SESSION, channel: "web", text, id });
  process.stdout.write(`${JSON.stringify({ ack: ack.messageId, disposition: ack.disposition })}\n`);
  await wait(20 + Math.floor(random() * 120));
}
process.stdout.write(`${JSON.stringify({ sent: KILL9_MESSAGES })}\n`);
// Waits forever: the test ends this process with SIGKILL.
setInterval(() => {}, 60_000);
