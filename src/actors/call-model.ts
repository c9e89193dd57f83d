import { errorMessage, TillerError } from "../errors.js";
import type { TillerEventFields } from "../events.js";
import type { CallModelInput, CallModelOutput, RunError } from "../machines/run.machine.js";
import { toRunError } from "../machines/run-context.js";
import { attributeSenders } from "../policy/sender.js";
import { DeadlineError, withDeadline } from "../ports/clock.js";
import { callSettings, latestUserText, type ModelReply } from "../ports/model.js";
import type { ToolSpec } from "../ports/tool.js";
import { fromAbortablePromise } from "./abortable-promise.js";
import type { ActorDeps } from "./deps.js";
import { checkModelReply, contextCallIds } from "./model-reply.js";
import { untilStored } from "./store-retry.js";

/**
 * One model call of a run. The turn's pending journal items are stored while the model works: the call
 * does not wait for the disk, but its reply is only handed back once they are durable, so nothing the
 * run does next (a tool, a final) can be stored or shown ahead of what the model saw. Aborting the
 * actor aborts the call. Text the model streams is reported as `model.delta` events: a draft, which the
 * stale-reply re-check may still replace, never a delivery.
 */
export function createCallModel(deps: ActorDeps) {
  // The config does not change once the gateway is built: the settings are read once, not per call.
  const settings = callSettings(deps.config.model);
  return fromAbortablePromise<CallModelOutput, CallModelInput>(
    async ({ input, signal: callSignal, abort, stopped, release }) => {
      // `model.called` and the journal's write start right after the model has the request: neither has
      // to come before it, and the time to the first model call is the turn's latency. A delta the model
      // streams synchronously inside complete() still follows `model.called`.
      let announced = false;
      const announce = () => {
        if (announced) return;
        announced = true;
        const turn = input.context.slice(input.turnStart);
        deps.emit(
          "model.called",
          Object.assign(identityOf(input), {
            trigger: input.trigger ?? "user",
            latestUser: latestUserText(input.context),
            userTexts: turn.flatMap((message) => (message.role === "user" ? [message.text] : [])),
            messageIds: turn.flatMap((message) => (message.role === "user" ? [message.messageId] : [])),
            // Who wrote each of this turn's messages (null: the anonymous user), for logs and tests.
            senders: turn.flatMap((message) => (message.role === "user" ? [message.sender?.id ?? null] : [])),
          }),
        );
      };
      // Drafts as they stream, for UIs that show progress; a delta after the call ended is dropped.
      let streaming = true;
      const onDelta = (text: string) => {
        if (streaming && !callSignal.aborted && typeof text === "string" && text.length > 0) {
          announce();
          deps.emit("model.delta", Object.assign(identityOf(input), { text }));
        }
      };
      const timeoutMs = deps.config.limits.modelTimeoutMs;
      const startedAt = deps.clock.now();
      // Paired with model.called whatever happens, so a UI or a log can close what it opened.
      const ended = (fields: Omit<TillerEventFields<"model.ended">, keyof CallIdentity | "durationMs">) =>
        deps.emit(
          "model.ended",
          Object.assign(identityOf(input), { durationMs: deps.clock.now() - startedAt }, fields),
        );
      let call: Promise<ModelReply> | undefined;
      let thrown: { error: unknown } | undefined;
      try {
        call = deps.model.complete(
          Object.assign(
            identityOf(input),
            {
              context: attributeSenders(input.context),
              turnStart: input.turnStart,
              tools: toolSpecs(deps, input.tools),
              // Aborts with the turn, or when the call runs past limits.modelTimeoutMs (`abort`).
              signal: callSignal,
              onDelta,
            },
            settings,
          ),
        );
      } catch (error) {
        thrown = { error };
      }
      announce();
      // The turn's own signal (the journal's retries and what follows the call wait on it), made now that
      // the model has the request.
      const signal = stopped();
      const userIds = input.unpersisted.flatMap((item) => (item.role === "user" ? [item.messageId] : []));
      const journaled = (async () => {
        // A message is stored only once a saved state says which turn answers it (restart safety).
        if (userIds.length > 0) await deps.stateDurable?.(input.session, userIds);
        // Held and tried again while the store cannot be reached: the turn waits, and keeps its reply.
        await untilStored(
          deps,
          { session: input.session, op: "journal" },
          () => deps.writer.appendJournal(input.session, input.runId, input.journalOffset, input.unpersisted),
          signal,
        );
      })();
      // Observed here so a failed write is not an unhandled rejection while the model still works.
      journaled.catch(() => {});
      let reply: unknown;
      try {
        if (thrown) throw thrown.error;
        reply = await withDeadline(deps.clock, call as Promise<ModelReply>, timeoutMs, signal);
      } catch (error) {
        if (!(error instanceof DeadlineError)) {
          ended(signal.aborted ? { status: "aborted" } : { status: "failed", error: errorSummary(error) });
          throw error;
        }
        const timedOut = new TillerError("MODEL_TIMEOUT", `the model did not answer within ${timeoutMs} ms`, {
          retryable: true,
        });
        abort(timedOut);
        ended({ status: "failed", error: timedOut.toJSON() });
        throw timedOut;
      } finally {
        streaming = false;
        release();
      }
      try {
        await journaled;
      } catch (error) {
        const failed = new TillerError(
          "STORE_FAILED",
          `the turn's records could not be stored: ${errorMessage(error)}`,
          { retryable: true, cause: error },
        );
        ended({ status: "failed", error: failed.toJSON() });
        throw failed;
      }
      if (signal.aborted) {
        ended({ status: "aborted" });
        throw signal.reason;
      }
      let checked: ModelReply;
      try {
        checked = checkModelReply(reply, input.runId, input.call, contextCallIds(input.context));
      } catch (error) {
        ended({ status: "failed", error: errorSummary(error) });
        throw error;
      }
      const { text, toolCalls, finishReason, usage } = checked;
      ended({
        status: "done",
        toolCalls: toolCalls.length,
        textLength: text.length,
        ...(finishReason !== undefined ? { finishReason } : {}),
        ...(usage !== undefined ? { usage } : {}),
      });
      return { text, toolCalls, persisted: input.unpersisted.length };
    },
  );
}

/** The fields naming a call, on its request and on each of its events. */
type CallIdentity = ReturnType<typeof identityOf>;

/**
 * A new object per use, extended with `Object.assign`: on this V8, a literal that starts with a spread
 * (`{ ...identity, text }`) gets new hidden classes for each property added after the copy, 1–2 µs a
 * property (the model's request cost 5–10 µs before the call); one built as a literal does not.
 */
function identityOf(input: CallModelInput) {
  return {
    session: input.session,
    runId: input.runId,
    call: input.call,
    recheck: input.recheck,
    recovery: input.recovery,
    review: false,
  };
}

/**
 * The specs of the tools a call may use, in the run's order; a name without a tool is left out. Turns
 * share their list of tool names (prepare-run builds it once), so the specs are built once per list.
 */
function toolSpecs(deps: ActorDeps, names: readonly string[]): ToolSpec[] {
  const known = specsOf.get(names);
  if (known) return known;
  const specs: ToolSpec[] = [];
  for (const name of names) {
    const spec = deps.toolSchemas.get(name)?.spec;
    if (spec) specs.push(spec);
  }
  specsOf.set(names, specs);
  return specs;
}

const specsOf = new WeakMap<readonly string[], ToolSpec[]>();

function errorSummary(error: unknown): RunError {
  const run = toRunError(error);
  return { code: run.code, message: run.message, retryable: run.retryable };
}
