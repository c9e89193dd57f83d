import { describe, expect, it } from "vitest";
import { LoopbackChannel } from "../../src/adapters/channels/loopback-channel.js";
import { ScriptedModel } from "../../src/adapters/scripted-model.js";
import { SimulatedClock } from "../../src/adapters/simulated-clock.js";
import { createGateway } from "../../src/gateway/create-gateway.js";
import { silentLogger } from "../../src/logger.js";

// `/help` lists the commands (a control, not a message for the model); a `/queue` ack shows the mode
// the session has now.

function gateway() {
  const clock = new SimulatedClock();
  return createGateway({
    model: new ScriptedModel([{ reply: { text: "Re: {{latestUser}}" } }], clock),
    channels: { web: new LoopbackChannel({ now: () => clock.now() }) },
    clock,
    logger: silentLogger,
  });
}

describe("chat commands", () => {
  it("/help is a control that lists the commands", async () => {
    const g = gateway();
    await g.start();
    const ack = await g.receive({ session: "web:1", channel: "web", id: "h1", text: "/help" });
    expect(ack.disposition).toBe("control");
    for (const command of ["/stop", "/new", "/queue", "/help"]) expect(ack.text).toContain(command);
    await g.stop();
  });

  it("the /queue ack's mode is the new mode", async () => {
    const g = gateway();
    await g.start();
    const ack = await g.receive({ session: "web:1", channel: "web", id: "q1", text: "/queue collect" });
    expect(ack).toMatchObject({ disposition: "control", mode: "collect", modeSource: "session" });
    await g.stop();
  });
});
