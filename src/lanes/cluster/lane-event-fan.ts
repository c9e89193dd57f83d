import { type EmitEvent, type TillerEvent, tillerEvent } from "../../events.js";
import type { Clock } from "../../ports/clock.js";

/** The cluster lanes' events, stamped with the time and this process, fanned out to their observers. */
export class LaneEventFan {
  private readonly listeners = new Set<(event: TillerEvent) => void>();

  constructor(
    private readonly clock: Clock,
    private readonly processId: string,
    onEvent?: (event: TillerEvent) => void,
  ) {
    if (onEvent) this.listeners.add(onEvent);
  }

  readonly emit: EmitEvent = (type, fields) => {
    if (this.listeners.size === 0) return;
    // Which process saw it, as an extra field: several processes report on the same lanes.
    const event: TillerEvent = Object.assign(tillerEvent(type, this.clock.now(), fields), {
      processId: this.processId,
    });
    for (const listener of this.listeners) listener(event);
  };

  observe(listener: (event: TillerEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
