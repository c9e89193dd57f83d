/**
 * Counts the wake-ups a cluster lanes process receives on its grant channel (another process's claim
 * granted it rows), and how many grants they named; an empty wake-up makes the process ask. With the
 * runs it started, this says how many of its turns got their slot from another process's claim.
 * Wraps `pg.Client.prototype.emit` for the whole process; `start()` and `stop()` bound what counts.
 */
import pg from "pg";

type Emit = (this: pg.Client, event: string | symbol, ...args: unknown[]) => boolean;

export class WakeCounter {
  wakeUps = 0;
  toldGrants = 0;
  emptyWakeUps = 0;
  private counting = false;

  constructor() {
    const original = pg.Client.prototype.emit as unknown as Emit;
    const counter = this;
    (pg.Client.prototype as unknown as { emit: Emit }).emit = function (this: pg.Client, event, ...args) {
      if (counter.counting && event === "notification") counter.seen(args[0] as pg.Notification);
      return original.call(this, event, ...args);
    };
  }

  private seen(message: pg.Notification): void {
    if (!message.channel.includes("_grant_")) return;
    this.wakeUps++;
    const payload = message.payload ?? "";
    if (payload === "") this.emptyWakeUps++;
    else this.toldGrants += (JSON.parse(payload) as unknown[]).length;
  }

  start(): void {
    this.wakeUps = 0;
    this.toldGrants = 0;
    this.emptyWakeUps = 0;
    this.counting = true;
  }

  stop(): { wakeUps: number; toldGrants: number; emptyWakeUps: number } {
    this.counting = false;
    return { wakeUps: this.wakeUps, toldGrants: this.toldGrants, emptyWakeUps: this.emptyWakeUps };
  }
}
