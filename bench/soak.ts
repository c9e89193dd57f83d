/**
 * The soak: many sessions and messages through the real gateway and the JSONL store, on the simulated
 * clock: random queue modes (inline), tool durations, controls (`/stop`, `/new`, `/queue`) and
 * redeliveries (the same id again). Counted from the outside: messages lost (acknowledged as accepted,
 * never dropped with a reason, never shown to the model), answered twice (a reply text delivered
 * twice), reordered (a session's replies out of its messages' order), and the heap before, right
 * after, and after a GC once everything is closed.
 */
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { JsonlStore } from "../src/adapters/jsonl/jsonl-store.js";
import { ScriptedModel } from "../src/adapters/scripted-model.js";
import { SimulatedClock } from "../src/adapters/simulated-clock.js";
import { createGateway } from "../src/gateway/create-gateway.js";
import { silentLogger } from "../src/logger.js";
import type { Channel, DeliveryReceipt, OutboundMessage } from "../src/ports/channel.js";
import { sleep } from "../src/ports/clock.js";
import type { ToolDefinition } from "../src/ports/tool.js";

export interface SoakOptions {
  sessions: number;
  messages: number;
  seed?: number;
}

export interface SoakFigures {
  sessions: number;
  messages: number;
  acked: number;
  lost: number;
  answeredTwice: number;
  reordered: number;
  duplicatesAcked: number;
  wallMs: number;
  heapBeforeMb: number;
  heapAfterRunMb: number;
  heapAfterGcMb: number;
}

/** Every time in the soak is a multiple of this, so many timers share an instant and I/O batches. */
const SLOT_MS = 50;

/**
 * Like `runUntilIdle`, but fires every timer due at the same instant before waiting for I/O: thousands
 * of sessions then share each group commit, as they would under real load.
 */
async function runInSlots(clock: SimulatedClock, isBusy: () => boolean): Promise<void> {
  for (;;) {
    // setImmediate alone (no 1 ms timer between polls): the loop still polls I/O on every turn.
    do await new Promise<void>((resolve) => setImmediate(resolve));
    while (isBusy());
    const next = clock.nextTimerAt();
    if (next === undefined) return;
    while (clock.nextTimerAt() === next) clock.fireNext();
  }
}

const MODES = ["steer", "followup", "collect", "interrupt"] as const;
const ACCEPTED = new Set(["started", "steered", "queued", "collected", "interrupted"]);

