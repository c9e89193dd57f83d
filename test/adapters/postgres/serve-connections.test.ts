import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEchoModelServer } from "../../support/echo-model-server.js";
import type { FakeOpenAIServer } from "../../support/fake-openai-server.js";
import { usePrivatePostgres } from "../../support/private-postgres.js";
import { type ClusterMember, eventually, postRaw, startCluster } from "../../support/serve-cluster.js";
import { useServeProcesses } from "../../support/serve-process.js";

// Another client takes every connection the server has left (`max_connections` exhausted) while two
// `tiller serve --postgres` processes take messages: every POST is acknowledged or refused with 503
// STORE_UNAVAILABLE (never a 500), and once the connections are free every acknowledged message is
// answered exactly once and every session answers again.

const db = usePrivatePostgres({ max_connections: "40" });
const procs = useServeProcesses("tiller-maxconn");
let model: FakeOpenAIServer;
beforeAll(async () => {
  model = await startEchoModelServer({ delayMs: 100 });
});
afterAll(async () => {
  await model.close();
});

const SESSIONS = 12;

async function replies() {
  for (;;) {
    try {
      const { rows } = await db.pool.query<{ session_key: string; kind: string; text: string }>(
        `SELECT session_key, kind, text FROM ${db.schema}.web_deliveries WHERE kind IN ('reply', 'recovery', 'notice')`,
      );
      return rows;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
}

describe("tiller serve --postgres with max_connections exhausted", () => {
  it("refuses with 503 or acknowledges, and answers every acknowledged message once when connections free up", async () => {
    const members = await startCluster(procs, db, ["a", "b"], {
      config: { lanes: { main: 8 } },
      args: ["--model-url", model.url, "--model", "echo"],
    });
    // Take every connection the server has left.
    const held: pg.Client[] = [];
    for (;;) {
      const client = new pg.Client({ connectionString: db.url });
      client.on("error", () => {});
      try {
        await client.connect();
        held.push(client);
      } catch {
        break;
      }
    }
    expect(held.length).toBeGreaterThan(0);

    const acked: Array<{ session: string; text: string }> = [];
    const statuses: number[] = [];
    const post = async (member: ClusterMember, s: number, m: number) => {
      const text = `q${s}-${m}`;
      const result = await postRaw(member, `web:s${s}`, text, `s${s}-m${m}`);
      statuses.push(result.status);
      if (result.status === 200) acked.push({ session: `web:s${s}`, text });
      else expect(result.body.error?.code).toBe("STORE_UNAVAILABLE");
    };
    const posts = [0, 1].flatMap((m) =>
      [...Array(SESSIONS).keys()].map((s) => post(members[(s + m) % 2]!, s, m)),
    );
    // The connections come back while the POSTs are in flight.
    await new Promise((resolve) => setTimeout(resolve, 2000));
    await Promise.all(held.map((client) => client.end().catch(() => undefined)));
    await Promise.all(posts);
    expect(statuses.filter((status) => status !== 200 && status !== 503)).toEqual([]);
    const refused = statuses.filter((status) => status === 503).length;
    console.info(
      `max_connections exhausted: ${held.length} connections held, ${refused} of ${statuses.length} POSTs 503`,
    );

    await eventually(
      "every acknowledged message answered",
      async () => {
        const rows = await replies();
        return acked.every(({ session, text }) =>
          rows.some(
            (r) => r.session_key === session && (r.text === `Answer to: ${text}` || r.kind === "notice"),
          ),
        );
      },
      30_000,
    );
    const texts = (await replies()).map((r) => `${r.session_key} ${r.kind} ${r.text}`);
    expect(texts.length - new Set(texts).size).toBe(0);
    // No session blocked.
    await Promise.all([...Array(SESSIONS).keys()].map((s) => post(members[s % 2]!, s, 9)));
    await eventually(
      "every session answers again",
      async () => {
        const rows = await replies();
        return [...Array(SESSIONS).keys()].every((s) =>
          rows.some((r) => r.session_key === `web:s${s}` && r.text === `Answer to: q${s}-9`),
        );
      },
      30_000,
    );
    for (const member of members) expect(member.proc.exitCode).toBeNull();
  }, 120_000);
});
