import { fromPromise } from "xstate";
import type { ActorDeps } from "./deps.js";

/** `/new`: a new lifecycle revision, so the next turn starts from an empty context window. */
export function createResetTranscript(deps: ActorDeps) {
  return fromPromise<void, { session: string }>(async ({ input }) => {
    await deps.writer.reset(input.session);
    deps.emit("session.reset", { session: input.session });
  });
}
