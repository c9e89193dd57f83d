import type { AnyActorRef } from "xstate";
import type { SessionActorRef } from "../../machines/session.machine.js";
import type { SessionDecision } from "../../machines/session.types.js";
import type { ControlCommand } from "../../policy/control.js";
import type { ResolvedQueueSetting } from "../../policy/queue-mode.js";
import { type Sender, sameSender } from "../../policy/sender.js";
import type { SessionMemory } from "../sessions/session-persistence.js";
import type { Ack, RunView } from "./compose-ack.js";
import { stateName } from "./validate-inbound.js";

/** What the session's run is doing now (its state and the context the ack reads), if one runs. */
export function runViewOf(actor: SessionActorRef | null): RunView | undefined {
  const runRef = runRefOf(actor);
  if (!runRef) return undefined;
  const runSnapshot = runRef.getSnapshot();
  return { state: stateName(runSnapshot.value), context: runSnapshot.context };
}

function runRefOf(actor: SessionActorRef | null): AnyActorRef | undefined {
  return actor?.getSnapshot().children.run as AnyActorRef | undefined;
}

export interface ControlRequest {
  session: string;
  entry: SessionMemory;
  messageId: string;
  control: ControlCommand;
  setting: ResolvedQueueSetting;
  /** Who sent the command; absent: the session's anonymous user. */
  sender?: Sender | undefined;
  /** The session's actor, started if it is not running (a `/new` needs one). */
  actor(): SessionActorRef;
}

/**
 * Carries out a control command (`/queue …`, `/queue reset`, `/stop`, `/new`) at once and returns its
 * ack, which says what it did: `/stop` counts the waiting messages it dropped and names a running tool
 * that cannot be cancelled (it finishes first).
 *
 * @example
 * ```ts
 * const ack = applyControl({ session, entry, messageId: "m9", control: parseControl("/stop")!, setting, actor });
 * ack.text; // "Stopping the current reply."
 * ```
 */
export function applyControl(request: ControlRequest): Ack {
  const { entry, control } = request;
  let text: string;
  let disposition: SessionDecision["disposition"] = "control";
  const refusal = notOwnerRefusal(request);
  if (refusal) {
    return {
      session: request.session,
      messageId: request.messageId,
      disposition: "rejected",
      mode: request.setting.mode,
      modeSource: request.setting.modeSource,
      text: refusal,
      reason: `control: ${control.command} refused`,
    };
  }
  switch (control.command) {
    case "queue":
      entry.override = { ...(entry.override ?? {}), ...control.settings };
      text = `Queue settings for this session: ${JSON.stringify(entry.override)}.`;
      break;
    case "queue-reset":
      entry.override = null;
      text = "Queue settings for this session are back to the defaults.";
      break;
    case "stop":
      text = stop(entry.actor);
      break;
    case "new":
      request.actor().send({ type: "session.new" });
      text =
        "Starting a fresh conversation; earlier messages stay in the history but are no longer in context.";
      break;
    case "help":
      text = HELP_TEXT;
      break;
    case "invalid":
      disposition = "rejected";
      text = control.error;
      break;
  }
  return {
    session: request.session,
    messageId: request.messageId,
    disposition,
    // After `/queue`, the mode the session now has (not the one the command itself arrived under).
    ...(control.command === "queue" && control.settings.mode
      ? { mode: control.settings.mode, modeSource: "session" as const }
      : { mode: request.setting.mode, modeSource: request.setting.modeSource }),
    text,
    reason: `control: ${control.command}`,
  };
}

/**
 * `/stop` and `/new` from someone who does not own the running turn would end another person's work:
 * they need the `admin` scope. The refusal says so, and nothing changes.
 */
function notOwnerRefusal(request: ControlRequest): string | undefined {
  const { control, entry, sender } = request;
  if (control.command !== "stop" && control.command !== "new") return undefined;
  const pending = entry.actor?.getSnapshot().context.pending;
  if (pending?.kind !== "turn" || pending.messages.length === 0) return undefined;
  if (pending.messages.some((message) => sameSender(message.sender, sender))) return undefined;
  if (sender?.authority?.includes("admin")) return undefined;
  return `Not done: the running request is another person's, and /${control.command} on it needs the "admin" scope; nothing was stopped.`;
}

function stop(actor: SessionActorRef | null): string {
  const run = runViewOf(actor);
  // A reply already written is being sent: /stop cannot take it back, and says so.
  const delivering = actor?.getSnapshot().matches({ turn: "delivering" }) === true;
  let dropped = 0;
  const count = () => {
    dropped++;
  };
  // The session drops what waits in its queue, the run the steering it holds back.
  const counting = [actor?.on("message.dropped", count), runRefOf(actor)?.on("message.dropped", count)];
  actor?.send({ type: "session.stop" });
  for (const subscription of counting) subscription?.unsubscribe();
  const call = run?.context.pendingCalls[run.context.toolIndex];
  const stuck =
    run?.state.startsWith("toolBatch.toolRunning") &&
    call &&
    !run.context.input.cancellableTools.includes(call.name)
      ? ` ${call.name} cannot be cancelled, so it finishes first.`
      : "";
  if (run)
    return `Stopping the current reply${dropped ? ` and dropping ${dropped} waiting message(s)` : ""}.${stuck}`;
  const dropping = dropped ? `Dropped ${dropped} waiting message(s); ` : "";
  if (delivering) return `${dropping}${dropped ? "the" : "The"} reply already written is being delivered.`;
  return dropped ? `${dropping}nothing was running.` : "Nothing was running.";
}

/** What `/help` answers: the commands a chat user can type. */
export const HELP_TEXT =
  "Commands: /stop stops the current reply; /new (or /reset) starts a fresh conversation; " +
  "/queue steer|followup|collect|interrupt [debounce:2s] [cap:N] [drop:old|new|summarize] sets how " +
  "messages sent while I am busy are handled (/queue reset for the defaults); /help shows this.";
