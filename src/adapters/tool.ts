/**
 * The tool port. `cancellable` tells the session whether an interrupt may stop the tool mid-way; a
 * tool that is not cancellable runs to its end, and acks say so. A call that has not settled after
 * `limits.toolTimeoutMs` is given up (a cancellable tool sees its signal abort), so a stuck tool
 * cannot hold its session forever.
 *
 * @example
 * ```ts
 * const readFile: ToolDefinition = {
 *   name: "read_file",
 *   cancellable: true,
 *   execute: async (args, { signal }) => fs.readFile(String(args.path), { encoding: "utf8", signal }),
 * };
 * ```
 */
export interface ToolDefinition {
  name: string;
  description?: string;
  cancellable: boolean;
  execute(args: Record<string, unknown>, context: ToolContext): Promise<unknown>;
}

export interface ToolContext {
  session: string;
  runId: string;
  callId: string;
  signal: AbortSignal;
  /** `recovery` for a turn that resends a reply the user never saw; otherwise `turn`. */
  turnKind?: "turn" | "recovery";
  /** The channel this turn's replies go out on. */
  channel?: string;
}
