import type { LaneWait } from "../events.js";
import type { Entry } from "./entry.js";
import type { QueueLinks } from "./wait-list.js";

/**
 * Where a waiting (or starting) entry stands, for `lane.waitExceeded` and `lane.started`: its lane and
 * session, how long it waited, what it waits for, and how many entries are ahead of and behind it.
 * `memo` shares queue positions across one sweep, so warning about a large backlog stays linear.
 */
export function waitFields(
  entry: Entry,
  starting: boolean,
  now: number,
  memo?: Map<QueueLinks, number>,
): LaneWait {
  const lane = entry.lane;
  let queueAhead = 0;
  let activeAhead = lane.active;
  let queueBehind = 0;
  if (!starting) {
    if (entry.state === "waitingForSession") {
      const session = entry.sessionLane!;
      queueAhead = session.waiting.countAhead(entry, memo);
      queueBehind = session.waiting.size - queueAhead - 1;
      // The session's holder is ahead of this entry: running, or itself still waiting for a slot.
      const holderRuns = session.holder?.state === "running" || session.holder?.state === "stopping";
      activeAhead = holderRuns ? 1 : 0;
      if (session.holder && !holderRuns) queueAhead++;
    } else {
      queueAhead = lane.waiting.countAhead(entry, memo);
      queueBehind = lane.waiting.size - queueAhead - 1;
    }
  }
  // A slot its lane has free may still be out of its capacity group's budget.
  const group =
    !starting && entry.state !== "waitingForSession" && lane.group && lane.group.active >= lane.group.capacity
      ? { name: lane.group.name, capacity: lane.group.capacity, activeNow: lane.group.active }
      : undefined;
  return {
    lane: lane.name,
    session: entry.sessionLane?.key,
    entryId: entry.id,
    waitedMs: now - entry.enqueuedAt,
    waitingFor: entry.state === "waitingForSession" ? "session" : "slot",
    starting,
    queueAhead,
    activeAhead,
    activeNow: lane.active,
    queueBehind,
    ...(group ? { group } : {}),
  };
}
