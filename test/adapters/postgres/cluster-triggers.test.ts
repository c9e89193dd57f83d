import { describe, expect, it } from "vitest";
import { ScriptedModel } from "../../../src/adapters/scripted-model.js";
import type { ModelRequest } from "../../../src/ports/model.js";
import type { ToolDefinition } from "../../../src/ports/tool.js";
import { useClusteredGateways } from "../../support/clustered-gateway.js";
import { usePostgresSchema } from "../../support/postgres.js";
import { eventually } from "../../support/serve-cluster.js";

// Turns nobody typed on several processes: a triggered turn is a row of the session's inbox, so it
// runs where the session is owned, a steer sent to any process reaches it there, and one id fired by
// every process (a schedule's slot) runs once.

const db = usePostgresSchema("clustertriggers");
const FAST = { leaseMs: 2000, heartbeatMs: 500, pollMs: 100, ackWaitMs: 3000 };
const clusteredGateway = useClusteredGateways(db);

/** A tool that takes real time: the turn is mid-tool when the steer arrives. */
const slowTool: ToolDefinition = {
  name: "slow_report",
  cancellable: false,
  async execute() {
    await new Promise((resolve) => setTimeout(resolve, 1500));
    return "the report";
  },
};

async function processOn(processId: string) {
  const calls: ModelRequest[] = [];
  const { gateway, web } = await clusteredGateway(processId, {
    model: (clock) => {
      const scripted = new ScriptedModel(
        [
          {
            when: { call: 1, latestUser: "prepare the report" },
            reply: { toolCalls: [{ name: "slow_report" }] },
          },
          { reply: { text: "Re: {{latestUser}}" } },
        ],
        clock,
      );
      return {
        complete(request) {
          calls.push(request);
          return scripted.complete(request);
        },
      };
    },
    tools: [slowTool],
    timing: FAST,
  });
  await gateway.start();
  return { gateway, web, calls };
}

const texts = (request: ModelRequest) => JSON.stringify(request.context);

describe("turns nobody typed on a cluster", () => {
  it("runs a slot that every process fires once", async () => {
    const a = await processOn("ta");
    const b = await processOn("tb");
    const slot = { session: "web:digest", trigger: "cron" as const, text: "the digest", id: "schedule:d:1" };
    const acks = await Promise.all([a.gateway.trigger(slot), b.gateway.trigger(slot)]);
    expect(acks.map((ack) => ack.disposition).sort()).toEqual(["duplicate", "started"]);
    await eventually("the digest to be sent", () =>
      [...a.web.sent, ...b.web.sent].some((m) => m.text === "Re: the digest"),
    );
    expect([...a.calls, ...b.calls].filter((call) => texts(call).includes("the digest"))).toHaveLength(1);
  }, 30_000);

  it("steers a message sent to another process into a cron turn running on the owner", async () => {
    const a = await processOn("sa");
    const b = await processOn("sb");
    const cron = { session: "web:ops", trigger: "cron" as const, text: "prepare the report", id: "cron:1" };
    expect(await a.gateway.trigger(cron)).toMatchObject({ disposition: "started", lane: "cron" });
    await eventually("the tool to run on A", () => a.calls.length === 1);
    const ack = await b.gateway.receive({
      session: "web:ops",
      channel: "web",
      text: "also mention pineapples",
      id: "u1",
      mode: "steer",
    });
    expect(ack).toMatchObject({ disposition: "steered", owner: "sa" });
    await eventually("A's reply", () => a.web.sent.find((m) => m.text.startsWith("Re:")));
    // A's next model call saw the steer; nothing ran on B.
    expect(texts(a.calls[1]!)).toContain("also mention pineapples");
    expect(a.web.sent.map((m) => m.text)).toContain("Re: also mention pineapples");
    expect(b.calls).toEqual([]);
  }, 30_000);
});
