import { appendFile, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { COMMITMENTS_FILE } from "../../../src/adapters/jsonl/commitment-log.js";
import { JsonlStore } from "../../../src/adapters/jsonl/jsonl-store.js";
import { TillerError } from "../../../src/errors.js";
import type { CommitmentStatus } from "../../../src/ports/commitment.js";
import { commitmentRecord } from "../../support/commitment-record.js";
import { useTempDir } from "../../support/temp-dir.js";

// The JSONL store's commitments file after a crash: a torn last line is cut away and every whole one
// kept; damage followed by whole lines refuses to load (STORE_CORRUPT) and changes nothing.

describe("commitments.log", () => {
  const temp = useTempDir("tiller-commitment-log");

  async function write(records: Array<{ id: string; status: CommitmentStatus }>) {
    const store = await JsonlStore.openDir({ dir: temp.path });
    await store.saveCommitments(records.map(commitmentRecord));
    await store.close();
  }

  it("cuts a torn last line (a crash mid-append) and keeps every whole version", async () => {
    await write([
      { id: "c1", status: "pending" },
      { id: "c1", status: "sent" },
    ]);
    const file = join(temp.path, COMMITMENTS_FILE);
    await appendFile(file, '{"id":"c2","status":"pen');
    const store = await JsonlStore.openDir({ dir: temp.path });
    expect(await store.loadCommitments()).toEqual([commitmentRecord({ id: "c1", status: "sent" })]);
    await store.saveCommitments([commitmentRecord({ id: "c3", status: "pending" })]);
    await store.close();
    const again = await JsonlStore.openDir({ dir: temp.path });
    expect((await again.loadCommitments()).map((r) => r.id)).toEqual(["c1", "c3"]);
    await again.close();
  });

  it("refuses a damaged middle line, naming it, and leaves the file as it was", async () => {
    await write([
      { id: "c1", status: "pending" },
      { id: "c2", status: "pending" },
    ]);
    const file = join(temp.path, COMMITMENTS_FILE);
    const text = await readFile(file, "utf8");
    const damaged = text.replace('"c1","status":"pending"', '"c1","status":"pendinX"');
    await writeFile(file, damaged);
    const store = await JsonlStore.openDir({ dir: temp.path });
    const error = await store.loadCommitments().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(TillerError);
    expect(error).toMatchObject({ code: "STORE_CORRUPT", message: expect.stringContaining("line 1") });
    await store.close();
    expect(await readFile(file, "utf8")).toBe(damaged);
  });
});
