import { readFile } from "node:fs/promises";
import { describe, expect, it } from "vitest";
import { parseScenario, ScenarioError } from "../../src/scenario/load.js";
import { runScenario } from "../../src/scenario/runner.js";

// A scenario's loopback channel can declare a chat platform's capabilities; the gateway then splits,
// edits previews, shows typing and reacts, and the output says what the channel did.

const EXAMPLE = "examples/13-chat-channel-capabilities.yaml";

async function play(text: string) {
  const { result, gateway } = await runScenario(parseScenario(text, "capabilities.yaml"));
  await gateway.stop();
  return result;
}

describe("scenario channels with capabilities", () => {
  it("split at maxLength, a preview edited into the answer, typing every 4 s, acks as reactions", async () => {
    const result = await play(await readFile(EXAMPLE, "utf8"));
    expect(result.expectations?.filter((expectation) => !expectation.ok)).toEqual([]);
    const replies = result.deliveries.filter((delivery) => delivery.kind === "reply");
    expect(replies.map((reply) => reply.text.length <= 200)).toEqual([true, true]);
    const activity = result.channelActivity?.telegram;
    // The preview (the first message) became the answer's first part by an edit.
    expect(activity?.edits.map((edit) => [edit.messageId, edit.text])).toEqual([
      [replies[0]!.messageId, replies[0]!.text],
    ]);
    expect(activity?.typings.map((typing) => typing.at)).toEqual([0, 4000, 8000]);
    expect(activity?.reactions.map((reaction) => [reaction.messageId, reaction.reaction])).toEqual([
      ["m1", "👀"],
      ["m2", "✍"],
    ]);
  });

  it("without them the same scenario is one message, no preview, no typing, acks unseen", async () => {
    const plain = (await readFile(EXAMPLE, "utf8"))
      .replace("{ maxLength: 200, edit: true, typing: true, react: true }", "{}")
      .replace(/expect:[\s\S]*$/, "");
    const result = await play(plain);
    expect(result.deliveries.map((delivery) => delivery.kind)).toEqual(["reply"]);
    expect(result.deliveries[0]!.text).toContain("\n\nOn the way back");
    expect(result.channelActivity).toBeUndefined();
  });

  it.each([
    ["maxLength: 0", "channels.telegram.maxLength", /expected a value > 0, found 0/],
    ['edit: "yes"', "channels.telegram.edit", /expected a boolean, found "yes"/],
    ["typing: 1", "channels.telegram.typing", /expected a boolean, found 1/],
    ["reactions: true", "channels.telegram", /expected no unknown keys \(got reactions\)/],
  ])("refuses %s, naming %s", async (setting, field, detail) => {
    const text = (await readFile(EXAMPLE, "utf8")).replace(
      "{ maxLength: 200, edit: true, typing: true, react: true }",
      `{ ${setting} }`,
    );
    let failure: unknown;
    try {
      parseScenario(text, "bad.yaml");
    } catch (error) {
      failure = error;
    }
    expect(failure).toBeInstanceOf(ScenarioError);
    expect((failure as ScenarioError).field).toBe(field);
    expect((failure as ScenarioError).message).toMatch(detail);
  });
});

describe("a split answer whose first part replaced a preview", () => {
  it("is not posted again by a restart before its last part arrived", async () => {
    const text = (await readFile(EXAMPLE, "utf8"))
      .replace(
        "{ maxLength: 200, edit: true, typing: true, react: true }",
        "{ maxLength: 200, edit: true, sendDelayMs: 1000 }",
      )
      .replace(/tools:[\s\S]*?channels:/, "channels:")
      .replace(
        / {2}- when: \{ call: 1 \}\n {4}reply: \{ delayMs: 300, toolCalls: \[\{ name: check_schedule \}\] \}\n/,
        "",
      )
      .replace(/ {2}- \{ at: 2000[^\n]*\n/, "")
      .replace(/expect:[\s\S]*$/, "restart: [{ at: 2000 }]\n");
    // The draft at 500 ms is sent as a preview (1 s on the wire), edited into part 1 at 1500 ms; part 2
    // is on the wire when the process dies at 2000 ms.
    const result = await play(text);
    const replies = result.deliveries.filter((delivery) => delivery.kind === "reply");
    expect(replies.map((reply) => reply.text.slice(0, 30))).toEqual([
      "The ferry to the island leaves",
      "On the way back, the last ferr",
    ]);
    expect(result.events.some((event) => event.type === "process.restarted")).toBe(true);
  });
});
