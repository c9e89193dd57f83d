import { afterEach } from "vitest";
import { type FakeOpenAIServer, type FakeReply, startFakeOpenAI } from "../../src/testing/fake-openai.js";

// The shipped fake server (src/testing/fake-openai.ts), with a vitest helper that closes it after each test.
export * from "../../src/testing/fake-openai.js";

/**
 * A fake server for each test that starts one (`start()` inside the test), closed after the test.
 */
export function useFakeOpenAIServer(): { start(replies?: FakeReply[]): Promise<FakeOpenAIServer> } {
  let current: FakeOpenAIServer | undefined;
  afterEach(async () => {
    await current?.close();
    current = undefined;
  });
  return {
    async start(replies: FakeReply[] = []) {
      current = await startFakeOpenAI({ replies });
      return current;
    },
  };
}
