/**
 * The observability stream: every decision Tiller makes is one event. {@link TillerEventMap} is the
 * catalogue: each event name maps to its payload, documented where it is declared; {@link TillerEvent}
 * is derived from it as a discriminated union on `type`, so `switch (event.type)` narrows each case to
 * its own fields. The map joins one group per feature (`src/events/turn-events.ts`, `lane-events.ts`, ...);
 * `docs/events.md` is generated from them (`npm run docs`; `npm test` fails when it drifts).
 *
 * Names are dotted, a noun then what happened to it (`lane.started`, `recheck.fired`). Things that start
 * and end come in pairs, and the end is emitted on failure too (`turn.started`/`turn.ended`,
 * `model.called`/`model.ended`, `tool.started`/`tool.ended`, `lane.started`/`lane.ended`).
 *
 * Adding an event is one entry in its feature's group of {@link TillerEventMap}: its name, a TSDoc line that says when it is
 * emitted, and its fields (`InSession`/`InTurn` add `session`/`runId`). The emitters (`emit` of the
 * gateway and of the actors, the machines' `emitted` types, the lane scheduler's `onEvent`) accept it at
 * once; run `npm run docs` to update the catalogue.
 *
 * @example
 * ```ts
 * const hub = new EventHub();
 * const off = hub.subscribe((event) => {
 *   if (event.type === "recheck.fired") console.log(event.reason, event.pass);
 * });
 * hub.emit({ at: 0, type: "lane.resumed" });
 * off();
 * ```
 */

import type { CommitmentEventMap } from "./events/commitment-events.js";
import type { DeliveryEventMap } from "./events/delivery-events.js";
import type { GatewayEventMap } from "./events/gateway-events.js";
import type { InspectionEventMap } from "./events/inspection-events.js";
import type { LaneEventMap } from "./events/lane-events.js";
import type { TriggerEventMap } from "./events/trigger-events.js";
import type { TurnEventMap } from "./events/turn-events.js";

export type {
  InCommitment,
  InSession,
  InTurn,
  LaneTask,
  LaneWait,
  ModelCall,
  RecheckDecision,
  StoreOp,
  ToolCallFields,
} from "./events/event-fields.js";
export { EventHub, type EventListener } from "./events/event-hub.js";

/**
 * Every event name and its payload. Each event also carries `type` (its name) and `at` (milliseconds on
 * the gateway's clock).
 */
export interface TillerEventMap
  extends GatewayEventMap,
    TurnEventMap,
    DeliveryEventMap,
    CommitmentEventMap,
    LaneEventMap,
    TriggerEventMap,
    InspectionEventMap {}

/** An event's name. */
export type TillerEventType = keyof TillerEventMap;

/**
 * The event named `K`: its payload with `type` and `at`. `session` and `runId` may be read on any event:
 * they are set on every event about a session or a turn.
 */
export type TillerEventOf<K extends TillerEventType> = {
  type: K;
  /** Milliseconds on the gateway's clock. */
  at: number;
  session?: string | undefined;
  runId?: string | undefined;
} & TillerEventMap[K];

/** Any Tiller event: a union discriminated by `type`. */
export type TillerEvent = { [K in TillerEventType]: TillerEventOf<K> }[TillerEventType];

/** The lane scheduler's events (`onEvent` of `createLaneScheduler`). */
export type LaneEventType = Extract<TillerEventType, `lane.${string}`>;
/** The `lane.*` events: what the lane scheduler tells about its tasks. */
export type LaneEvent = Extract<TillerEvent, { type: LaneEventType }>;

/** What an emitter is given for the event named `K`: its payload (the emitter stamps `at`). */
export type TillerEventFields<K extends TillerEventType> = TillerEventMap[K];

/**
 * The events named `K` as a machine emits them: `type` and payload, without the `session` (and, for the
 * run's events, the `runId`) the gateway adds when it forwards them.
 */
export type EmittedEvent<K extends TillerEventType> = K extends TillerEventType
  ? { type: K; runId?: string } & Omit<TillerEventMap[K], "session" | "runId">
  : never;

/** An emitter of typed events: the gateway's and the actors' `emit`. */
export type EmitEvent = <K extends TillerEventType>(
  type: K,
  fields: TillerEventFields<K>,
  /** The event's time when it names a moment already read from the clock (default: now). */
  at?: number,
) => void;

/**
 * Builds the event named `type` from its payload, stamped `at`. The one place where a name and its
 * payload are joined, so TypeScript checks every emitter against the map.
 */
export function tillerEvent<K extends TillerEventType>(
  type: K,
  at: number,
  fields: TillerEventFields<K>,
): Extract<TillerEvent, { type: K }> {
  // TypeScript cannot relate a generic key to one member of the union it indexes; the signature does.
  return { at, type, ...fields } as unknown as Extract<TillerEvent, { type: K }>;
}

/**
 * Stamps an event a machine emitted with the session (and run) it belongs to. The machines' emitted
 * types are {@link EmittedEvent}s of this map, so the payload was checked where it was emitted.
 */
export function forwardedEvent(
  event: EmittedEvent<TillerEventType>,
  at: number,
  owner: { session: string; runId?: string | undefined },
): TillerEvent {
  // `runId` of a run's event comes from its owner: a union TypeScript cannot pair with the map's.
  return { at, ...event, ...owner } as TillerEvent;
}
