import { checkSync } from "recheck";
import { describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config.js";
import { ConfigError } from "../../src/errors.js";
import { DEFAULT_COMPLAINT_PATTERNS } from "../../src/policy/stale-reply.js";

describe("config", () => {
  it("fills every default when given nothing", () => {
    const config = parseConfig({});
    expect(config.staleReplyRecheck).toMatchObject({ enabled: true, maxPasses: 1, minOverlap: 0.2 });
    expect(config.delivery.visibleReplies).toBe("auto");
    expect(config.warnAfterMs).toBe(2000);
    expect(config.commitments).toEqual({ enabled: false, maxPerDay: 3 });
  });

  // One test per pattern: the checker takes up to a few seconds on the longer ones.
  DEFAULT_COMPLAINT_PATTERNS.forEach((pattern, index) => {
    it(`proves built-in complaint pattern ${index + 1} safe from catastrophic backtracking`, () => {
      const diagnostics = checkSync(pattern, "i", { timeout: 10_000 });
      expect(diagnostics.status, pattern).toBe("safe");
      // Proven on the automaton, not only fuzzed: the verdict does not depend on the machine's load.
      expect((diagnostics as { checker?: string }).checker, pattern).toBe("automaton");
    }, 30_000);
  });

  it("rejects a user pattern that backtracks catastrophically, naming the field", () => {
    const attempt = () =>
      parseConfig({ staleReplyRecheck: { complaintPatterns: ["wrong answer", "^(a+)+$"] } });
    expect(attempt).toThrow(ConfigError);
    expect(attempt).toThrow(/staleReplyRecheck\.complaintPatterns\[1\].*catastrophic backtracking/);
  });

  it("rejects a pattern that does not compile", () => {
    expect(() => parseConfig({ staleReplyRecheck: { complaintPatterns: ["(unclosed"] } })).toThrow(
      /complaintPatterns\[0\]: expected a valid regular expression/,
    );
  });

  it("names the field, the expectation and the received value for a malformed config", () => {
    expect(() => parseConfig({ lanes: { main: -1 } })).toThrow(/config\.lanes\.main: expected .*received -1/);
    expect(() => parseConfig({ queue: { mode: "sometimes" } })).toThrow(
      /config\.queue\.mode: expected one of steer/,
    );
    expect(() => parseConfig({ colour: "blue" })).toThrow(/no unknown keys \(got colour\)/);
  });

  it("accepts queue-mode aliases", () => {
    expect(
      parseConfig({ queue: { mode: "follow-ups", byChannel: { slack: "coalesce" } } }).queue,
    ).toMatchObject({
      mode: "followup",
      byChannel: { slack: "collect" },
    });
  });

  it("says whether a bound is exclusive, and lists what a union accepts", () => {
    const message = (raw: object) => {
      try {
        parseConfig(raw);
      } catch (error) {
        return (error as Error).message;
      }
      return "";
    };
    expect(message({ queue: { cap: 0 } })).toBe("config.queue.cap: expected a value > 0, received 0");
    expect(message({ warnAfterMs: -1 })).toBe("config.warnAfterMs: expected a value >= 0, received -1");
    expect(message({ delivery: { visibleAcks: "yes" } })).toContain(
      'expected one of: one of "problems", "all", "none"; or a boolean; or a record',
    );
    // A collect window of days would park a session's messages (the /queue command refuses it too).
    expect(message({ queue: { debounceMs: 1e15 } })).toBe(
      "config.queue.debounceMs: expected a value <= 600000, received 1000000000000000",
    );
  });
});
