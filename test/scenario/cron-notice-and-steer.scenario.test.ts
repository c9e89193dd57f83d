import { describe, expect, it } from "vitest";
import { play } from "../support/scenario.js";

// Two user messages reach a running cron turn in one model call's gap: one waits for its own turn (it
// is shown to the cron turn as a notice), one steers into it. The next model call must see both, or
// the cron reply could land ignoring the first.

describe("a cron turn given a notice and a steering message before the same model call", () => {
  it("shows both to the re-draft, and its reply is not stale against either", async () => {
    const result = await play(`
config: { queue: { mode: followup } }
model:
  - reply: { delayMs: 1000, text: "Digest, and re: {{latestUser}}" }
inbound:
  - { at: 0, session: "t:1", channel: t, id: c1, text: "Daily digest of the inbox", trigger: cron }
  - { at: 300, session: "t:1", channel: t, id: m1, text: "what is the deploy command?" }
  - { at: 600, session: "t:1", channel: t, id: m2, text: "and who is on call", mode: steer }
`);
    expect(result.acks.find((ack) => ack.messageId === "m1")).toMatchObject({ disposition: "queued" });
    expect(result.acks.find((ack) => ack.messageId === "m2")).toMatchObject({ disposition: "steered" });
    const cron = result.modelCalls.filter((call) => call.trigger === "cron");
    expect(cron).toHaveLength(2);
    // The re-draft is shown the waiting message and owns the steered one.
    expect(cron[1]!.userTexts).toEqual(
      expect.arrayContaining(["what is the deploy command?", "and who is on call"]),
    );
    expect(result.events.filter((e) => e.type === "notice.injected").map((e) => e.messageIds)).toEqual([
      ["m1"],
    ]);
    // m1 still gets its own turn and its own answer.
    const replies = result.deliveries.filter((d) => d.kind === "reply").map((d) => d.text);
    expect(replies).toEqual([
      "Digest, and re: and who is on call",
      "Digest, and re: what is the deploy command?",
    ]);
  });
});
