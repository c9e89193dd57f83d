import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { PostgresStore } from "../../../src/adapters/postgres/postgres-store.js";
import type { StoredCommitment } from "../../../src/ports/store.js";
import { dueRoomCommitment } from "../../support/commitment-record.js";
import { type FakeOpenAIServer, startFakeOpenAI, toolCallStream } from "../../support/fake-openai-server.js";
import { usePostgresSchema } from "../../support/postgres.js";
import { startServe, useServeProcesses } from "../../support/serve-process.js";

// Three real `tiller serve --postgres` processes on one schema with the same six due commitments: each
// is reviewed once and sent once, cluster-wide (the heartbeat's claim), whichever process wins it.

const db = usePostgresSchema("servecommit");
const procs = useServeProcesses("tiller-serve-commit");
let fake: FakeOpenAIServer | undefined;
afterEach(async () => {
  await fake?.close();
});

const TEXT = "Do you still need the room?";

describe("tiller serve --postgres with commitments", () => {
  it("sends each due commitment once across three processes that all hold it", async () => {
    const ids = ["c1", "c2", "c3", "c4", "c5", "c6"];
    const seeder = await PostgresStore.connect({ url: db.url, schema: db.schema, poolSize: 1 });
    await seeder.saveCommitments(
      ids.map((id, i) => dueRoomCommitment(id, `web:s${i}`, Date.now()) as unknown as StoredCommitment),
    );
    await seeder.close();
    // One scripted review decision per commitment: a seventh model call would get a 500 and fail.
    fake = await startFakeOpenAI({
      replies: ids.map((_, i) => ({
        stream: toolCallStream([
          {
            id: `d${i}`,
            name: "commitment_decision",
            args: { classification: "still_pending_user", text: TEXT },
          },
        ]),
      })),
    });
    const config = join(procs.dir, "config.json");
    await writeFile(
      config,
      JSON.stringify({
        lanes: { main: 4 },
        commitments: { enabled: true, maxPerDay: 3, maxPerTick: 3 },
        heartbeat: { everyMs: 200 },
      }),
    );
    const started = await Promise.all(
      ["a", "b", "c"].map(async (name) => {
        const running = await startServe(procs.command, [
          ...["--store", join(procs.dir, name), "--config", config, "--schema", db.schema],
          ...["--postgres", db.url, "--model-url", fake!.url, "--model", "fake-model"],
        ]);
        procs.live.add(running);
        return running;
      }),
    );
    const deadline = Date.now() + 30_000;
    let rows: Array<{ id: string; status: string; claimed_by: string | null }> = [];
    while (Date.now() < deadline) {
      ({ rows } = await db.pool.query(
        `SELECT id, status, claimed_by FROM ${db.schema}.commitments ORDER BY id`,
      ));
      if (rows.every((row) => row.status === "sent")) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(rows.map((row) => [row.id, row.status, row.claimed_by])).toEqual(
      ids.map((id) => [id, "sent", null]),
    );
    // A few more heartbeats of every process: nothing is reviewed or sent again.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(fake.requests.filter((request) => request.path.endsWith("/chat/completions"))).toHaveLength(6);
    const { rows: said } = await db.pool.query<{ session_key: string; body: string }>(
      `SELECT session_key, body FROM ${db.schema}.transcript WHERE role = 'assistant' ORDER BY session_key`,
    );
    expect(said.map((row) => [row.session_key, JSON.parse(row.body).text])).toEqual(
      ids.map((_, i) => [`web:s${i}`, TEXT]),
    );
    for (const running of started) expect(running.proc.exitCode).toBeNull();
  }, 90_000);
});
