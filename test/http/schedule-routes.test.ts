import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { WebChannel } from "../../src/adapters/channels/web-channel.js";
import { ScriptedModel } from "../../src/adapters/scripted-model.js";
import { SimulatedClock } from "../../src/adapters/simulated-clock.js";
import { schedulesCommand } from "../../src/cli/schedules.js";
import { createGateway } from "../../src/gateway/create-gateway.js";
import { createHttpServer } from "../../src/http/create-http-server.js";
import type { ScheduleSummary } from "../../src/http/schedule-routes.js";
import { silentLogger } from "../../src/logger.js";
import { MemoryDeliveryLog } from "../../src/ports/delivery-log.js";

// GET /v1/schedules on the real server; the gateway runs on the simulated clock, so slots come due
// when the test says.

const MINUTE = 60_000;
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

async function serve(token?: string) {
  const clock = new SimulatedClock();
  const web = new WebChannel(new MemoryDeliveryLog());
  const gateway = createGateway({
    config: {
      schedules: [
        { id: "digest", session: "web:ops", cron: "*/30 * * * *", timezone: "Europe/Paris", text: "digest" },
        { id: "ping", session: "web:ops", everyMs: MINUTE, text: "ping", catchUp: false },
        { id: "beat", session: "web:other", at: 90 * MINUTE, text: "once" },
      ],
    },
    model: new ScriptedModel([{ reply: { delayMs: 2 * MINUTE, text: "done: {{latestUser}}" } }], clock),
    channels: { web },
    clock,
    logger: silentLogger,
  });
  const http = createHttpServer({ gateway, web, ...(token ? { token } : {}) });
  await gateway.start();
  http.markReady();
  await new Promise<void>((resolve) => http.server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(http.server.address() as AddressInfo).port}`;
  closers.push(async () => {
    await http.close();
    // Stopping waits for the turns in flight, which finish on the simulated clock.
    const stopped = gateway.stop();
    await clock.runUntilIdle({ until: clock.now() + 10 * MINUTE });
    await stopped;
  });
  const get = async (path: string, headers: Record<string, string> = {}) => {
    const response = await fetch(`${url}${path}`, { headers });
    return {
      status: response.status,
      body: (await response.json()) as {
        schedules: ScheduleSummary[];
        error?: { code: string; message: string; field?: string };
      },
    };
  };
  return { clock, get, url };
}

describe("GET /v1/schedules", () => {
  it("lists each schedule's timing, next run and last run with its outcome", async () => {
    const { clock, get } = await serve();
    expect((await get("/v1/schedules")).body.schedules).toEqual([
      {
        id: "digest",
        session: "web:ops",
        kind: "cron",
        expression: "*/30 * * * *",
        timezone: "Europe/Paris",
        catchUp: true,
        nextRunAt: 30 * MINUTE,
        lastRun: null,
      },
      {
        id: "ping",
        session: "web:ops",
        kind: "everyMs",
        expression: MINUTE,
        timezone: null,
        catchUp: false,
        nextRunAt: MINUTE,
        lastRun: null,
      },
      {
        id: "beat",
        session: "web:other",
        kind: "at",
        expression: 90 * MINUTE,
        timezone: null,
        catchUp: true,
        nextRunAt: 90 * MINUTE,
        lastRun: null,
      },
    ]);
    // ping's first turn takes two minutes: its second slot finds the session busy and waits its turn.
    await clock.runUntilIdle({ until: 2 * MINUTE + 1 });
    const ping = (await get("/v1/schedules")).body.schedules[1];
    expect(ping).toMatchObject({ nextRunAt: 3 * MINUTE, lastRun: { at: 2 * MINUTE, outcome: "queued" } });
  });

  it("filters by session, refuses a bad key with the usual error body, and needs the token when set", async () => {
    const { get } = await serve("s3cret");
    expect((await get("/v1/schedules")).status).toBe(401);
    const auth = { authorization: "Bearer s3cret" };
    const other = await get("/v1/schedules?session=web:other", auth);
    expect(other.body.schedules.map((s) => s.id)).toEqual(["beat"]);
    const bad = await get("/v1/schedules?session=", auth);
    expect(bad.status).toBe(400);
    expect(bad.body).toEqual({
      error: { code: "SESSION_KEY_INVALID", message: expect.stringContaining("session"), field: "session" },
    });
  });

  it("tiller schedules list prints them, with the token from TILLER_TOKEN", async () => {
    const { clock, url } = await serve("s3cret");
    await clock.runUntilIdle({ until: MINUTE + 1 });
    const out = await schedulesCommand(["list", "--url", url], { TILLER_TOKEN: "s3cret" });
    expect(out.split("\n")).toEqual([
      'digest  web:ops  cron "*/30 * * * *" Europe/Paris  next 1970-01-01T00:30:00.000Z  never ran',
      "ping  web:ops  every 60000 ms  catchUp: false  next 1970-01-01T00:02:00.000Z  last 1970-01-01T00:01:00.000Z started",
      "beat  web:other  at 5400000  next 1970-01-01T01:30:00.000Z  never ran",
    ]);
    const json = JSON.parse(
      await schedulesCommand(["list", "--url", url, "--session", "web:other", "--json"], {
        TILLER_TOKEN: "s3cret",
      }),
    );
    expect(json).toEqual([expect.objectContaining({ id: "beat", kind: "at" })]);
    await expect(schedulesCommand(["list", "--url", url], {})).rejects.toThrow(/401 expected Authorization/);
  });
});
