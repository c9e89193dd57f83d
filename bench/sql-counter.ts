/**
 * Counts what a process sends PostgreSQL, on the wire: statements (one round trip each), commits (an
 * explicit COMMIT, or a statement outside BEGIN … COMMIT) and of those the ones that wait for the
 * disk (a write on a connection without `synchronous_commit=off`), with a tally per statement text.
 * Wraps `pg.Client.prototype.query` for the whole process; `start()` and `stop()` bound what counts.
 */
import pg from "pg";

export interface SqlTally {
  statements: number;
  commits: number;
  durableCommits: number;
  byText: Map<string, number>;
}

type Query = (this: pg.Client, ...args: unknown[]) => unknown;
// The statement functions of migrations 11 and 12 write too (lane rows, the inbox, session owners,
// web deliveries).
const WRITE =
  /\b(INSERT|UPDATE|DELETE|pg_notify|nextval|inbox_accept|session_release|web_delivery_store|claim_quick)\b/i;
/** A whole transaction in one message (`BEGIN; …; COMMIT`): one commit. */
const WHOLE = /^BEGIN\s*;[\s\S]*;\s*COMMIT\s*;?$/i;

export class SqlCounter {
  readonly tally: SqlTally = { statements: 0, commits: 0, durableCommits: 0, byText: new Map() };
  private counting = false;
  /** Connections inside BEGIN …, and whether their transaction wrote. */
  private readonly open = new WeakMap<pg.Client, { wrote: boolean }>();
  lastStatementAt = 0;
  private readonly original = pg.Client.prototype.query as unknown as Query;

  constructor(private readonly trace = false) {
    const original = this.original;
    const counter = this;
    (pg.Client.prototype as unknown as { query: Query }).query = function (this: pg.Client, ...args) {
      counter.seen(this, args);
      return original.apply(this, args);
    };
  }

  /** Puts the driver back as it was. */
  uninstall(): void {
    (pg.Client.prototype as unknown as { query: Query }).query = this.original;
  }

  start(): void {
    this.tally.statements = 0;
    this.tally.commits = 0;
    this.tally.durableCommits = 0;
    this.tally.byText.clear();
    this.counting = true;
  }

  stop(): SqlTally {
    this.counting = false;
    return this.tally;
  }

  private seen(client: pg.Client, args: unknown[]): void {
    const first = args[0] as string | { text?: string } | undefined;
    const text = (typeof first === "string" ? first : (first?.text ?? "")).trim();
    const head = text.slice(0, 8).toUpperCase();
    this.lastStatementAt = performance.now();
    const durable = !String(
      (client as unknown as { connectionParameters: { options?: string } }).connectionParameters.options ??
        "",
    ).includes("synchronous_commit=off");
    const transaction = this.open.get(client);
    let commit: boolean | undefined; // undefined: not a commit; else whether it wrote
    if (WHOLE.test(text)) commit = WRITE.test(text);
    else if (head.startsWith("BEGIN")) this.open.set(client, { wrote: false });
    else if (head.startsWith("COMMIT")) {
      commit = transaction?.wrote ?? false;
      this.open.delete(client);
    } else if (head.startsWith("ROLLBACK")) this.open.delete(client);
    else if (transaction) transaction.wrote ||= WRITE.test(text);
    else if (!head.startsWith("LISTEN")) commit = WRITE.test(text);
    if (!this.counting) return;
    const label = text.replace(/\s+/g, " ").slice(0, 70);
    this.tally.statements++;
    this.tally.byText.set(label, (this.tally.byText.get(label) ?? 0) + 1);
    if (commit !== undefined) {
      this.tally.commits++;
      if (commit && durable) this.tally.durableCommits++;
    }
    if (this.trace) {
      const app = (client as unknown as { connectionParameters: { application_name?: string } })
        .connectionParameters.application_name;
      console.log(`${performance.now().toFixed(1)}\t${app}\t${label}`);
    }
  }
}
