import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { createMachine } from "xstate";
import { LoopbackChannel } from "../../src/adapters/channels/loopback-channel.js";
import { ScriptedModel } from "../../src/adapters/scripted-model.js";
import { SimulatedClock } from "../../src/adapters/simulated-clock.js";
import { createGateway } from "../../src/gateway/create-gateway.js";
import { operatorRoutes } from "../../src/http/operator-routes.js";
import { silentLogger } from "../../src/logger.js";
import { runMachine } from "../../src/machines/run.machine.js";
import { machineShape } from "../../src/viz/machine-shape.js";

const stops: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const stop of stops.splice(0)) await stop();
});

async function serve(config: object = { lanes: { main: 3 } }) {
  const clock = new SimulatedClock();
  const gateway = createGateway({
    model: new ScriptedModel([{ reply: { delayMs: 1000, text: "Re: {{latestUser}}" } }], clock),
    channels: { web: new LoopbackChannel({ now: () => clock.now() }) },
    clock,
    logger: silentLogger,
    config,
  });
  await gateway.start();
  const routes = operatorRoutes(gateway);
  // Only the operator routes, on a real socket: the full server mounts them the same way.
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://localhost");
    const route = routes.find((r) => r.method === req.method && r.path === url.pathname);
    if (!route) return void res.writeHead(404).end();
    void route.handler({ req, res, url, params: {} });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  stops.push(async () => {
    await new Promise((resolve) => server.close(resolve));
    // Let the simulated turns end, or stop() would wait for them forever.
    await clock.runUntilIdle({ isBusy: () => gateway.isBusy });
    await gateway.stop();
  });
  return { gateway, clock, base };
}

describe("operator page endpoints", () => {
  it("GET /v1/sessions lists every session with its live state, run, queue and lane", async () => {
    const { gateway, base } = await serve();
    await gateway.receive({ session: "web:a", channel: "web", id: "m1", text: "first" });
    await gateway.receive({ session: "web:a", channel: "web", id: "m2", text: "after", mode: "followup" });
    await gateway.receive({ session: "web:b", channel: "web", id: "m3", text: "other" });
    const body = (await (await fetch(`${base}/v1/sessions`)).json()) as {
      sessions: Array<Record<string, unknown>>;
    };
    const a = body.sessions.find((s) => s.key === "web:a")!;
    expect(a).toMatchObject({
      state: "turn.running",
      run: { state: "streaming" },
      queue: [{ kind: "followup", messageIds: ["m2"] }],
    });
    expect(body.sessions.map((s) => s.key).sort()).toEqual(["web:a", "web:b"]);
  });

  it("GET /v1/machines serves configs that createMachine loads into the real machines", async () => {
    const { base } = await serve();
    const response = await fetch(`${base}/v1/machines`);
    expect(response.headers.get("content-type")).toMatch(/application\/json/);
    const { machines } = (await response.json()) as { machines: Record<string, unknown> };
    expect(Object.keys(machines).sort()).toEqual(["laneEntry", "laneScheduler", "run", "session"]);
    const loaded = createMachine(machines.run as Parameters<typeof createMachine>[0]);
    expect(machineShape(loaded)).toEqual(machineShape(runMachine));
  });

  it("GET /v1/lanes is the lane scheduler's snapshot: active, queued and capacity per lane", async () => {
    const { gateway, base } = await serve();
    await gateway.receive({ session: "web:a", channel: "web", id: "m1", text: "one" });
    const { lanes } = (await (await fetch(`${base}/v1/lanes`)).json()) as {
      lanes: Record<string, { active: number; queued: number; capacity: number }>;
    };
    expect(lanes.main).toEqual({ active: 1, queued: 0, capacity: 3 });
  });

  it("GET /v1/lanes shows each capacity group: its lanes, running tasks and budget", async () => {
    const { gateway, base } = await serve({
      lanes: { main: 3 },
      laneGroups: { users: { capacity: 1, lanes: ["main"] } },
    });
    await gateway.receive({ session: "web:a", channel: "web", id: "m1", text: "one" });
    await gateway.receive({ session: "web:b", channel: "web", id: "m2", text: "two" });
    const body = (await (await fetch(`${base}/v1/lanes`)).json()) as {
      lanes: Record<string, { active: number; queued: number; capacity: number }>;
      groups: Record<string, { active: number; queued: number; capacity: number; lanes: string[] }>;
    };
    // main has three slots, but its group allows one turn at a time: the second waits.
    expect(body.lanes.main).toEqual({ active: 1, queued: 1, capacity: 3 });
    expect(body.groups).toEqual({ users: { active: 1, queued: 1, capacity: 1, lanes: ["main"] } });
  });
});
