import { describe, expect, it } from "vitest";
import { SimulatedClock } from "../../src/adapters/simulated-clock.js";
import {
  ConfigError,
  GatewayDrainingError,
  LaneClearedError,
  LaneTimeoutError,
  TillerError,
} from "../../src/errors.js";
import { createLaneScheduler, type RunOptions } from "../../src/lanes/lane-scheduler.js";
import { deferred } from "../support/deferred.js";

// Bad input throws at once, names the argument, what was expected and what was received, and leaves
// everything already queued exactly as it was. Tasks that return or throw synchronously are settled too.

/** A scheduler whose `main` (capacity 1) runs one task and queues two, to prove bad calls change nothing. */
function withQueue() {
  const clock = new SimulatedClock();
  const lanes = createLaneScheduler({ clock, capacity: { main: 1 } });
  const gate = deferred<string>();
  const started: string[] = [];
  const results: Promise<string>[] = [];
  for (const name of ["a", "b", "c"]) {
    results.push(
      lanes.run({ session: name === "a" ? undefined : "S" }, () => {
        started.push(name);
        return gate.promise.then(() => name);
      }),
    );
  }
  return { clock, lanes, gate, started, results, before: JSON.stringify(lanes.snapshot()) };
}

function thrown(call: () => unknown): unknown {
  try {
    call();
  } catch (error) {
    return error;
  }
  throw new Error("expected the call to throw");
}

/** Asserts a ConfigError that names the field, the expectation and the received value. */
function expectConfigError(error: unknown, field: string, expected: string, received: string): void {
  expect(error).toBeInstanceOf(ConfigError);
  const config = error as ConfigError;
  expect(config.code).toBe("CONFIG_INVALID");
  expect(config.field).toBe(field);
  expect(config.message).toContain(field);
  expect(config.message).toContain(expected);
  expect(config.message).toContain(`received ${received}`);
}

describe("bad capacities", () => {
  it.each([
    [-1, "-1"],
    [1.5, "1.5"],
    [Number.NaN, "NaN"],
    ["2", '"2"'],
  ])("a capacity of %s throws ConfigError naming the lane, the expectation and the value", (value, shown) => {
    const { lanes, started, before } = withQueue();
    expectConfigError(
      thrown(() => lanes.setCapacity("main", value as number)),
      "capacity.main",
      "an integer >= 0",
      shown,
    );
    expect(JSON.stringify(lanes.snapshot())).toBe(before);
    expect(started).toEqual(["a"]);
  });

  it("a bad capacity in the options throws before the scheduler exists", () => {
    expectConfigError(
      thrown(() => createLaneScheduler({ capacity: { cron: -2 } })),
      "capacity.cron",
      "an integer >= 0",
      "-2",
    );
  });

  it("setCapacity refuses session lanes and empty names", () => {
    const { lanes, before } = withQueue();
    expectConfigError(
      thrown(() => lanes.setCapacity("session:S", 2)),
      "lane",
      "a workload lane",
      '"session:S"',
    );
    expectConfigError(
      thrown(() => lanes.setCapacity("", 2)),
      "lane",
      "a non-empty lane name",
      '""',
    );
    expect(JSON.stringify(lanes.snapshot())).toBe(before);
  });

  it("a bad warnAfterMs throws ConfigError", () => {
    expectConfigError(
      thrown(() => createLaneScheduler({ warnAfterMs: -5 })),
      "warnAfterMs",
      "a number of milliseconds >= 0",
      "-5",
    );
  });
});

