import { fromPromise } from "xstate";
import { invalidArgsResult } from "../adapters/tool-schema.js";
import { errorMessage } from "../errors.js";
import type { RunToolInput, RunToolOutput } from "../machines/run.machine.js";
import { lackingScopes, refusedResult } from "../policy/sender.js";
import { DeadlineError, withDeadline } from "../ports/clock.js";
import type { ActorDeps } from "./deps.js";
import { linkedAbort } from "./linked-abort.js";
import { untilStored } from "./store-retry.js";

/**
 * One tool call: its toolCall record is durable before the tool starts, so a crash mid-tool leaves
 * evidence that the effect may have happened. Cancellable tools receive the abort signal; the others
 * run to their end whatever happens to the turn. A call not settled within `limits.toolTimeoutMs` is
 * given up (a cancellable tool is cancelled) and reported to the model as failed, outcome unknown.
 */
export function createRunTool(deps: ActorDeps) {
  return fromPromise<RunToolOutput, RunToolInput>(async ({ input, signal }) => {
    // Durable before the tool starts; held and tried again while the store cannot be reached.
    await untilStored(
      deps,
      { session: input.session, op: "journal" },
      () => deps.writer.appendJournal(input.session, input.runId, input.journalOffset, input.unpersisted),
      signal,
    );
    const persisted = input.unpersisted.length;
    const tool = deps.tools.get(input.call.name);
    if (!tool) {
      return { status: "failed", result: { error: `unknown tool "${input.call.name}"` }, persisted };
    }
    // Arguments that do not fit the tool's schema never reach it: the model reads why and may call again.
    const checked = deps.toolSchemas.get(tool.name)?.check(input.call.args) ?? {
      ok: true as const,
      args: input.call.args,
    };
    if (!checked.ok) {
      deps.emit("tool.argsInvalid", {
        session: input.session,
        runId: input.runId,
        callId: input.call.callId,
        name: tool.name,
        problems: checked.problems,
      });
      return { status: "failed", result: invalidArgsResult(checked.problems), persisted };
    }
    // A call the turn's authority does not cover never runs: the model reads who lacks which scope.
    const senders = input.senders ?? [];
    const lacking = lackingScopes(senders, input.anonymous ?? senders.length === 0, tool.requires);
    if (lacking.length > 0) {
      const refusals = lacking.map(({ sender, missing }) => ({
        sender: sender?.id ?? null,
        missing,
      }));
      deps.emit("tool.refused", {
        session: input.session,
        runId: input.runId,
        callId: input.call.callId,
        name: tool.name,
        requires: tool.requires ?? [],
        lacking: refusals,
      });
      return { status: "failed", result: refusedResult(tool.name, lacking), persisted };
    }
    // A cancellable tool stops when the turn is aborted or when it runs out of time.
    const control = linkedAbort(signal, tool.cancellable);
    const timeoutMs = deps.config.limits.toolTimeoutMs;
    // The sends this call claims go back to the run, which names the turn's next send after them.
    let sendOrdinal = input.sendOrdinal;
    const parent = {
      session: input.session,
      runId: input.runId,
      signal: control.signal,
      ...(input.lane ? { lane: input.lane } : {}),
    };
    try {
      const running = tool.execute(checked.args, {
        session: input.session,
        runId: input.runId,
        callId: input.call.callId,
        signal: control.signal,
        turnKind: input.kind,
        ...(input.channel ? { channel: input.channel } : {}),
        turnKey: input.turnKey ?? input.runId,
        nextSendOrdinal: () => ++sendOrdinal,
        senders,
        runSubagent: (options) => deps.runSubagent(parent, options),
      });
      const result = await withDeadline(deps.clock, running, timeoutMs, signal);
      return { ...storedResult(result), persisted, sendOrdinal };
    } catch (error) {
      if (error instanceof DeadlineError && !signal.aborted) {
        if (tool.cancellable) control.abort(new Error(`the tool ran past ${timeoutMs} ms`));
        const outcome = tool.cancellable ? "it was cancelled" : "it may still be running";
        const timeout = {
          session: input.session,
          runId: input.runId,
          callId: input.call.callId,
          name: tool.name,
          timeoutMs,
        };
        deps.emit("tool.timeout", timeout);
        deps.emit("tool.timedOut", timeout);
        return {
          status: "failed",
          result: { error: `no result after ${timeoutMs} ms; ${outcome}, so its outcome is unknown` },
          persisted,
          sendOrdinal,
        };
      }
      if (signal.aborted && tool.cancellable) throw error;
      return {
        status: "failed",
        result: { error: errorMessage(error) },
        persisted,
        sendOrdinal,
      };
    } finally {
      control.release();
    }
  });
}

/**
 * A tool's result as the transcript stores it and later turns read it: its JSON form (a Date becomes
 * a string, `undefined` null). A result with no JSON form (a BigInt, a cycle) is the tool's failure,
 * reported to the model like a thrown error, so the turn goes on and nothing unstorable reaches the
 * journal.
 */
function storedResult(result: unknown): { status: "done" | "failed"; result: unknown } {
  try {
    const json = JSON.stringify(result);
    return { status: "done", result: json === undefined ? null : JSON.parse(json) };
  } catch (error) {
    const reason = errorMessage(error);
    return { status: "failed", result: { error: `the tool's result cannot be stored as JSON: ${reason}` } };
  }
}
