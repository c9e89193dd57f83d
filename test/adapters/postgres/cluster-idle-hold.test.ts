import { describe, expect, it } from "vitest";
import { ScriptedModel } from "../../../src/adapters/scripted-model.js";
import type { TillerEvent } from "../../../src/events.js";
import { useClusteredGateways } from "../../support/clustered-gateway.js";
import { usePostgresSchema } from "../../support/postgres.js";
import { eventually } from "../../support/serve-cluster.js";

// A session that went idle stays its process's for `idleHoldMs`: a follow-up soon after a turn is
// applied to the live state there (no release, no reading the session back), a message sent to another
// process meanwhile is forwarded to it, and once the hold runs out the session is given up.

const db = usePostgresSchema("idlehold");
const FAST = { leaseMs: 2000, heartbeatMs: 500, pollMs: 100, ackWaitMs: 2000 };
const clusteredGateway = useClusteredGateways(db);

const model = (clock: ConstructorParameters<typeof ScriptedModel>[1]) =>
  new ScriptedModel([{ reply: { text: "Re: {{latestUser}}" } }], clock);

async function member(processId: string, idleHoldMs: number) {
  const member = await clusteredGateway(processId, { model, timing: { ...FAST, idleHoldMs } });
  const events: TillerEvent[] = [];
  member.gateway.subscribe((event) => events.push(event));
  await member.gateway.start();
  return { ...member, events };
}

const say = (session: string, id: string) => ({ session, channel: "web", text: id, id });

describe("an idle session held by its process", () => {
  it("takes a follow-up without giving the session up, and is reached from another process", async () => {
    const a = await member("ha", 60_000);
    const b = await member("hb", 60_000);
    await a.gateway.receive(say("web:h", "m1"));
    await eventually("m1 answered", () => a.web.sent.length === 1);
    await eventually("the turn to end", () => a.events.some((e) => e.type === "turn.ended"));
    expect((await a.cluster.owners(["web:h"])).get("web:h")).toBe("ha");

    const adoptedBefore = a.events.filter((e) => e.type === "session.adopted").length;
    await a.gateway.receive(say("web:h", "m2"));
    await eventually("m2 answered", () => a.web.sent.length === 2);
    // Still this process's live session: nothing was read back from the store for it.
    expect(a.events.filter((e) => e.type === "session.adopted")).toHaveLength(adoptedBefore);

    // Sent to the other process: forwarded to the owner, which answers it once.
    const ack = await b.gateway.receive(say("web:h", "m3"));
    expect(ack.disposition).not.toBe("rejected");
    expect(b.events).toContainEqual(expect.objectContaining({ type: "message.forwarded", owner: "ha" }));
    await eventually("m3 answered", () => a.web.sent.length === 3);
    expect(a.web.sent.map((m) => m.text)).toEqual(["Re: m1", "Re: m2", "Re: m3"]);
    expect(b.web.sent).toEqual([]);
  }, 30_000);

  it("is given up once the hold runs out, and the next receiver takes it with its history", async () => {
    const a = await member("ra", 300);
    const b = await member("rb", 300);
    await a.gateway.receive(say("web:r", "m1"));
    await eventually("m1 answered", () => a.web.sent.length === 1);
    await eventually("the hold to run out", async () => (await a.cluster.owners(["web:r"])).size === 0);

    await b.gateway.receive(say("web:r", "m2"));
    await eventually("m2 answered where it was received", () => b.web.sent.length === 1);
    expect(b.web.sent[0]!.text).toBe("Re: m2");
    const { rows } = await db.pool.query<{ body: string }>(
      `SELECT body FROM ${db.schema}.transcript WHERE session_key = 'web:r' ORDER BY seq`,
    );
    const users = rows.map((row) => JSON.parse(row.body)).filter((r) => r.role === "user");
    expect(users.map((r) => r.text)).toEqual(["m1", "m2"]);
  }, 30_000);

  it("is given up at once with no hold", async () => {
    const a = await member("za", 0);
    await a.gateway.receive(say("web:z", "m1"));
    await eventually("m1 answered", () => a.web.sent.length === 1);
    await eventually(
      "the session to be given up",
      async () => (await a.cluster.owners(["web:z"])).size === 0,
    );
  }, 30_000);
});
