import { describe, expect, it } from "vitest";
import { JsonlStore } from "../../src/adapters/jsonl/jsonl-store.js";
import { commitmentsCommand, UsageError } from "../../src/cli/commitments.js";
import type { Commitment, CommitmentStatus } from "../../src/ports/commitment.js";
import { commitmentRecord } from "../support/commitment-record.js";
import { useTempDir } from "../support/temp-dir.js";

// `tiller commitments list|dismiss --store DIR [--json]` on a JSONL store.

const record = (id: string, session: string, status: CommitmentStatus, extra: Partial<Commitment> = {}) =>
  commitmentRecord({ id, session, status, reason: `reason ${id}`, createdAt: Number(id.slice(1)), ...extra });

describe("tiller commitments", () => {
  const temp = useTempDir("tiller-cli");

  async function seed() {
    const store = await JsonlStore.openDir({ dir: temp.path });
    await store.saveCommitments([
      record("c1", "a", "pending"),
      record("c2", "b", "pending"),
      record("c3", "a", "sent"),
      record("c4", "a", "pending", { sending: { at: 1, text: "x" } }),
    ]);
    await store.close();
  }

  it("lists, filtered by session and status, as JSON or lines", async () => {
    await seed();
    const all = JSON.parse(await commitmentsCommand(["list", "--store", temp.path, "--json"]));
    expect(all.map((c: { id: string }) => c.id)).toEqual(["c1", "c2", "c3", "c4"]);
    const some = JSON.parse(
      await commitmentsCommand([
        "list",
        "--session",
        "a",
        "--status",
        "pending",
        "--store",
        temp.path,
        "--json",
      ]),
    );
    expect(some.map((c: { id: string }) => c.id)).toEqual(["c1", "c4"]);
    expect(await commitmentsCommand(["list", "--store", temp.path])).toMatch(/^c1 {2}pending/);
  });

  it("dismisses pending ones durably, leaves ended ones and sends in flight alone, and says which", async () => {
    await seed();
    const results = JSON.parse(
      await commitmentsCommand(["dismiss", "c1", "c3", "c4", "nope", "--store", temp.path, "--json"]),
    );
    expect(results).toEqual([
      { id: "c1", status: "dismissed", changed: true, found: true },
      { id: "c3", status: "sent", changed: false, found: true },
      { id: "c4", status: "pending", changed: false, found: true },
      { id: "nope", status: "unknown", changed: false, found: false },
    ]);
    const store = await JsonlStore.openDir({ dir: temp.path });
    const stored = await store.loadCommitments();
    await store.close();
    expect(stored.find((c) => c.id === "c1")).toMatchObject({
      status: "dismissed",
      dismissedWhy: "operator",
    });
  });

  it("refuses bad arguments with a usage error naming what is wrong", async () => {
    await expect(commitmentsCommand(["list"])).rejects.toThrow(/--store DIR is required/);
    await expect(commitmentsCommand(["list", "--store", `${temp.path}/missing`])).rejects.toThrow(
      /not a directory/,
    );
    await expect(commitmentsCommand(["dismiss", "--store", temp.path])).rejects.toThrow(UsageError);
    await expect(commitmentsCommand(["list", "--status", "odd", "--store", temp.path])).rejects.toThrow(
      /--status: expected one of pending, sent, dismissed, expired/,
    );
    await expect(commitmentsCommand(["purge"])).rejects.toThrow(UsageError);
  });
});
