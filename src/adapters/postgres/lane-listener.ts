import pg from "pg";
import type { Clock, TimerHandle } from "../../ports/clock.js";

export interface LaneListenerOptions {
  config: pg.ClientConfig;
  channels: string[];
  clock: Clock;
  /** A NOTIFY arrived on one of the channels (with its payload, empty when none). */
  onNotify: (channel: string, payload: string) => void;
  /** Listening again after the connection was lost: notifications may have been missed meanwhile. */
  onReconnect: () => void;
  /** Wait before reconnecting. @default 250 */
  retryMs?: number;
}

/**
 * One dedicated connection that LISTENs (a pooled one cannot: LISTEN belongs to a session). NOTIFY is
 * only a wake-up: the rows are the truth, and the callers poll as well, so a lost connection costs
 * latency, never correctness. Reconnects until closed.
 *
 * @example
 * ```ts
 * const listener = new LaneListener({ config, channels: ["s_grant_p1"], clock, onNotify, onReconnect });
 * await listener.start();
 * ```
 */
export class LaneListener {
  private client: pg.Client | undefined;
  private closed = false;
  private retry: TimerHandle | undefined;
  /** The channels listened on now, and again after a reconnect. */
  private readonly channels: Set<string>;

  constructor(private readonly options: LaneListenerOptions) {
    this.channels = new Set(options.channels);
  }

  async start(): Promise<void> {
    await this.connect();
  }

  private async connect(): Promise<void> {
    const client = new pg.Client(this.options.config);
    client.on("notification", (message) => this.options.onNotify(message.channel, message.payload ?? ""));
    client.on("error", () => this.lost(client));
    client.on("end", () => this.lost(client));
    this.client = client;
    await client.connect();
    // A channel given up meanwhile is not listened on again (statements on one client run in order).
    for (const channel of [...this.channels])
      if (this.channels.has(channel)) await client.query(`LISTEN "${channel}"`);
  }

  /**
   * Listens on one more channel from now on. Resolves once the LISTEN is in effect, or once it failed
   * with the connection (the reconnect listens again, then calls `onReconnect`).
   */
  async listen(channel: string): Promise<void> {
    this.channels.add(channel);
    await this.client?.query(`LISTEN "${channel}"`).catch(() => {});
  }

  /** Stops listening on a channel (its notifications are no longer sent to this connection). */
  async unlisten(channel: string): Promise<void> {
    this.channels.delete(channel);
    await this.client?.query(`UNLISTEN "${channel}"`).catch(() => {});
  }

  private lost(client: pg.Client): void {
    if (this.closed || this.client !== client || this.retry) return;
    this.client = undefined;
    client.end().catch(() => {});
    this.retry = this.options.clock.setTimeout(() => {
      this.retry = undefined;
      this.connect().then(
        () => this.options.onReconnect(),
        () => this.client && this.lost(this.client),
      );
    }, this.options.retryMs ?? 250);
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.retry) this.options.clock.clearTimeout(this.retry);
    await this.client?.end().catch(() => {});
  }
}
