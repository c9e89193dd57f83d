import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { rawRequest } from "../support/raw-http.js";
import { runTiller, startServe, useServeProcesses } from "../support/serve-process.js";

// `tiller serve --request-timeout`: a client that sends nothing, or its request too slowly, is cut.

const procs = useServeProcesses("tiller-timeout");

describe("tiller serve --request-timeout", { timeout: 60_000 }, () => {
  it("cuts a silent client and a slow one with 408 and the JSON body; a normal request is served", async () => {
    const running = await startServe(procs.command, [
      "--store",
      join(procs.dir, "s"),
      "--request-timeout",
      "400",
    ]);
    procs.live.add(running);
    const silent = await rawRequest(running.url, [], { waitMs: 20_000 });
    expect(silent.closed).toBe(true);
    // Cut by the 400 ms timeout, well before the 30 s default; a loaded machine may be seconds late.
    expect(silent.elapsedMs).toBeLessThan(10_000);
    const slow = await rawRequest(running.url, [..."GET /healthz HTTP/1.1\r\nhost: x\r\n"], {
      gapMs: 50,
      waitMs: 20_000,
    });
    expect(slow.status).toBe(408);
    expect(slow.body.error).toMatchObject({ code: "REQUEST_TIMEOUT", field: "request" });
    expect((await fetch(`${running.url}/healthz`)).status).toBe(200);
  });

  it("refuses a timeout of 0 with one line and exit status 2", async () => {
    const running = runTiller(procs.command, [
      "serve",
      "--store",
      join(procs.dir, "z"),
      "--request-timeout",
      "0",
    ]);
    procs.live.add(running);
    expect((await running.exited).code).toBe(2);
    expect(running.stderr()).toContain("--request-timeout");
  });
});
