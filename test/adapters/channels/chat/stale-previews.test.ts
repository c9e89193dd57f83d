import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { FileSendLedger } from "../../../../src/adapters/channels/chat/send-ledger.js";
import {
  discardStalePreviews,
  recordEdit,
  stalePreviews,
} from "../../../../src/adapters/channels/chat/stale-previews.js";
import { ChannelSendError } from "../../../../src/errors.js";
import { silentLogger } from "../../../../src/logger.js";
import { DISCARDED_PREVIEW_TEXT, type EditTarget } from "../../../../src/ports/channel.js";

const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(dirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

async function ledgerFile(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "tiller-previews-"));
  dirs.push(dir);
  return join(dir, "channel.jsonl");
}

describe("stale previews in a chat channel's send ledger", () => {
  it("after a reopen, discards only the previews no final replaced, once", async () => {
    const file = await ledgerFile();
    const before = await FileSendLedger.open(file);
    // Three previews: one replaced by its final, one discarded at its turn's end, one cut off.
    for (const [run, message] of [
      ["r1", "101"],
      ["r2", "102"],
      ["r3", "103"],
    ] as const) {
      await before.begin(`preview:${run}`, "telegram:42", 1);
      await before.commit(`preview:${run}`, [message]);
    }
    await recordEdit(
      before,
      { session: "telegram:42", messageId: "101", deliveryId: "final:1" },
      "Answer",
      2,
    );
    await recordEdit(
      before,
      { session: "telegram:42", messageId: "102", deliveryId: "preview:r2" },
      DISCARDED_PREVIEW_TEXT,
      3,
    );
    // An interim edit of a preview settles nothing.
    await recordEdit(
      before,
      { session: "telegram:42", messageId: "103", deliveryId: "preview:r3" },
      "Draft…",
      4,
    );

    const after = await FileSendLedger.open(file);
    // The final delivered by its edit is known: a resend under its id posts nothing.
    expect(after.get("final:1")?.messageIds).toEqual(["101"]);
    const edits: Array<[EditTarget, string]> = [];
    const edit = async (target: EditTarget, text: string) => {
      edits.push([target, text]);
    };
    expect(await discardStalePreviews(after, stalePreviews(after), edit, silentLogger)).toBe(1);
    expect(edits).toEqual([
      [{ session: "telegram:42", messageId: "103", deliveryId: "preview:r3" }, DISCARDED_PREVIEW_TEXT],
    ]);
    const reopened = await FileSendLedger.open(file);
    expect(await discardStalePreviews(reopened, stalePreviews(reopened), edit, silentLogger)).toBe(0);
  });

  it("keeps a preview whose edit failed for now, and settles one the platform refused for good", async () => {
    const ledger = await FileSendLedger.open(await ledgerFile());
    for (const run of ["r1", "r2"]) {
      await ledger.begin(`preview:${run}`, "slack:T1:C1", 1);
      await ledger.commit(`preview:${run}`, [`${run}-ts`]);
    }
    const failing = async (target: EditTarget) => {
      throw target.messageId === "r1-ts"
        ? new ChannelSendError("network", {})
        : new ChannelSendError("message_not_found", { permanent: true });
    };
    expect(await discardStalePreviews(ledger, stalePreviews(ledger), failing, silentLogger)).toBe(0);
    expect(ledger.get("preview:r1")).toBeDefined();
    expect(ledger.get("preview:r2")).toBeUndefined();
  });

  it("looks up a preview whose first send never came back, where the platform can tell", async () => {
    const ledger = await FileSendLedger.open(await ledgerFile());
    await ledger.begin("preview:r1", "slack:T1:C1", 1);
    await ledger.begin("preview:r2", "slack:T1:C1", 1);
    const edited: string[] = [];
    const count = await discardStalePreviews(
      ledger,
      stalePreviews(ledger),
      async (target) => {
        edited.push(target.messageId);
      },
      silentLogger,
      async (id) => (id === "preview:r1" ? { delivered: true, messageId: "found-ts" } : { delivered: false }),
    );
    expect([count, edited]).toEqual([1, ["found-ts"]]);
    expect(ledger.list()).toEqual([]);
  });

  it("leaves alone a preview this process sent after the stale ones were read", async () => {
    const ledger = await FileSendLedger.open(await ledgerFile());
    await ledger.begin("preview:old", "telegram:42", 1);
    await ledger.commit("preview:old", ["1"]);
    const stale = stalePreviews(ledger);
    // The restarted process re-runs the turn and shows a preview of its own before the channel starts.
    await ledger.begin("preview:new", "telegram:42", 2);
    await ledger.commit("preview:new", ["2"]);
    const edited: string[] = [];
    await discardStalePreviews(
      ledger,
      stale,
      async (target) => {
        edited.push(target.messageId);
      },
      silentLogger,
    );
    expect(edited).toEqual(["1"]);
    expect(ledger.get("preview:new")).toBeDefined();
  });
});
