import { ConfigError, describe } from "../errors.js";
import type { LaneSnapshot } from "./lane-scheduler.types.js";
import { SESSION_PREFIX } from "./run-options.js";

// Capacity groups: several workload lanes sharing one budget (cron, subagents and background work
// together under one limit), checked once where the scheduler is built.

/** One capacity group as configured: its budget and its member lanes. */
export interface LaneGroupOptions {
  /** Tasks of the group's lanes that may run at once, all lanes together. Minimum: 1. */
  capacity: number;
  /** The workload lanes that share the budget; a lane belongs to at most one group. */
  lanes: string[];
}

/** A checked group: its name, budget and members. */
export interface LaneGroupSpec {
  name: string;
  capacity: number;
  lanes: readonly string[];
}

/**
 * Checks `groups` (the field named `field`) and returns each lane's group by lane name. A bad entry is
 * a ConfigError naming it: an empty or `session:` name, a capacity that is not an integer >= 1, no
 * lanes, a lane listed twice or in two groups.
 *
 * @example
 * ```ts
 * parseLaneGroups({ background: { capacity: 2, lanes: ["cron", "subagent"] } }).get("cron")?.name; // "background"
 * ```
 */
export function parseLaneGroups(groups: unknown, field = "groups"): Map<string, LaneGroupSpec> {
  const byLane = new Map<string, LaneGroupSpec>();
  if (groups === undefined) return byLane;
  if (groups === null || typeof groups !== "object" || Array.isArray(groups)) {
    throw new ConfigError(field, "an object of groups: { <name>: { capacity, lanes } }", groups);
  }
  for (const [name, raw] of Object.entries(groups)) {
    const at = `${field}.${name}`;
    if (name.length === 0 || name.startsWith(SESSION_PREFIX)) {
      throw new ConfigError(field, `group names that are not empty and not "${SESSION_PREFIX}..."`, name);
    }
    if (raw === null || typeof raw !== "object" || Array.isArray(raw)) {
      throw new ConfigError(at, "an object { capacity, lanes }", raw);
    }
    const { capacity, lanes, ...rest } = raw as Record<string, unknown>;
    const unknown = Object.keys(rest)[0];
    if (unknown !== undefined)
      throw new ConfigError(`${at}.${unknown}`, "no such field (capacity, lanes)", rest[unknown]);
    if (typeof capacity !== "number" || !Number.isInteger(capacity) || capacity < 1) {
      throw new ConfigError(`${at}.capacity`, "an integer >= 1", capacity);
    }
    if (!Array.isArray(lanes) || lanes.length === 0) {
      throw new ConfigError(`${at}.lanes`, "a non-empty array of workload lane names", lanes);
    }
    const spec: LaneGroupSpec = { name, capacity, lanes: [...lanes] };
    for (const lane of lanes) {
      if (typeof lane !== "string" || lane.length === 0 || lane.startsWith(SESSION_PREFIX)) {
        throw new ConfigError(`${at}.lanes`, 'workload lane names such as "cron"', lane);
      }
      const other = byLane.get(lane);
      if (other) {
        const where = other === spec ? "listed twice" : `already in group ${describe(other.name)}`;
        throw new ConfigError(`${at}.lanes`, `a lane in one group only (${lane} is ${where})`, lane);
      }
      byLane.set(lane, spec);
    }
  }
  return byLane;
}

/** The distinct groups of a lane → group map, in configuration order. */
export function groupsOf(byLane: ReadonlyMap<string, LaneGroupSpec>): LaneGroupSpec[] {
  return [...new Set(byLane.values())];
}

/** Each group's numbers from its lanes' (the cluster's counts): running, waiting, and its budget. */
export function groupCounts(
  byLane: ReadonlyMap<string, LaneGroupSpec>,
  lanes: Readonly<Record<string, { active: number; queued: number }>>,
): Record<string, { active: number; queued: number; capacity: number; lanes: string[] }> {
  const groups: Record<string, { active: number; queued: number; capacity: number; lanes: string[] }> = {};
  for (const spec of groupsOf(byLane)) {
    const counts = { active: 0, queued: 0, capacity: spec.capacity, lanes: [...spec.lanes] };
    for (const lane of spec.lanes) {
      counts.active += lanes[lane]?.active ?? 0;
      counts.queued += lanes[lane]?.queued ?? 0;
    }
    groups[spec.name] = counts;
  }
  return groups;
}

/** The snapshot with each group's numbers from its lanes' (when any group is configured). */
export function withGroups(snapshot: LaneSnapshot, byLane: ReadonlyMap<string, LaneGroupSpec>): LaneSnapshot {
  return byLane.size > 0 ? { ...snapshot, groups: groupCounts(byLane, snapshot.lanes) } : snapshot;
}
