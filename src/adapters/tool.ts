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
  /**
   * The tool only reads: a commitment review may call it to check the current state (a sheet, a
   * list, an artifact) before deciding. Tools without it are never offered to a review.
   * @default false
   */
  readOnly?: boolean;
  execute(args: Record<string, unknown>, context: ToolContext): Promise<unknown>;
}

export interface ToolContext {
  session: string;
  runId: string;
  callId: string;
  signal: AbortSignal;
}
