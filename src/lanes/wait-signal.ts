import { type Entry, EntryExtras } from "./entry.js";

/**
 * How the in-process scheduler takes back a waiting task without an AbortSignal made for every task: a
 * caller puts a function under this key instead of `signal`, and the scheduler calls it only when the
 * task has to wait, inside `run()`; aborting the signal it returns (not aborted yet: the caller has
 * not left while it is still asking) then takes the entry back, as `signal` would. Most
 * tasks start inside `run()` and never need one (a signal costs more to make than the rest of the
 * request). Only a scheduler that carries the key itself reads it; any other takes `signal`.
 */
export const WAIT_SIGNAL: unique symbol = Symbol("tiller.waitSignal");

/** Run options with the lazily made signal of {@link WAIT_SIGNAL}. */
export interface WaitSignalOption {
  [WAIT_SIGNAL]?: () => AbortSignal;
}

/** A waiting entry's signal made now by its caller, if it gave one that way: it is the entry's caller signal. */
export function waitSignalOf(entry: Entry, options: object): AbortSignal | undefined {
  const signal = (options as WaitSignalOption)[WAIT_SIGNAL]?.();
  if (signal) entry.extras = new EntryExtras(undefined, signal);
  return signal;
}
