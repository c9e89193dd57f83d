/**
 * The re-check corpus (test/fixtures/recheck-corpus/): labelled two-turn conversations, complaint
 * phrasings with near-misses, and re-drafted replies that do or do not acknowledge a complaint. Each
 * item belongs to a fixed split: `tune` (what the heuristics were adjusted on) or `heldout` (what the
 * thresholds test and the bench report on). Shared by the tests and `bench/recheck.bench.ts`.
 */
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { z } from "zod";
import type { DraftFacts } from "../../src/policy/stale-reply.js";

const split = z.enum(["tune", "heldout"]);

const conversationSchema = z
  .object({
    id: z.string(),
    split,
    /** `fluent`: the draft answers the newest message; `stale`: it still answers the first one. */
    label: z.enum(["fluent", "stale"]),
    first: z.string().min(1),
    assistant: z.string().min(1),
    newest: z.string().min(1),
    draft: z.string().min(1),
  })
  .strict();

const phrasingSchema = z
  .object({ id: z.string(), split, label: z.enum(["complaint", "near-miss"]), text: z.string().min(1) })
  .strict();

const acknowledgementSchema = z
  .object({
    id: z.string(),
    split,
    complaint: z.string().min(1),
    reply: z.string().min(1),
    acknowledges: z.boolean(),
  })
  .strict();

export type CorpusConversation = z.infer<typeof conversationSchema>;
export type CorpusPhrasing = z.infer<typeof phrasingSchema>;
export type CorpusAcknowledgement = z.infer<typeof acknowledgementSchema>;
export type Split = z.infer<typeof split>;

export interface RecheckCorpus {
  conversations: CorpusConversation[];
  phrasings: CorpusPhrasing[];
  acknowledgements: CorpusAcknowledgement[];
}

/** Finds the fixtures from the source tree or from the compiled bench (tmp/bench-build/...). */
function corpusDir(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 8; i++) {
    const candidate = join(dir, "test", "fixtures", "recheck-corpus");
    if (existsSync(candidate)) return candidate;
    dir = dirname(dir);
  }
  throw new Error("test/fixtures/recheck-corpus not found above this file");
}

function read<T>(file: string, schema: z.ZodType<T>): T[] {
  const raw: unknown = JSON.parse(readFileSync(join(corpusDir(), file), "utf8"));
  return z.array(schema).parse(raw);
}

let cached: RecheckCorpus | undefined;

export function loadRecheckCorpus(): RecheckCorpus {
  cached ??= {
    conversations: read("conversations.json", conversationSchema),
    phrasings: read("complaints.json", phrasingSchema),
    acknowledgements: read("acknowledgements.json", acknowledgementSchema),
  };
  return cached;
}

/** The facts the run gives `assessDraft` at the newest message's finalize, for one conversation. */
export function conversationFacts(item: CorpusConversation): DraftFacts {
  return {
    draft: item.draft,
    newest: item.newest,
    older: [item.first],
    newerArrived: false,
    previousUser: item.first,
    lastAssistant: item.assistant,
  };
}

export function ofSplit<T extends { split: Split }>(items: readonly T[], wanted: Split): T[] {
  return items.filter((item) => item.split === wanted);
}
