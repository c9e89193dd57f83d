import { describe, expect, it } from "vitest";
import { machinePaths } from "../../src/testing/machine-paths.js";
import { type PathTestContext, testPaths } from "../../src/testing/test-paths.js";

// The kit's vitest helper, used as a gateway author would: one test per path of the run machine under
// a config of their own (no re-check pass, interrupt mode).
const config = { staleReplyRecheck: { maxPasses: 0 }, queue: { mode: "interrupt" as const } };

describe("run paths with maxPasses 0 in interrupt mode, one test each", () => {
  testPaths(it, machinePaths("run", { config }), { config });
});

describe("testPaths", () => {
  it("names each test after its path and fails it with the story of what was missed", async () => {
    const registered: Array<{ name: string; body: (context: PathTestContext) => Promise<void> }> = [];
    const [first] = machinePaths("run");
    testPaths((name, body) => registered.push({ name, body }), [first!], {
      // A model that never answers: the path's expectations cannot hold.
      model: () => ({ complete: async () => ({ text: "", toolCalls: [] }) }),
    });
    expect(registered.map((test) => test.name)).toEqual([first!.name]);
    await expect(registered[0]!.body({})).rejects.toThrow(
      /expected a reply "Re: Please update the checklist file" is delivered; found nothing was delivered/,
    );
  });
});
