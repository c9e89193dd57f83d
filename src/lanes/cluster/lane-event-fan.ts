import type { EmitEvent, TillerEvent } from "../../events.js";
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
    const event = {
      at: this.clock.now(),
      type,
      processId: this.processId,
      ...fields,
    } as unknown as TillerEvent;
    for (const listener of this.listeners) listener(event);
  };

  observe(listener: (event: TillerEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
