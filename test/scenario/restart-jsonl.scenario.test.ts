import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { DELIVERY_INTENT } from "../../src/ports/store.js";
import type { ScenarioResult } from "../../src/scenario/runner.js";
import { LONG, MARKER, RECOVERED } from "../support/delivery.js";
import {
  EMPTY_SCENARIO,
  expectAnsweredOnceEach,
  expectEveryToolCallClosed,
  expectSeqIncreasing,
  priorityOfTurnsAfterRestart,
  recoveredFinal,
  seed,
} from "../support/restart.js";
import { customs, eventsOf, expectNoCrash, play, transcript } from "../support/scenario.js";

// A JSONL store outlives the process (docs/store.md): a second run continues the transcript, resumes a
// turn cut off mid-tool, and recovers a stranded final once, whatever the first run left on disk.

const dirs: string[] = [];
afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "tiller-restart-"));
  dirs.push(dir);
  return dir;
}

describe("a JSONL store outlives the process", () => {
  it("continues the transcript in a second run on the same store and re-runs nothing of the first", async () => {
    const dir = await tempDir();
    const first = await play(
      `
name: first process
config:
  queue: { mode: followup }
model:
  - reply: { delayMs: 300, text: "Re: {{latestUser}}" }
channels:
  web: {}
inbound:
  - { at: 0, session: "web:a", channel: web, id: m1, text: "one" }
  - { at: 100, session: "web:a", channel: web, id: m2, text: "two" }
`,
      dir,
    );
    const firstRecords = transcript(first, "web:a");
    expectAnsweredOnceEach(first, "web:a", ["m1", "m2"]);

    const second = await play(
      `
name: second process
model:
  - reply: { delayMs: 300, text: "Re: {{latestUser}}" }
channels:
  web: {}
inbound:
  - { at: 0, session: "web:a", channel: web, id: m3, text: "three" }
  - { at: 1000, session: "web:a", channel: web, id: m2, text: "two" }
`,
      dir,
    );
    // The channel redelivers a message the first process answered: a duplicate, not a second answer.
    expect(second.acks.map((ack) => [ack.messageId, ack.disposition])).toEqual([
      ["m3", "started"],
      ["m2", "duplicate"],
    ]);
    const records = transcript(second, "web:a");
    // The first run's records are kept as they were; the second run appends after them.
    expect(records.slice(0, firstRecords.length)).toEqual(firstRecords);
    expectSeqIncreasing(records);
    expect(records.length).toBe(firstRecords.length + 3);
    expect(records.slice(firstRecords.length)).toEqual([
      expect.objectContaining({ role: "user", messageId: "m3" }),
      expect.objectContaining({ role: "custom", customType: DELIVERY_INTENT }),
      expect.objectContaining({ role: "assistant", text: "Re: three", delivered: true }),
    ]);
    // Nothing of the first run is resumed or answered again.
    expect(eventsOf(second, "session.resumed")).toEqual([]);
    expect(second.modelCalls.map((call) => call.latestUser)).toEqual(["three"]);
    expect(second.deliveries.map((delivery) => delivery.text)).toEqual(["Re: three"]);
    // Each turn of either process has its own run id.
    const runIds = records.flatMap((record) => (record.role === "assistant" ? [record.runId] : []));
    expect(new Set(runIds).size).toBe(3);
    expectNoCrash(second);
  });

  it("hands messages due while a restarted process starts to that process, on a JSONL store as in memory", async () => {
    const yaml = `
name: inbound right after a restart
config: { queue: { mode: followup } }
model: [ { reply: { delayMs: 100, text: "Re: {{latestUser}}" } } ]
channels: { web: {} }
inbound:
  - { at: 0, session: s, channel: web, id: m1, text: "one" }
  - { at: 10, session: s, channel: web, id: m2, text: "two" }
  - { at: 51, session: s, channel: web, id: m3, text: "three" }
  - { at: 52, session: t, channel: web, id: n1, text: "other session" }
restart: [ { at: 50 } ]
`;
    const replies = (result: ScenarioResult) =>
      result.deliveries.filter((delivery) => delivery.kind === "reply").map((delivery) => delivery.text);
    const inMemory = await play(yaml);
    const onDisk = await play(yaml, await tempDir());
    expect(replies(inMemory).sort()).toEqual(["Re: one", "Re: other session", "Re: three", "Re: two"]);
    expect(replies(onDisk)).toEqual(replies(inMemory));
    expect(onDisk.acks).toEqual(inMemory.acks);
  });

  it("resumes on a JSONL store a turn cut off mid-tool, leaving only whole lines on disk", async () => {
    const dir = await tempDir();
    const result = await play(await readFile("examples/06-restart-mid-tool.yaml", "utf8"), dir);
    const records = transcript(result, "web:ops");
    expectEveryToolCallClosed(records);
    expectAnsweredOnceEach(result, "web:ops", ["r1"]);
    expectSeqIncreasing(records);
    expect(priorityOfTurnsAfterRestart(result, "web:ops")).toEqual(["background"]);

    const files = await readdir(dir);
    const transcripts = files.filter((name) => name.endsWith(".jsonl"));
    expect(transcripts).toHaveLength(1);
    const text = await readFile(join(dir, transcripts[0]!), "utf8");
    expect(text.endsWith("\n")).toBe(true);
    const lines = text.trimEnd().split("\n");
    for (const line of lines) expect(() => JSON.parse(line)).not.toThrow();
    const stored = lines.map((line) => JSON.parse(line) as { seq?: number }).filter((line) => line.seq);
    expect(stored.map((line) => line.seq)).toEqual(records.map((record) => record.seq));
    // Nothing is pending any more: the resume state is gone.
    expect(files.filter((name) => name.endsWith(".state.json"))).toEqual([]);
  });

  it("appends the marker a crash cut off between the final and its marker, then recovers once", async () => {
    const dir = await tempDir();
    await seed(
      dir,
      "telegram:7",
      [
        { role: "user", text: "How do we migrate the orders table?", messageId: "p1", channel: "telegram" },
        { role: "assistant", text: LONG, runId: "telegram:7#1", delivered: false },
      ],
      {
        version: 1,
        turnSeq: 1,
        runId: "telegram:7#1",
        pending: {
          kind: "turn",
          messages: [{ id: "p1", text: "How do we migrate the orders table?", channel: "telegram", at: 0 }],
          summaries: [],
        },
        queue: [],
        summaries: [],
      },
    );
    const result = await play(EMPTY_SCENARIO, dir);
    const records = transcript(result, "telegram:7");
    expect(records.map((record) => (record.role === "custom" ? record.customType : record.role))).toEqual([
      "user",
      "assistant",
      MARKER,
      DELIVERY_INTENT,
      RECOVERED,
    ]);
    expect(records[2]).toMatchObject({
      display: false,
      details: { deliveryMode: "automatic", delivered: false, finalSeq: 2, finalTextLength: LONG.length },
    });
    expect(result.deliveries.map((delivery) => [delivery.kind, delivery.text])).toEqual([["recovery", LONG]]);
    // The final is not produced again.
    expect(result.modelCalls).toEqual([]);
    expect(eventsOf(result, "session.resumed").map((event) => event.note)).toEqual([
      expect.stringContaining("marker appended"),
      expect.stringContaining("recovery of telegram:7#1 queued"),
    ]);

    // A third process finds nothing left to do: no second marker, no second recovery.
    const again = await play(EMPTY_SCENARIO, dir);
    expect(transcript(again, "telegram:7")).toEqual(records);
    expect(again.deliveries).toEqual([]);
  });

  it("marks and recovers a new stranded final even when an older final with the same run id was recovered", async () => {
    // Run ids may repeat in a transcript (numbered per process in older stores, or a custom newRunId).
    const dir = await tempDir();
    const second = "And how do we roll it back?";
    await seed(
      dir,
      "telegram:7",
      [
        ...recoveredFinal(),
        { role: "user", text: second, messageId: "p2", channel: "telegram" },
        { role: "assistant", text: `Rollback: ${LONG}`, runId: "telegram:7#1", delivered: false },
      ],
      {
        version: 1,
        turnSeq: 1,
        runId: "telegram:7#1",
        pending: {
          kind: "turn",
          messages: [{ id: "p2", text: second, channel: "telegram", at: 0 }],
          summaries: [],
        },
        queue: [],
        summaries: [],
      },
    );
    const result = await play(EMPTY_SCENARIO, dir);
    const records = transcript(result, "telegram:7");
    expect(records.slice(6)).toEqual([
      expect.objectContaining({ customType: MARKER, details: expect.objectContaining({ finalSeq: 6 }) }),
      expect.objectContaining({
        customType: DELIVERY_INTENT,
        details: expect.objectContaining({ kind: "recovery" }),
      }),
      expect.objectContaining({
        customType: RECOVERED,
        details: expect.objectContaining({ recovered: true }),
      }),
    ]);
    expect(result.deliveries.map((delivery) => [delivery.kind, delivery.text])).toEqual([
      ["recovery", `Rollback: ${LONG}`],
    ]);
    expect(result.modelCalls).toEqual([]);
  });

  it("does not run a recovery again when its tiller.recovered proof is stored", async () => {
    const dir = await tempDir();
    await seed(dir, "telegram:7", recoveredFinal(), {
      version: 1,
      turnSeq: 2,
      runId: "telegram:7#2",
      pending: {
        kind: "recovery",
        messages: [],
        summaries: [],
        recovery: {
          kind: "recovery",
          text: LONG,
          strandedRunId: "telegram:7#1",
          deliveryMode: "automatic",
        },
      },
      queue: [],
      summaries: [],
    });
    const result = await play(EMPTY_SCENARIO, dir);
    expect(result.deliveries).toEqual([]);
    expect(customs(transcript(result, "telegram:7"), MARKER)).toHaveLength(1);
    expect(customs(transcript(result, "telegram:7"), RECOVERED)).toHaveLength(1);
    expect(eventsOf(result, "session.resumed")).toEqual([]);
  });
});
