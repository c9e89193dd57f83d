import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { PostgresStore } from "../../../src/adapters/postgres/postgres-store.js";
import type { StoredCommitment } from "../../../src/ports/store.js";
import { dueRoomCommitment } from "../../support/commitment-record.js";
import {
  type FakeOpenAIServer,
  gate,
  startFakeOpenAI,
  toolCallStream,
} from "../../support/fake-openai-server.js";
import { usePrivatePostgres } from "../../support/private-postgres.js";
import { eventually } from "../../support/serve-cluster.js";
import { startServe, useServeProcesses } from "../../support/serve-process.js";

// The database stopped (`-m immediate`) while two real `tiller serve --postgres` processes send due
// follow-ups: the stop comes as the first check-in is stored, so the others are between their intent,
// the channel (the `web` channel's deliveries live in the same database) and their outcome. Once it is
// back every follow-up is sent exactly once, with one check-in record in its session's transcript, and
// no process exits. On a private server (never the machine's shared one).

const db = usePrivatePostgres();
const procs = useServeProcesses("tiller-commit-outage");
let fake: FakeOpenAIServer | undefined;
afterEach(async () => {
  await fake?.close();
});

const TEXT = "Do you still need the room?";
const IDS = ["c1", "c2", "c3", "c4", "c5", "c6"];

const decision = (i: number) =>
  toolCallStream([
    { id: `d${i}`, name: "commitment_decision", args: { classification: "still_pending_user", text: TEXT } },
  ]);

describe("tiller serve --postgres: the database stopped mid-commitment-send", () => {
  it("sends every due follow-up exactly once once the database is back", async () => {
    const seeder = await PostgresStore.connect({ url: db.url, schema: db.schema, poolSize: 1 });
    await seeder.saveCommitments(
      IDS.map((id, i) => dueRoomCommitment(id, `web:c${i}`, Date.now()) as unknown as StoredCommitment),
    );
    await seeder.close();
    // Every first review waits for the gate, so the sends start together; reviews tried again after
    // the outage answer at once.
    const held = gate();
    fake = await startFakeOpenAI({
      replies: [
        ...IDS.map((_, i) => ({ stream: [{ pause: held.promise }, ...decision(i)] })),
        ...IDS.flatMap((_, i) => [{ stream: decision(10 + i) }, { stream: decision(20 + i) }]),
      ],
    });
    const config = join(procs.dir, "config.json");
    await writeFile(
      config,
      JSON.stringify({
        lanes: { main: 8 },
        commitments: { enabled: true, maxPerDay: 3, maxPerTick: 6 },
        heartbeat: { everyMs: 200 },
      }),
    );
    const started = await Promise.all(
      ["a", "b"].map(async (name) => {
        const running = await startServe(procs.command, [
          ...["--store", join(procs.dir, name), "--config", config, "--schema", db.schema],
          ...["--postgres", db.url, "--model-url", fake!.url, "--model", "fake-model", "--lease", "3000"],
        ]);
        procs.live.add(running);
        return running;
      }),
    );
    await fake.waitForRequests(IDS.length);
    const commitmentsDelivered = async () =>
      (
        await db.pool.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM ${db.schema}.web_deliveries WHERE kind = 'commitment'`,
        )
      ).rows[0]!.n;
    held.open();
    await eventually("a first check-in stored", async () => (await commitmentsDelivered()) > 0, 30_000);
    await db.server.halt();
    await db.server.restart();

    // Read while the database may still be coming back: an error counts as "not yet".
    const read = async <R extends object>(sql: string): Promise<R[]> =>
      (await db.pool.query<R>(sql).catch(() => ({ rows: [] as R[] }))).rows;
    const checkIns = () =>
      read<{ session_key: string; body: string }>(
        `SELECT session_key, body FROM ${db.schema}.transcript WHERE role = 'assistant' ORDER BY session_key, seq`,
      );
    // The outcome is stored before the check-in's record: wait for both.
    await eventually(
      "every follow-up sent and recorded",
      async () =>
        (await read<{ status: string }>(`SELECT status FROM ${db.schema}.commitments`)).filter(
          (r) => r.status === "sent",
        ).length === IDS.length && (await checkIns()).length >= IDS.length,
      60_000,
    );
    // Exactly once each: one delivery per session, one check-in record per session's transcript.
    const { rows: sent } = await db.pool.query<{ session_key: string; n: number }>(
      `SELECT session_key, count(*)::int AS n FROM ${db.schema}.web_deliveries
        WHERE kind = 'commitment' GROUP BY session_key ORDER BY session_key`,
    );
    expect(sent).toEqual(IDS.map((_, i) => ({ session_key: `web:c${i}`, n: 1 })));
    expect((await checkIns()).map((row) => [row.session_key, JSON.parse(row.body).text])).toEqual(
      IDS.map((_, i) => [`web:c${i}`, TEXT]),
    );
    for (const running of started) expect(running.proc.exitCode).toBeNull();
  }, 120_000);
});
