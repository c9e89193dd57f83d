import type { Grant } from "./cluster-db.js";

/** The channel a process LISTENs on for its grants (an identifier: at most 63 bytes). */
export function grantChannel(schema: string, processId: string): string {
  return `${schema.slice(0, 16)}_grant_${processId}`;
}

/**
 * The grants a claim of another process sent with its wake-up (claim_quick's NOTIFY), or undefined when
 * the payload carries none (a capacity group's pass, or too many to send): then the process asks
 * (myGrants). The lease (`leaseMs`: that of a grant to another process) ran from the grant, before the
 * wake-up: half of it is counted, the next renewal sets it again.
 */
export function toldGrants(payload: string, processId: string, leaseMs: number): Grant[] | undefined {
  if (payload === "") return undefined;
  try {
    const told = JSON.parse(payload) as unknown;
    if (!Array.isArray(told)) return undefined;
    return told.map((grant) => {
      const [id, localId, fence] = grant as [string, string, string];
      return {
        id: String(id),
        owner: processId,
        localId: Number(localId),
        fence: Number(fence),
        session: "",
        remainingMs: Math.floor(leaseMs / 2),
      };
    });
  } catch {
    return undefined;
  }
}
