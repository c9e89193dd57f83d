// The desk's generated suite: every path of the session and run machines, with the desk's config, its
// two tools (run for real, on the path's timing) and its channel. `npm test` runs it.
import { describe, it } from "vitest";
import { machinePaths, testPaths } from "../../src/testing/index.js"; // in your project: "tiller-gateway/testing"
import config from "./config.json" with { type: "json" };
import { DeskChannel } from "./desk-channel.mjs";
import tools from "./tools.mjs";

const options = {
  config,
  tools,
  runTools: true,
  channel: (transport: import("../../src/ports/channel.js").Channel) => new DeskChannel(transport),
};

describe("support desk: session paths", () => testPaths(it, machinePaths("session", { config }), options));
// Simple paths too: they stop the second tool of a batch, the cancellable lookup.
describe("support desk: run paths", () =>
  testPaths(it, machinePaths("run", { config, kind: "simple" }), options));
