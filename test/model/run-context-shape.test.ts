import { describe, expect, it } from "vitest";
import { createActor, fromPromise } from "xstate";
import { parseConfig } from "../../src/config.js";
import type {
  CallModelInput,
  CallModelOutput,
  RunToolInput,
  RunToolOutput,
} from "../../src/machines/run.machine.js";
import { runGraphInput, runMachine } from "../../src/testing/run-graph.js";

// `assign` copies the run's context whole on every step with `Object.assign({}, context, patch)`; a
// copy of twenty or more fields leaves V8's fast properties, and every step of every turn then reads
// and copies a dictionary (the first model call measured 10-13% slower). Adding a field past nineteen
// must be a decision, not an accident.

describe("the run's context", () => {
  it("keeps at most nineteen fields, at the start and after a model call", async () => {
    const logic = runMachine.provide({
      actors: {
        callModel: fromPromise<CallModelOutput, CallModelInput>(
          async () => ({ text: "done", toolCalls: [] }) as unknown as CallModelOutput,
        ),
        runTool: fromPromise<RunToolOutput, RunToolInput>(() => new Promise(() => {})),
      },
    });
    const actor = createActor(logic, { input: runGraphInput(parseConfig({})) });
    const sizes: number[] = [];
    actor.subscribe((snapshot) => sizes.push(Object.keys(snapshot.context).length));
    actor.start();
    sizes.push(Object.keys(actor.getSnapshot().context).length);
    await new Promise<void>((resolve) => setImmediate(resolve));
    actor.stop();
    expect(sizes.length).toBeGreaterThan(1);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(19);
  });
});
