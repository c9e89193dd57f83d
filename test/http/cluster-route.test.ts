import { describe, expect, it } from "vitest";
import { clusterRoute } from "../../src/http/cluster-route.js";
import { startTestServer } from "../support/http-gateway.js";

describe("GET /v1/cluster", () => {
  it("answers clustered: false on a server that runs alone", async () => {
    const server = await startTestServer({ http: { routes: [clusterRoute()] } });
    try {
      const response = await fetch(`${server.url}/v1/cluster`);
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual({ clustered: false });
    } finally {
      await server.close();
    }
  });
});
