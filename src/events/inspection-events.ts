/** Inspection and scenario events. Part of `TillerEventMap` (src/events.ts). */
export interface InspectionEventMap {
  // Inspection
  /**
   * A machine (`session`, `run`, `laneScheduler`) entered a new state: on the HTTP event stream only,
   * for the operator page's live diagrams (`cause` is the event that moved it).
   */
  state: {
    machine: string;
    session?: string;
    runId?: string;
    value: unknown;
    status: string;
    cause: string;
  };

  // Scenarios
  /** In a scenario's output only: the process was killed and a new gateway started on the same store. */
  "process.restarted": Record<never, never>;
}
