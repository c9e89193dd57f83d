import { mkdir, readFile } from "node:fs/promises";
import { dirname } from "node:path";
import { appendDurable } from "../../jsonl/durable-file.js";

/** What a chat channel knows of one delivery: begun (the request may be out), or sent with its ids. */
export interface LedgerEntry {
  deliveryId: string;
  session: string;
  /** When the first request went out (ms since the epoch). */
  at: number;
  /** The platform's message ids, once the platform answered. */
  messageIds?: string[];
}

/**
 * A chat channel's own record of its sends, so a restart never posts twice what the platform already
 * has: `begin` is durable before the request leaves, `commit` after the platform answers. An entry
 * begun and never committed is a send whose outcome is unknown (the process died mid-request).
 */
export interface SendLedger {
  get(deliveryId: string): LedgerEntry | undefined;
  begin(deliveryId: string, session: string, at: number): Promise<void>;
  commit(deliveryId: string, messageIds: string[]): Promise<void>;
  /** Forgets a begun send the platform certainly did not take (a refusal before it was written). */
  abandon(deliveryId: string): Promise<void>;
  /** Every entry, in the order begun (a restart looks for previews its finals never replaced). */
  list?(): LedgerEntry[];
  /**
   * In one durable step: `deliveryId` was delivered by editing message `messageId` (a preview's), and
   * the preview `settles` (if given) needs no cleanup any more.
   */
  edited?(
    deliveryId: string,
    session: string,
    at: number,
    messageId: string,
    settles?: string,
  ): Promise<void>;
  /** The preview `deliveryId` needs no cleanup any more (replaced, or edited to the discarded text). */
  settle?(deliveryId: string): Promise<void>;
}

/** A ledger in memory: for tests and for code that keeps no state across restarts. */
export class MemorySendLedger implements SendLedger {
  protected readonly entries = new Map<string, LedgerEntry>();

  get(deliveryId: string): LedgerEntry | undefined {
    return this.entries.get(deliveryId);
  }

  async begin(deliveryId: string, session: string, at: number): Promise<void> {
    this.entries.set(deliveryId, { deliveryId, session, at });
  }

  async commit(deliveryId: string, messageIds: string[]): Promise<void> {
    const entry = this.entries.get(deliveryId);
    if (entry) entry.messageIds = messageIds;
  }

  async abandon(deliveryId: string): Promise<void> {
    this.entries.delete(deliveryId);
  }

  list(): LedgerEntry[] {
    return [...this.entries.values()];
  }

  async edited(
    deliveryId: string,
    session: string,
    at: number,
    messageId: string,
    settles?: string,
  ): Promise<void> {
    this.entries.set(deliveryId, { deliveryId, session, at, messageIds: [messageId] });
    if (settles) this.entries.delete(settles);
  }

  async settle(deliveryId: string): Promise<void> {
    this.entries.delete(deliveryId);
  }
}

type LedgerLine =
  | { op: "begin"; d: string; s: string; at: number }
  | { op: "commit"; d: string; ids: string[] }
  | { op: "abandon"; d: string }
  | { op: "edited"; d: string; s: string; at: number; ids: string[]; settles?: string }
  | { op: "settle"; d: string };

/**
 * The ledger as one append-only JSONL file, each line fsynced before the call returns. A torn last
 * line (a crash mid-write) is skipped on open: its send then counts as never begun, which is true,
 * since the request leaves only after `begin` returned.
 *
 * @example
 * ```ts
 * const ledger = await FileSendLedger.open(".tiller/channels/telegram.jsonl");
 * ```
 */
export class FileSendLedger extends MemorySendLedger {
  private tail: Promise<void> = Promise.resolve();

  private constructor(private readonly file: string) {
    super();
  }

  static async open(file: string): Promise<FileSendLedger> {
    const ledger = new FileSendLedger(file);
    await mkdir(dirname(file), { recursive: true });
    let text = "";
    try {
      text = await readFile(file, "utf8");
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
    }
    for (const raw of text.split("\n")) {
      if (raw.trim() === "") continue;
      let line: LedgerLine;
      try {
        line = JSON.parse(raw) as LedgerLine;
      } catch {
        continue;
      }
      if (line.op === "begin")
        ledger.entries.set(line.d, { deliveryId: line.d, session: line.s, at: line.at });
      else if (line.op === "commit") {
        const entry = ledger.entries.get(line.d);
        if (entry) entry.messageIds = line.ids;
      } else if (line.op === "edited") {
        ledger.entries.set(line.d, {
          deliveryId: line.d,
          session: line.s,
          at: line.at,
          messageIds: line.ids,
        });
        if (line.settles) ledger.entries.delete(line.settles);
      } else ledger.entries.delete(line.d);
    }
    return ledger;
  }

  override async begin(deliveryId: string, session: string, at: number): Promise<void> {
    await this.write({ op: "begin", d: deliveryId, s: session, at });
    await super.begin(deliveryId, session, at);
  }

  override async commit(deliveryId: string, messageIds: string[]): Promise<void> {
    await super.commit(deliveryId, messageIds);
    await this.write({ op: "commit", d: deliveryId, ids: messageIds });
  }

  override async abandon(deliveryId: string): Promise<void> {
    await super.abandon(deliveryId);
    await this.write({ op: "abandon", d: deliveryId });
  }

  override async edited(
    deliveryId: string,
    session: string,
    at: number,
    messageId: string,
    settles?: string,
  ): Promise<void> {
    await this.write({
      op: "edited",
      d: deliveryId,
      s: session,
      at,
      ids: [messageId],
      ...(settles ? { settles } : {}),
    });
    await super.edited(deliveryId, session, at, messageId, settles);
  }

  override async settle(deliveryId: string): Promise<void> {
    await super.settle(deliveryId);
    await this.write({ op: "settle", d: deliveryId });
  }

  // Lines go out one at a time, in call order.
  private write(line: LedgerLine): Promise<void> {
    const next = this.tail.then(() => appendDurable(this.file, Buffer.from(`${JSON.stringify(line)}\n`)));
    this.tail = next.catch(() => undefined);
    return next;
  }
}
