import type { CompiledTool } from "../adapters/tool-schema.js";
import type { TranscriptWriter } from "../adapters/transcript-writer.js";
import type { GatewayConfig } from "../config.js";
import type { EmitEvent } from "../events.js";
import type { LaneScheduler } from "../lanes/lane-scheduler.js";
import type { Logger } from "../logger.js";
import type { Channel } from "../ports/channel.js";
import type { Clock } from "../ports/clock.js";
import type { ModelProvider } from "../ports/model.js";
import type { SubagentOptions, ToolDefinition } from "../ports/tool.js";

/** What the gateway's actor logic needs: the adapters and a few shared registries. */
export interface ActorDeps {
  config: GatewayConfig;
  clock: Clock;
  logger: Logger;
  model: ModelProvider;
  tools: Map<string, ToolDefinition>;
  /** Each tool's schema, resolved once: what model calls are told and the check before `execute`. */
  toolSchemas: Map<string, CompiledTool>;
  /** The channel replies of the session go out on: `preferred` (a turn's own) when the gateway has it. */
  channelFor(session: string, preferred?: string): { name: string; channel: Channel };
  writer: TranscriptWriter;
  lanes: LaneScheduler;
  /** A run id that no earlier turn of the session used, in this process or before a restart. */
  newRunId(session: string): string;
  /** Runs a child turn for a tool of run `parent.runId` (ToolContext.runSubagent), below its `lane`. */
  runSubagent(
    parent: { session: string; runId: string; signal: AbortSignal; lane?: string },
    options: SubagentOptions,
  ): Promise<string>;
  /** The turns' streaming previews (`delivery.streaming`), which a final replaces; set by the gateway. */
  previews?: { take(runId: string): Promise<{ messageId: string } | undefined> };
  /** Emits an observability event stamped with the clock. */
  emit: EmitEvent;
  /**
   * A resumed turn keeps its trigger's priority instead of running in the background: set on a
   * cluster, where a resumed session is one taken over from a process that died (its users are live
   * and have waited a lease already), not a whole fleet restarting at once.
   */
  resumedKeepsPriority?: boolean;
  /** Stores a proposed commitment (the `commitment` tool); set by the gateway. */
  proposeCommitment?(
    session: string,
    args: unknown,
    origin: { source: string; runId?: string },
  ): Promise<unknown>;
  /** Resolves once the session's resume state holds everything its actor accepted (closes the window
   * between a message stored in the transcript and the state that says who answers it). */
  stateDurable?(session: string, messageIds: readonly string[]): Promise<void>;
}
