import { describe, expect, it } from "vitest";
import { parseScenario } from "../../src/scenario/load.js";
import { runScenario } from "../../src/scenario/runner.js";
import { randomScenario, violations } from "../support/random-scenario.js";

// A seeded fuzzer over modes, controls, tool outcomes, faults and restarts, checked only from the
// outside (acks, deliveries, model calls, transcripts). TILLER_FUZZ_RUNS raises the count for a long run.

const RUNS = Number(process.env.TILLER_FUZZ_RUNS ?? 120);
const FIRST_SEED = Number(process.env.TILLER_FUZZ_SEED ?? 1);

describe("random scenarios keep every invariant", () => {
  it(
    `holds over ${RUNS} seeded scenarios`,
    async () => {
      const failures: string[] = [];
      for (let seed = FIRST_SEED; seed < FIRST_SEED + RUNS; seed++) {
        const yaml = randomScenario(seed);
        const { result } = await runScenario(parseScenario(yaml, `random-${seed}.yaml`));
        const found = violations(result);
        if (found.length > 0) failures.push(`seed ${seed}: ${found.join("; ")}`);
      }
      expect(failures).toEqual([]);
    },
    Math.max(120_000, RUNS * 300),
  );
});
