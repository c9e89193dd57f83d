import type { GatewayConfig } from "../../config.js";
import type { EmitEvent } from "../../events.js";
import type { Logger } from "../../logger.js";
import type { SessionCluster } from "../../ports/session-cluster.js";
import type { Ack } from "./compose-ack.js";
import type { TriggerAck, TriggerExtras, TriggerRequest } from "./trigger.js";
import type { InboundMessage } from "./validate-inbound.js";

export interface ClusterInboxDeps {
  cluster: SessionCluster;
  config: GatewayConfig;
  channelNames: readonly string[];
  /**
   * The one-process receive: applies a message to the session here, as a local message; `arrivedAt`:
   * when the process that received it took it in (its clock), kept as the user record's `arrivedAt`.
   */
  local(inbound: InboundMessage, arrivedAt?: number): Promise<Ack>;
  /** The one-process `trigger()`: starts a turn nobody typed in the session here. */
  localTrigger(request: TriggerRequest, extras?: TriggerExtras): Promise<TriggerAck>;
  /** Makes the session's stored state (turn, queue, settings) this process's, before its messages. */
  adopt(session: string): Promise<void>;
  /** Nothing runs or waits for the session here: its ownership may go. */
  isIdle(session: string): boolean;
  /** Resolves once the session's newest state is durable. */
  settle(session: string): Promise<void>;
  /** Another process may own the session now: its live state here goes (the store is the truth). */
  forgetLive(session: string): void;
  isDraining(): boolean;
  /** The gateway's clock: the time a message arrived here, which its inbox row carries to the owner. */
  now(): number;
  emit: EmitEvent;
  logger: Logger;
}

export interface ClusterInbox {
  receive(inbound: InboundMessage): Promise<Ack>;
  /**
   * `trigger()` for a gateway of several processes: the turn is a row of the session's inbox, like a
   * message, so it runs where the session is owned (a steer sent to any process reaches it there) and
   * an id triggered on several processes (a schedule's slot, which every process fires) runs once.
   */
  trigger(request: TriggerRequest): Promise<TriggerAck>;
  /**
   * Starts a subagent's task in its child session here, the parent's process: the child's key becomes
   * this process's (with a fence) through the inbox, so messages sent to it on any process reach it
   * here, and it is given up once the child is idle. A child key another process owns is refused.
   */
  startChild(request: TriggerRequest, extras: TriggerExtras): Promise<TriggerAck>;
  /** The session went idle here: give it up (or apply what waits for it first). */
  idle(session: string): void;
  /** Starts applying forwarded messages and taking sessions over. */
  start(): void;
  stop(): void;
}
