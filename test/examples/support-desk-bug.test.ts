import { describe, expect, it } from "vitest";
import config from "../../examples/support-desk/config.json" with { type: "json" };
import { DeskChannel } from "../../examples/support-desk/desk-channel.mjs";
import buggyTools from "../../examples/support-desk/tools-with-bug.mjs";
import type { Channel } from "../../src/ports/channel.js";
import { machinePaths } from "../../src/testing/machine-paths.js";
import { type PathTestContext, testPaths } from "../../src/testing/test-paths.js";

// The example's planted bug: lookup_order says it can be cancelled but ignores its signal. The desk's
// generated suite must catch it, on the paths that stop the tool, with a sentence a developer can act on.
describe("the support desk's suite against its planted bug", () => {
  it("fails the paths that stop lookup_order, saying it ignores its abort signal", async () => {
    const tests: Array<{ name: string; body: (context: PathTestContext) => Promise<void> }> = [];
    testPaths((name, body) => tests.push({ name, body }), machinePaths("run", { config, kind: "simple" }), {
      config,
      tools: buggyTools,
      runTools: true,
      channel: (transport: Channel) => new DeskChannel(transport),
    });
    const failures: Array<{ name: string; message: string }> = [];
    for (const test of tests) {
      await test.body({}).catch((error: Error) => failures.push({ name: test.name, message: error.message }));
    }
    expect(failures.length).toBeGreaterThan(0);
    for (const failure of failures) {
      expect(failure.name).toMatch(/\/stop|interrupting/);
      expect(failure.message).toContain(
        "tool lookup_order is declared cancellable but ignores its abort signal: it was stopped on this path and never looked at context.signal",
      );
    }
    // Paths that never stop the tool still pass: the suite points at the bug, not at everything.
    expect(failures.length).toBeLessThan(tests.length);
  }, 60_000);
});
