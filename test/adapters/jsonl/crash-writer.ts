/**
 * The victim of the crash harness (jsonl-crash.test.ts):
 *
 *   node --import tsx test/adapters/jsonl/crash-writer.ts DIR SEED [--wait]
 *
 * Opens a JsonlStore on DIR (taking over the lock of the previous, killed writer), then appends records
 * of random sizes to a few sessions forever, and prints `ack <id>` for each record once its append has
 * resolved as `ack <recordId> <messageId>` (stdout to a pipe is synchronous on Linux, so a printed ack
 * has left the process). Before a large append it prints `big <bytes> <messageId>`. With `--wait` it loads its modules and waits for a line on stdin
 * before touching DIR, so the harness can start the next writer while the current one runs.
 */
import { createInterface } from "node:readline";
import { JsonlStore } from "../../../src/adapters/jsonl/jsonl-store.js";
import type { RecordBody, TranscriptHead } from "../../../src/ports/store.js";
import { mulberry32 } from "../../support/random.js";

/** Each run writes to 3 of these, so a restart rereads only part of the accumulated directory. */
const SESSIONS = [
  "alpha",
  "beta",
  "../gamma",
  "Δelta:1",
  "Telegram:7",
  "telegram:7",
  "caf\u00e9",
  "cafe\u0301",
];
const [dir, seedArg] = process.argv.slice(2);
if (!dir || !seedArg) throw new Error("usage: crash-writer.ts DIR SEED [--wait]");
const random = mulberry32(Number(seedArg));

if (process.argv.includes("--wait")) {
  const lines = createInterface({ input: process.stdin });
  await new Promise((resolve) => lines.once("line", resolve));
  lines.close();
}

const store = await JsonlStore.openDir({ dir });
const chosen = [...SESSIONS].sort(() => random() - 0.5).slice(0, 3);
const heads = new Map<string, TranscriptHead>();
for (const key of chosen) heads.set(key, await store.open(key));
process.stdout.write("ready\n");

// At most one large record in a third of the runs keeps the directory (reread on restart) near 20 MB.
let bigBudget = random() < 0.33 ? 1 : 0;
let counter = 0;

await Promise.all(chosen.map((key) => writeForever(key)));

async function writeForever(key: string): Promise<never> {
  for (;;) {
    const roll = random();
    if (roll < 0.01) heads.set(key, await store.reset(key, heads.get(key)!));
    else if (roll < 0.03) await store.rotate(key, heads.get(key)!);
    const count = random() < 0.2 ? 2 + Math.floor(random() * 3) : 1;
    const bodies = Array.from({ length: count }, body);
    const records = await store.append(key, bodies, heads.get(key)!);
    process.stdout.write(records.map((r) => `ack ${r.id} ${"messageId" in r ? r.messageId : ""}\n`).join(""));
  }
}

function recordSize(messageId: string): number {
  if (bigBudget > 0 && random() < 0.1) {
    bigBudget--;
    const size = 65_536 + Math.floor(random() ** 3 * (1_048_576 - 65_536));
    process.stdout.write(`big ${size} ${messageId}\n`);
    return size;
  }
  return random() < 0.95 ? 10 + Math.floor(random() * 300) : 1_024 + Math.floor(random() * 7_000);
}

function body(): RecordBody {
  const id = `${seedArg}-${counter++}`;
  const size = recordSize(id);
  // Non-ASCII and characters JSON must escape, so multi-byte sequences and escapes get torn too.
  return { role: "user", text: `${id} é"\n\\ ${"x".repeat(size)}`, messageId: id };
}
