import { describe, expect, it } from "vitest";
import type { LoopbackChannel } from "../../../src/adapters/channels/loopback-channel.js";
import { ScriptedModel } from "../../../src/adapters/scripted-model.js";
import type { TillerEvent } from "../../../src/events.js";
import type { Channel } from "../../../src/ports/channel.js";
import type { ModelProvider } from "../../../src/ports/model.js";
import { useClusteredGateways } from "../../support/clustered-gateway.js";
import { deferred } from "../../support/deferred.js";
import { leaseRunsOut, STARVED, TAKER } from "../../support/lease-races.js";
import { usePostgresSchema } from "../../support/postgres.js";
import { eventually } from "../../support/serve-cluster.js";

// A session changes hands while its owner still works on it: the owner's lease ran out (a starved
// heartbeat, an outage) and another process took the session over. Both then mean to send the same
// answer, one resending the open intent or running the turn again, the other finishing its send. The
// user must see it once: the channel is called under a claim of the delivery, which one process holds
// at a time. Each race is set up by hand (the send or the model held, the lease ended by SQL), so the
// test needs no timing luck.

const db = usePostgresSchema("sendclaims");
const clusteredGateway = useClusteredGateways(db);
const REPLY = { reply: { text: "Answer to: {{latestUser}}" } };

/** A channel whose sends wait for `open` before they reach the loopback one. */
function heldChannel(open: Promise<void>, started: () => void) {
  return (web: LoopbackChannel): Channel => ({
    async send(message, options) {
      started();
      await open;
      return web.send(message, options);
    },
  });
}

function deliveries(webs: LoopbackChannel[], text: string) {
  return webs.flatMap((web) => web.sent.filter((m) => m.text === text));
}

function recorded(gateway: { subscribe(listener: (event: TillerEvent) => void): () => void }) {
  const events: TillerEvent[] = [];
  gateway.subscribe((event) => events.push(event));
  return events;
}

describe("a reply whose session changes hands mid-send", () => {
  it("is sent once when the old owner's send is in flight as the new owner resends its intent", async () => {
    const open = deferred<void>();
    const started = deferred<void>();
    const a = await clusteredGateway("claim-a1", {
      model: (clock) => new ScriptedModel([REPLY], clock),
      timing: STARVED,
      channel: heldChannel(open.promise, () => started.resolve()),
    });
    const b = await clusteredGateway("claim-b1", {
      model: (clock) => new ScriptedModel([REPLY], clock),
      timing: TAKER,
    });
    const bEvents = recorded(b.gateway);
    await a.gateway.start();
    await b.gateway.start();
    await a.gateway.receive({ session: "web:c1", channel: "web", text: "hello", id: "c1-m1" });
    // The intent is durable and the channel called: the send is in flight when the lease runs out.
    await started.promise;
    await leaseRunsOut(db, "web:c1");
    // The new owner finds the open intent and resends it, under the old owner's claim: it waits.
    await eventually("the new owner to resend the open intent", () =>
      bEvents.some(
        (e) =>
          (e.type === "delivery.claimedElsewhere" && e.answer === "waiting") || e.type === "delivery.resent",
      ),
    );
    expect(deliveries([a.web, b.web], "Answer to: hello")).toHaveLength(0);
    open.resolve();
    // The old owner's send lands; the new owner learns it and records the reply as delivered.
    await eventually("the reply recorded as delivered by the new owner", () =>
      bEvents.some((e) => e.type === "final.delivered" && e.session === "web:c1"),
    );
    expect(deliveries([a.web, b.web], "Answer to: hello")).toHaveLength(1);
    expect(bEvents).toContainEqual(
      expect.objectContaining({ type: "delivery.claimedElsewhere", answer: "sent" }),
    );
    expect(a.web.sent).toHaveLength(1);
    expect(b.web.sent).toHaveLength(0);
  }, 30_000);

  it("is sent once when the old owner finishes the turn after the new owner ran it again", async () => {
    const release = deferred<void>();
    const called = deferred<void>();
    const gated = (inner: ModelProvider): ModelProvider => ({
      async complete(request) {
        called.resolve();
        await release.promise;
        return inner.complete(request);
      },
    });
    const a = await clusteredGateway("claim-a2", {
      model: (clock) => gated(new ScriptedModel([REPLY], clock)),
      timing: STARVED,
    });
    const b = await clusteredGateway("claim-b2", {
      model: (clock) => new ScriptedModel([REPLY], clock),
      timing: TAKER,
    });
    const aEvents = recorded(a.gateway);
    await a.gateway.start();
    await b.gateway.start();
    await a.gateway.receive({ session: "web:c2", channel: "web", text: "again", id: "c2-m1" });
    // The old owner's model call hangs (a starved process) and its lease runs out.
    await called.promise;
    await leaseRunsOut(db, "web:c2");
    // The new owner runs the cut-off turn again and answers it.
    await eventually("the new owner to answer", () => b.web.sent.length === 1);
    // The old owner wakes and finishes the same turn: the same answer, under the same deliveryId,
    // already sent from the other process.
    release.resolve();
    await eventually("the old owner to end its turn", () =>
      aEvents.some((e) => e.type === "final.delivered" && e.session === "web:c2"),
    );
    expect(deliveries([a.web, b.web], "Answer to: again")).toHaveLength(1);
    expect(a.web.sent).toHaveLength(0);
    expect(aEvents).toContainEqual(
      expect.objectContaining({ type: "delivery.claimedElsewhere", answer: "sent" }),
    );
  }, 30_000);
});
