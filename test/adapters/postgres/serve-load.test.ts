import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEchoModelServer } from "../../support/echo-model-server.js";
import type { FakeOpenAIServer } from "../../support/fake-openai-server.js";
import { usePrivatePostgres } from "../../support/private-postgres.js";
import { type ClusterMember, startCluster } from "../../support/serve-cluster.js";
import { useServeProcesses } from "../../support/serve-process.js";

// Three real `tiller serve --postgres` processes under load with no fault, a zero-latency model:
// every POST is acknowledged (no 500), every message is answered exactly once.

// A private server whose max_connections (70) the three processes must share, not the machine's shared one,
// whose other clients would make the count of free connections a matter of luck.
const db = usePrivatePostgres({ max_connections: "70" });
const procs = useServeProcesses("tiller-serveload");
let model: FakeOpenAIServer;
beforeAll(async () => {
  model = await startEchoModelServer();
});
afterAll(async () => {
  await model.close();
});

const SESSIONS = 60;
const MESSAGES = 5;

async function postOnce(member: ClusterMember, session: string, text: string, id: string) {
  const response = await fetch(`${member.url}/v1/sessions/${encodeURIComponent(session)}/messages`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ text, id, mode: "followup" }),
  });
  return { status: response.status, body: await response.text() };
}

describe("three tiller serve --postgres processes under load", () => {
  it("acknowledge every POST and answer every message exactly once", async () => {
    const members = await startCluster(procs, db, ["a", "b", "c"], {
      config: { lanes: { main: 16 } },
      args: ["--model-url", model.url, "--model", "echo"],
    });
    const refused: string[] = [];
    const posts: Array<Promise<void>> = [];
    let n = 0;
    for (let m = 0; m < MESSAGES; m++)
      for (let s = 0; s < SESSIONS; s++) {
        const member = members[n++ % members.length]!;
        posts.push(
          postOnce(member, `web:s${s}`, `q${s}-${m}`, `s${s}-m${m}`).then(({ status, body }) => {
            if (status !== 200) refused.push(`${status} ${body}`);
          }),
        );
      }
    await Promise.all(posts);
    expect(refused).toEqual([]);
    const answers = async () => {
      for (;;) {
        try {
          const { rows } = await db.pool.query<{ text: string }>(
            `SELECT text FROM ${db.schema}.web_deliveries WHERE kind IN ('reply', 'recovery')`,
          );
          return rows.map((r) => r.text);
        } catch {
          await new Promise((resolve) => setTimeout(resolve, 200));
        }
      }
    };
    // Event-driven: poll until every answer is there, or until nothing new came for 30 s (the overall
    // deadline only stops a run that creeps on: a loaded 2-core machine took 95 s for the whole test).
    let texts = await answers();
    let lastChange = Date.now();
    const deadline = Date.now() + 300_000;
    while (texts.length < SESSIONS * MESSAGES && Date.now() < deadline && Date.now() - lastChange < 30_000) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      const next = await answers();
      if (next.length !== texts.length) lastChange = Date.now();
      texts = next;
    }
    const missing: string[] = [];
    for (let s = 0; s < SESSIONS; s++)
      for (let m = 0; m < MESSAGES; m++)
        if (!texts.includes(`Answer to: q${s}-${m}`)) missing.push(`s${s}-m${m}`);
    expect({ missing, twice: texts.length - new Set(texts).size }).toEqual({ missing: [], twice: 0 });
  }, 400_000);
});
