import type { z } from "zod";
import type { Sender } from "./sender.js";

/** A JSON Schema object (draft-07 or 2020-12), as a model provider receives it. */
export type JsonSchema = { [keyword: string]: unknown };

/**
 * The tool port. `cancellable` tells the session whether an interrupt may stop the tool mid-way; a
 * tool that is not cancellable runs to its end, and acks say so. A call that has not settled after
 * `limits.toolTimeoutMs` is given up (a cancellable tool sees its signal abort), so a stuck tool
 * cannot hold its session forever. Arguments are checked against `parameters` before `execute`: a
 * call whose arguments do not fit is not executed, and the model gets a failed result naming the field.
 *
 * @example
 * ```ts
 * const readFile: ToolDefinition = {
 *   name: "read_file",
 *   description: "Read a UTF-8 text file of the workspace.",
 *   parameters: z.object({ path: z.string() }),   // or a JSON Schema object
 *   readOnly: true,
 *   cancellable: true,
 *   execute: async (args, { signal }) => fs.readFile(String(args.path), { encoding: "utf8", signal }),
 * };
 * ```
 */
export interface ToolDefinition {
  name: string;
  /** What the tool does, as the model reads it. @default "" */
  description?: string;
  /**
   * The arguments: a JSON Schema object whose root is an object, or a zod 4 schema (sent to the model
   * as zod's own JSON Schema output, and checked with zod itself, so refinements and defaults apply).
   * @default an open object schema: any arguments
   */
  parameters?: JsonSchema | z.ZodType;
  /**
   * Safe to call during a commitment review: it only reads (a sheet, a list, an artifact). Tools
   * without it are never offered to a review. @default false
   */
  readOnly?: boolean;
  /**
   * Scopes the turn's authority must hold (the intersection of its senders' `authority`): a call the
   * turn does not cover is refused without running, and the model reads who lacks which scope.
   */
  requires?: string[];
  cancellable: boolean;
  execute(args: Record<string, unknown>, context: ToolContext): Promise<unknown>;
}

/** What a model call is told about one tool: `ModelRequest.tools` holds one per tool it may call. */
export interface ToolSpec {
  name: string;
  description: string;
  /** JSON Schema of the arguments; its root is an object. */
  parameters: JsonSchema;
}

/** What a tool's `execute` is given besides its arguments: the session, the sender, the abort signal. */
export interface ToolContext {
  session: string;
  runId: string;
  callId: string;
  signal: AbortSignal;
  /** `recovery` for a turn that resends a reply the user never saw; otherwise `turn`. */
  turnKind?: "turn" | "recovery";
  /** The channel this turn's replies go out on. */
  channel?: string;
  /**
   * What the turn's visible sends are named after (its messages, or the final a recovery turn resends):
   * the same when the turn is re-run after a crash. Set by the gateway.
   */
  turnKey?: string;
  /**
   * Claims the next place (1, 2, ...) among the turn's visible sends. With `turnKey` it names a send
   * durably, so a channel drops one the user already has. Set by the gateway.
   */
  nextSendOrdinal?(): number;
  /** Who the turn's messages come from (empty: the session's anonymous user alone); set by the gateway. */
  senders?: Sender[];
  /**
   * Runs a child turn (a subagent) under the session key `<session>:sub:<n>`, in the `subagent` lane
   * (`cron-nested` under a scheduled turn), and resolves with its final text; it rejects when the child
   * fails or is cancelled. Its reply is never sent to the user: it is this tool's to use. The child is
   * cancelled when `signal` aborts, so a tool that runs subagents should be `cancellable`. The gateway
   * always provides it; it is optional in the type so contexts built by hand in tests still fit.
   *
   * @example
   * ```ts
   * execute: async (args, context) => context.runSubagent!({ text: `Research: ${args.topic}`, tools: ["search"] })
   * ```
   */
  runSubagent?(options: SubagentOptions): Promise<string>;
}

export interface SubagentOptions {
  /** The child's task, as its model reads it. */
  text: string;
  /** The tools the child may call. @default all of the gateway's tools */
  tools?: string[];
}
