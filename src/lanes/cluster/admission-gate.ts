import { createActor, type InspectionEvent } from "xstate";
import { laneSchedulerMachine } from "../../machines/lane-scheduler.machine.js";

/**
 * Open, draining or drained: the lane scheduler's admission machine, with the promises `drain()` hands
 * out. The cluster lanes admit work exactly as the in-process scheduler does.
 */
export class AdmissionGate {
  readonly actor;
  private waiters: Array<() => void> = [];

  constructor(inspect?: (event: InspectionEvent) => void) {
    this.actor = createActor(laneSchedulerMachine, inspect ? { inspect } : {});
    this.actor.start();
  }

  get isOpen(): boolean {
    return this.actor.getSnapshot().value === "open";
  }

  /** Stops admitting; resolves once `settled()` is told that nothing runs. True when it just closed. */
  drain(active: number): { closed: boolean; done: Promise<void> } {
    const closed = this.isOpen;
    if (closed) this.actor.send({ type: "lanes.drain" });
    const done = new Promise<void>((resolve) => this.waiters.push(resolve));
    this.settled(active);
    return { closed, done };
  }

  /** True when it was closed and now admits again. */
  resume(): boolean {
    if (this.isOpen) return false;
    this.actor.send({ type: "lanes.resume" });
    return true;
  }

  /** Called whenever the count of running tasks drops: drain() resolves once it is 0. */
  settled(active: number): void {
    if (active !== 0) return;
    if (this.actor.getSnapshot().value === "draining") this.actor.send({ type: "lanes.settled" });
    const waiters = this.waiters;
    this.waiters = [];
    for (const wake of waiters) wake();
  }
}
