import { describe, expect, it } from "vitest";
import { MemoryStore } from "../../src/adapters/memory-store.js";
import type { TranscriptRecord } from "../../src/ports/store.js";
import { startTestServer } from "../support/http-gateway.js";

/** A memory store whose reads wait for `release()`: a POST is held inside receive() until then. */
class GatedStore extends MemoryStore {
  release: () => void = () => undefined;
  private readonly gate: Promise<void> = new Promise((resolve) => {
    this.release = resolve;
  });
  reads = 0;
  override async readWindow(session: string): Promise<TranscriptRecord[]> {
    this.reads++;
    await this.gate;
    return super.readWindow(session);
  }
}

describe("a POST in flight when the drain starts", { timeout: 20_000 }, () => {
  it("answers 503 GATEWAY_DRAINING with Retry-After, never a 200 rejected ack", async () => {
    const store = new GatedStore();
    const server = await startTestServer({ store });
    try {
      const inFlight = Array.from({ length: 5 }, (_, i) =>
        server.post(`web:d${i}`, { text: "hello", id: `d${i}` }),
      );
      while (store.reads < 5) await new Promise((resolve) => setTimeout(resolve, 5));
      // What `tiller serve` does on SIGTERM: the server, then the gateway, drain.
      server.http.startDraining();
      const drained = server.gateway.drain();
      store.release();
      for (const answer of await Promise.all(inFlight)) {
        expect(answer.status).toBe(503);
        expect(answer.body.error).toMatchObject({ code: "GATEWAY_DRAINING" });
        expect(answer.headers.get("retry-after")).toBe("5");
      }
      await drained;
    } finally {
      await server.close();
    }
  });
});
