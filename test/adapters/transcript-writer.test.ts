import { describe, expect, it } from "vitest";
import { MemoryStore } from "../../src/adapters/memory-store.js";
import { TranscriptWriter } from "../../src/adapters/transcript-writer.js";

// `isBusy` is what a simulated clock waits on before it moves time (the scenario runner, the testing
// kit): store I/O it does not count lets time jump past a turn that is still reading or writing, and a
// resumed run then waits on a timer nobody fires.

const SESSION = "web:writer";

async function storeWithOpenCall(): Promise<MemoryStore> {
  const store = new MemoryStore({ now: () => 1 });
  const head = await store.open(SESSION);
  await store.append(
    SESSION,
    [
      { role: "user", text: "look it up", messageId: "m1" },
      { role: "toolCall", callId: "c1", name: "lookup", args: {}, runId: "r1" },
    ],
    head,
  );
  return store;
}

describe("TranscriptWriter.isBusy", () => {
  it("counts a resumed turn's repair of a cut-off tool call as I/O in flight", async () => {
    const writer = new TranscriptWriter(await storeWithOpenCall());
    const repair = writer.repaired(SESSION, "r2");
    expect(writer.isBusy).toBe(true);
    await repair;
    expect(writer.isBusy).toBe(false);
    const records = await writer.read(SESSION);
    expect(records.at(-1)).toMatchObject({
      role: "toolResult",
      callId: "c1",
      status: "cancelled",
      runId: "r2",
    });
  });

  it("counts a listing of the stored sessions as I/O in flight", async () => {
    const writer = new TranscriptWriter(await storeWithOpenCall());
    const listing = writer.storedSessions("web:");
    expect(writer.isBusy).toBe(true);
    expect(await listing).toEqual([SESSION]);
    expect(writer.isBusy).toBe(false);
  });
});

describe("TranscriptWriter's first write to a session it reads", () => {
  it("closes a cut-off tool call found in the window it keeps, without reading the window again", async () => {
    const store = await storeWithOpenCall();
    let windowReads = 0;
    const readWindow = store.readWindow.bind(store);
    store.readWindow = (session) => {
      windowReads++;
      return readWindow(session);
    };
    const writer = new TranscriptWriter(store);
    writer.keepWindow(SESSION, true);
    // A session this process takes over: its window is read (duplicate detection, the turn's context).
    expect((await writer.readWindow(SESSION)).map((record) => record.role)).toEqual(["user", "toolCall"]);
    await writer.append(SESSION, [{ role: "user", text: "again", messageId: "m2" }]);
    const records = await writer.read(SESSION);
    expect(records.map((record) => record.role)).toEqual(["user", "toolCall", "toolResult", "user"]);
    expect(records[2]).toMatchObject({ callId: "c1", status: "cancelled" });
    expect(windowReads).toBe(1);
  });
});
