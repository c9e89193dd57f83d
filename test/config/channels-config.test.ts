import { describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config.js";
import { ConfigError } from "../../src/errors.js";

describe("config.channels", () => {
  it("fills the defaults of a Telegram bot and a Slack app", () => {
    const config = parseConfig({ channels: { telegram: {}, slack: {} } });
    expect(config.channels).toEqual({
      telegram: { mode: "polling", webhookPath: "/telegram" },
      slack: { mode: "events" },
    });
    expect(parseConfig({}).channels).toEqual({});
  });

  it.each([
    [{ telegram: { mode: "hook" } }, "config.channels.telegram.mode"],
    [{ telegram: { webhookPath: "telegram" } }, "config.channels.telegram.webhookPath"],
    [{ telegram: { allowedChats: ["general"] } }, "config.channels.telegram.allowedChats[0]"],
    [{ slack: { apiUrl: "slack.com" } }, "config.channels.slack.apiUrl"],
    [{ slack: { mode: "rtm" } }, "config.channels.slack.mode"],
    [{ discord: {} }, "config.channels"],
  ])("refuses %j naming %s", (channels, field) => {
    let error: unknown;
    try {
      parseConfig({ channels });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).field).toBe(field);
  });
});
