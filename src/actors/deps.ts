import type { Channel } from "../adapters/channel.js";
import type { Clock } from "../adapters/clock.js";
import type { ModelProvider } from "../adapters/model.js";
import type { SubagentOptions, ToolDefinition } from "../adapters/tool.js";
import type { CompiledTool } from "../adapters/tool-schema.js";
import type { GatewayConfig } from "../config.js";
import type { EmitEvent } from "../events.js";
import type { TranscriptWriter } from "../gateway/transcript-writer.js";
import type { LaneScheduler } from "../lanes/lane-scheduler.js";
import type { Logger } from "../logger.js";

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
  /** Runs a child turn for a tool of run `parent.runId` (ToolContext.runSubagent). */
  runSubagent(
    parent: { session: string; runId: string; signal: AbortSignal },
    options: SubagentOptions,
  ): Promise<string>;
  /** Emits an observability event stamped with the clock. */
  emit: EmitEvent;
  /** Stores a proposed commitment (the `commitment` tool); set by the gateway. */
  proposeCommitment?(
    session: string,
    args: unknown,
    origin: { source: string; runId?: string },
  ): Promise<unknown>;
  /**
   * Per-run facts the machines do not carry: visible sends made by the `message` tool, and the channel
   * of the newest message the turn started with (its replies go there).
   */
  runFacts: Map<
    string,
    {
      messageSends: number;
      kind: "turn" | "recovery";
      channel?: string;
      /** What the turn's sends are named after (its messages, or the final it recovers). */
      turnKey?: string;
      /** Message-tool sends attempted so far in the turn. */
      sendOrdinal: number;
      trigger?: string;
      lane?: string;
    }
  >;
  /** Resolves once the session's resume state holds everything its actor accepted (closes the window
   * between a message stored in the transcript and the state that says who answers it). */
  stateDurable?(session: string, messageIds: readonly string[]): Promise<void>;
}