describe("bad run() arguments", () => {
  const cases: Array<[string, RunOptions, string, string, string]> = [
    [
      "an unknown priority",
      { priority: "urgent" as never },
      "priority",
      "one of foreground, normal, background",
      '"urgent"',
    ],
    ["a zero timeoutMs", { timeoutMs: 0 }, "timeoutMs", "a finite number of milliseconds > 0", "0"],
    ["a negative timeoutMs", { timeoutMs: -10 }, "timeoutMs", "a finite number of milliseconds > 0", "-10"],
    ["a NaN timeoutMs", { timeoutMs: Number.NaN }, "timeoutMs", "a finite number of milliseconds > 0", "NaN"],
    [
      "an infinite timeoutMs",
      { timeoutMs: Number.POSITIVE_INFINITY },
      "timeoutMs",
      "a finite number",
      "Infinity",
    ],
    ["a string timeoutMs", { timeoutMs: "100" as never }, "timeoutMs", "a finite number", '"100"'],
    ["a session lane as workload lane", { lane: "session:S" }, "lane", "a workload lane name", '"session:S"'],
    ["an empty lane", { lane: "" }, "lane", "a workload lane name", '""'],
    ["a numeric session", { session: 42 as never }, "session", "a string session key", "42"],
    [
      "a signal that is no AbortSignal",
      { signal: { aborted: false } as never },
      "signal",
      "an AbortSignal",
      "object",
    ],
  ];

  it.each(cases)(
    "%s throws ConfigError naming it; the queue is untouched",
    (_, options, field, expected, shown) => {
      const { lanes, started, before } = withQueue();
      expectConfigError(
        thrown(() => lanes.run(options, async () => "never")),
        field,
        expected,
        shown,
      );
      expect(JSON.stringify(lanes.snapshot())).toBe(before);
      expect([lanes.activeCount, lanes.queuedCount]).toEqual([1, 2]);
      expect(started).toEqual(["a"]);
    },
  );

  it.each([
    ["undefined", undefined],
    ["a string", "work"],
    ["an object", { run() {} }],
  ])("a task that is %s throws ConfigError naming the task argument", (_, task) => {
    const { lanes, before } = withQueue();
    const error = thrown(() => lanes.run({}, task as never));
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).field).toBe("task");
    expect((error as ConfigError).message).toMatch(/^task: expected a function, received /);
    expect(JSON.stringify(lanes.snapshot())).toBe(before);
  });

  it("options that are not an object throw ConfigError naming the options argument", () => {
    const { lanes } = withQueue();
    expect(() => lanes.run(null as never, async () => 1)).toThrow(
      /^options: expected an object, received null$/,
    );
    expect(thrown(() => lanes.run(null as never, async () => 1))).toBeInstanceOf(ConfigError);
  });

  it("clear of a lane name that is no string throws ConfigError", () => {
    const { lanes } = withQueue();
    expect(() => lanes.clear(7 as never)).toThrow(/^lane: expected a string, received 7$/);
    expect(thrown(() => lanes.clear(7 as never))).toBeInstanceOf(ConfigError);
  });

  it("after bad calls, the queued work runs on in order", async () => {
    const { lanes, gate, started, results, clock } = withQueue();
    expect(() => lanes.run({ priority: "asap" as never }, async () => 0)).toThrow(ConfigError);
    expect(() => lanes.setCapacity("main", -1)).toThrow(ConfigError);
    gate.resolve("go");
    await clock.runUntilIdle();
    expect(await Promise.all(results)).toEqual(["a", "b", "c"]);
    expect(started).toEqual(["a", "b", "c"]);
  });
});

describe("synchronous tasks", () => {
  it("a synchronous task's value or thrown error reaches its caller", async () => {
    const lanes = createLaneScheduler({ clock: new SimulatedClock() });
    const ok = lanes.run({}, () => 7);
    const bad = lanes.run({}, () => {
      throw new RangeError("sync");
    });
    expect(await Promise.allSettled([ok, bad])).toEqual([
      { status: "fulfilled", value: 7 },
      { status: "rejected", reason: new RangeError("sync") },
    ]);
    expect(lanes.activeCount).toBe(0);
  });

  it("a backlog of 10,000 synchronous tasks runs without overflowing the stack", async () => {
    const lanes = createLaneScheduler({ clock: new SimulatedClock(), capacity: { main: 0 } });
    const calls = Array.from({ length: 10_000 }, (_, i) => lanes.run({ session: `s${i % 3}` }, () => i));
    lanes.setCapacity("main", 1);
    const results = await Promise.all(calls);
    expect(results[9_999]).toBe(9_999);
  });

  it("a thenable that calls back again later settles nothing else: the task running then keeps its slot", async () => {
    const lanes = createLaneScheduler({ clock: new SimulatedClock(), capacity: { main: 1 } });
    let callBack: ((value: unknown) => void) | undefined;
    const thenable = {
      // biome-ignore lint/suspicious/noThenProperty: a task may return any thenable, this one misbehaves
      then(done: (value: unknown) => void) {
        callBack = done;
      },
    };
    const first = lanes.run({}, () => thenable as unknown as Promise<string>);
    callBack!("first");
    expect(await first).toBe("first");
    let heldSettled = false;
    void lanes.run({}, () => new Promise<string>(() => {})).finally(() => (heldSettled = true));
    callBack!("again");
    await Promise.resolve();
    expect(lanes.activeCount).toBe(1);
    expect(heldSettled).toBe(false);
  });

  it("an observer that throws as a task is enqueued rejects that call's promise; run() itself does not throw", async () => {
    const failure = new Error("observer failed");
    const onEvent = (event: { type: string }) => {
      if (event.type === "lane.enqueued") throw failure;
    };
    const lanes = createLaneScheduler({ clock: new SimulatedClock(), onEvent });
    let call: Promise<number> | undefined;
    expect(() => {
      call = lanes.run({}, () => 1);
    }).not.toThrow();
    await expect(call).rejects.toBe(failure);
  });
});

describe("error classes", () => {
  it("every scheduler error is a TillerError with a code and a retryable flag", () => {
    const errors: Array<[TillerError, string]> = [
      [new LaneClearedError("main"), "LANE_CLEARED"],
      [new LaneTimeoutError("main", 100), "LANE_TIMEOUT"],
      [new GatewayDrainingError("lane scheduler"), "GATEWAY_DRAINING"],
      [new ConfigError("priority", "one of ...", "x"), "CONFIG_INVALID"],
    ];
    for (const [error, code] of errors) {
      expect(error).toBeInstanceOf(TillerError);
      expect(error.code).toBe(code);
      expect(error.toJSON()).toEqual({ code, message: error.message, retryable: error.retryable });
    }
    expect(new LaneClearedError("main").retryable).toBe(true);
    expect(new ConfigError("x", "y", 1).retryable).toBe(false);
  });
});