function prng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Counts reply texts per session and checks they come in message order. */
class CountingChannel implements Channel {
  readonly perText = new Map<string, number>();
  readonly lastIndex = new Map<string, number>();
  reordered = 0;
  async send(message: OutboundMessage): Promise<DeliveryReceipt> {
    if (message.kind === "reply" || message.kind === "recovery") {
      const key = `${message.session}/${message.text}`;
      this.perText.set(key, (this.perText.get(key) ?? 0) + 1);
      const index = Number(/#(\d+)/.exec(message.text)?.[1] ?? -1);
      if (index < (this.lastIndex.get(message.session) ?? -1)) this.reordered++;
      this.lastIndex.set(message.session, index);
    }
    return { messageId: message.deliveryId };
  }
}

export async function soak(options: SoakOptions): Promise<SoakFigures> {
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  const heapBefore = process.memoryUsage().heapUsed;
  const started = performance.now();
  const random = prng(options.seed ?? 7);
  const dir = await mkdtemp(join(soakRoot(), "tiller-soak-"));
  const clock = new SimulatedClock();
  const store = await JsonlStore.openDir({ dir, now: () => clock.now() });
  const channel = new CountingChannel();
  const tool = (name: string, cancellable: boolean): ToolDefinition => ({
    name,
    cancellable,
    execute: (_args, context) =>
      sleep(clock, SLOT_MS * Math.floor(random() * 60), cancellable ? context.signal : undefined).then(
        () => "ok",
      ),
  });
  const gateway = createGateway({
    config: { queue: { debounceMs: 200 } },
    model: new ScriptedModel(
      [
        {
          when: { latestUser: "tool", call: 1 },
          reply: { delayMs: 100, toolCalls: [{ name: "write_file" }] },
        },
        { when: { latestUser: "search", call: 1 }, reply: { delayMs: 100, toolCalls: [{ name: "search" }] } },
        { reply: { delayMs: 150, text: "Re: {{latestUser}}" } },
      ],
      clock,
    ),
    tools: [tool("write_file", false), tool("search", true)],
    channels: { web: channel },
    store,
    clock,
    logger: silentLogger,
  });
  const seen = new Set<string>();
  const dropped = new Set<string>();
  gateway.subscribe((event) => {
    if (event.type === "model.called")
      for (const id of (event.messageIds as string[]) ?? []) seen.add(`${event.session}/${id}`);
    if (event.type === "message.dropped") dropped.add(`${event.session}/${String(event.messageId)}`);
  });
  await gateway.start();

  const acks = new Map<string, string>();
  let duplicatesAcked = 0;
  const spanMs = Math.max(60_000, options.messages * 6);
  const sessionMode = Array.from({ length: options.sessions }, () => MODES[Math.floor(random() * 4)]!);
  for (let i = 0; i < options.messages; i++) {
    const s = Math.floor(random() * options.sessions);
    const session = `web:soak${s}`;
    const roll = random();
    const text =
      roll < 0.01
        ? "/stop"
        : roll < 0.015
          ? "/new"
          : roll < 0.02
            ? `/queue ${MODES[Math.floor(random() * 4)]}`
            : `question #${i} ${roll < 0.2 ? "use the tool" : roll < 0.3 ? "search it" : "plain"}`;
    const id = `m${i}`;
    const at = SLOT_MS * Math.floor(((i / options.messages) * spanMs) / SLOT_MS);
    const mode = sessionMode[s]!;
    const receive = () =>
      gateway.receive({ session, channel: "web", id, text, mode }).then((ack) => {
        const key = `${session}/${id}`;
        if (acks.has(key)) {
          if (ack.disposition === "duplicate") duplicatesAcked++;
          return;
        }
        acks.set(key, ack.disposition);
      });
    clock.setTimeout(() => void receive(), at);
    // A channel redelivers some messages (same id) a little later.
    if (random() < 0.03)
      clock.setTimeout(() => void receive(), at + SLOT_MS * (1 + Math.floor(random() * 100)));
  }
  await runInSlots(clock, () => gateway.isBusy);

  let lost = 0;
  for (const [key, disposition] of acks)
    if (ACCEPTED.has(disposition) && !seen.has(key) && !dropped.has(key)) lost++;
  let answeredTwice = 0;
  for (const count of channel.perText.values()) if (count > 1) answeredTwice++;
  const heapAfterRun = process.memoryUsage().heapUsed;
  const figures = {
    sessions: options.sessions,
    messages: options.messages,
    acked: acks.size,
    lost,
    answeredTwice,
    reordered: channel.reordered,
    duplicatesAcked,
    wallMs: Math.round(performance.now() - started),
  };
  await gateway.stop();
  await rm(dir, { recursive: true, force: true });
  return { ...figures, heapBeforeMb: mb(heapBefore), heapAfterRunMb: mb(heapAfterRun), heapAfterGcMb: -1 };
}

/** The soak and the heap once everything it made is gone (a GC back to the baseline). */
export async function soakWithHeap(options: SoakOptions): Promise<SoakFigures> {
  const figures = await soak(options);
  const gc = (globalThis as { gc?: () => void }).gc;
  for (let i = 0; i < 3; i++) {
    gc?.();
    await new Promise((resolve) => setImmediate(resolve));
  }
  return { ...figures, heapAfterGcMb: mb(process.memoryUsage().heapUsed) };
}

/**
 * Where the soak's store lives: a memory file system when there is one (the soak measures the
 * gateway and the store's code, not the disk's fsync latency), else the temp directory.
 */
function soakRoot(): string {
  if (process.env.TILLER_SOAK_DIR) return process.env.TILLER_SOAK_DIR;
  return existsSync("/dev/shm") ? "/dev/shm" : tmpdir();
}

const mb = (bytes: number) => Math.round((bytes / 1_048_576) * 10) / 10;
