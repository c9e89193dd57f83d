import { describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config.js";
import { ConfigError } from "../../src/errors.js";
import { parseScenario } from "../../src/scenario/load.js";

describe("config problems", () => {
  it("refuses lanes.main 0: no message would ever run", () => {
    let error: unknown;
    try {
      parseConfig({ lanes: { main: 0 } });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).field).toBe("config.lanes.main");
    expect((error as ConfigError).message).toMatch(/capacity >= 1 for main/);
    // Other lanes may be paused.
    expect(parseConfig({ lanes: { main: 1, cron: 0 } }).lanes).toEqual({ main: 1, cron: 0 });
  });

  it("reports every problem at once, each naming its field", () => {
    let error: unknown;
    try {
      parseConfig({ lanes: { main: -1 }, warnAfterMs: "soon", queue: { mode: "sideways" } });
    } catch (caught) {
      error = caught;
    }
    const problems = (error as ConfigError).problems.map((problem) => problem.field).sort();
    expect(problems).toEqual(["config.lanes.main", "config.queue.mode", "config.warnAfterMs"]);
    for (const field of problems) expect((error as ConfigError).message).toContain(field);
    expect((error as ConfigError).message).toMatch(/^3 problems: /);
  });

  it("a scenario names every problem of its config and of its own fields", () => {
    expect(() =>
      parseScenario("config: { lanes: { main: 0 }, warnAfterMs: -5 }\ninbound: []\n", "s.yaml"),
    ).toThrow(/config\.lanes\.main: .*; and config\.warnAfterMs: /);
    expect(() => parseScenario("until: -1\nrestart: [{ at: -2 }]\n", "s.yaml")).toThrow(
      /restart\[0\]\.at: .*; and until: |until: .*; and restart\[0\]\.at: /,
    );
    expect(() => parseScenario("  \n", "empty.yaml")).toThrow(/empty\.yaml: \(file\): .*empty file/);
  });
});
