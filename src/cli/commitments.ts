import { stat } from "node:fs/promises";
import { JsonlStore } from "../adapters/jsonl/jsonl-store.js";
import { COMMITMENT_STATUSES, type Commitment } from "../machines/commitment.types.js";
import { UsageError } from "../testing/paths-command.js";

export const COMMITMENTS_USAGE = `usage: tiller commitments list [--session KEY] [--status STATUS] --store DIR [--json]
       tiller commitments dismiss ID... --store DIR [--json]

  list     the commitments stored at DIR, oldest first
  dismiss  dismisses pending commitments (a gateway must not be running on DIR: the store is locked)`;

export { UsageError };

/**
 * \`tiller commitments list|dismiss\`: reads and changes the commitments of a JSONL store directly
 * (the store's lock keeps a running gateway and this command apart). Returns what to print.
 *
 * @example
 * ```ts
 * const out = await commitmentsCommand(["list", "--store", ".tiller", "--json"]);
 * ```
 */
export async function commitmentsCommand(args: string[]): Promise<string> {
  const [action, ...rest] = args;
  if (action !== "list" && action !== "dismiss") throw new UsageError(COMMITMENTS_USAGE);
  let storeDir: string | undefined;
  let json = false;
  let session: string | undefined;
  let status: string | undefined;
  const ids: string[] = [];
  for (let i = 0; i < rest.length; i++) {
    const arg = rest[i]!;
    const value = () => {
      const next = rest[++i];
      if (next === undefined || next.startsWith("--"))
        throw new UsageError(`${arg} needs a value\n${COMMITMENTS_USAGE}`);
      return next;
    };
    if (arg === "--store") storeDir = value();
    else if (arg === "--json") json = true;
    else if (arg === "--session" && action === "list") session = value();
    else if (arg === "--status" && action === "list") status = value();
    else if (arg.startsWith("--")) throw new UsageError(`unknown option ${arg}\n${COMMITMENTS_USAGE}`);
    else ids.push(arg);
  }
  if (!storeDir) throw new UsageError(`--store DIR is required\n${COMMITMENTS_USAGE}`);
  if (status !== undefined && !(COMMITMENT_STATUSES as readonly string[]).includes(status))
    throw new UsageError(`--status: expected one of ${COMMITMENT_STATUSES.join(", ")}, got ${status}`);
  if (action === "dismiss" && ids.length === 0)
    throw new UsageError(`dismiss needs at least one ID\n${COMMITMENTS_USAGE}`);
  if (action === "list" && ids.length > 0) throw new UsageError(`list takes no IDs (got ${ids.join(" ")})`);
  const info = await stat(storeDir).catch(() => undefined);
  if (!info?.isDirectory()) throw new UsageError(`--store: ${storeDir} is not a directory`);

  const store = await JsonlStore.openDir({ dir: storeDir });
  try {
    const all = await store.loadCommitments();
    if (action === "list") {
      const listed = all
        .filter(
          (c) =>
            (session === undefined || c.session === session) && (status === undefined || c.status === status),
        )
        .sort((a, b) => a.createdAt - b.createdAt);
      return json ? JSON.stringify(listed) : listed.map(line).join("\n") || "no commitments";
    }
    const byId = new Map(all.map((c) => [c.id, c]));
    const results: Array<{ id: string; status: string; changed: boolean; found: boolean }> = [];
    const changed: Commitment[] = [];
    for (const id of ids) {
      const current = byId.get(id);
      if (!current) {
        results.push({ id, status: "unknown", changed: false, found: false });
        continue;
      }
      // A send in flight when its gateway died is never undone here: a restart settles it.
      if (current.status === "pending" && !current.sending) {
        const now = Date.now();
        const next: Commitment = {
          ...current,
          status: "dismissed",
          dismissedWhy: "operator",
          updatedAt: now,
          endedAt: now,
        };
        changed.push(next);
        results.push({ id, status: "dismissed", changed: true, found: true });
      } else results.push({ id, status: current.status, changed: false, found: true });
    }
    if (changed.length > 0) await store.saveCommitments(changed);
    return json
      ? JSON.stringify(results)
      : results
          .map((r) =>
            r.found
              ? `${r.id}  ${r.changed ? "dismissed" : `unchanged (${r.status})`}`
              : `${r.id}  not found`,
          )
          .join("\n");
  } finally {
    await store.close();
  }
}

function line(c: Commitment): string {
  const extra =
    c.status === "pending"
      ? `due ${new Date(c.dueAt).toISOString()}`
      : c.status === "dismissed"
        ? `why ${c.dismissedWhy ?? "?"}`
        : c.status === "sent"
          ? `receipt ${c.sent?.receipt ?? "?"}`
          : "";
  return `${c.id}  ${c.status.padEnd(9)}  ${c.session}  ${c.kind}  ${c.classification ?? "-"}  ${extra}  ${JSON.stringify(c.reason)}`;
}
