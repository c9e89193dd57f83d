import type pg from "pg";
import { GroupCommit } from "./group-commit.js";
import * as sql from "./session-sql.js";

/** One inbox row applied by this process, with the ack its receiver is told. */
interface Mark {
  session: string;
  id: string;
  ack: object;
}

/**
 * Group commit of the inbox's applied marks (see {@link GroupCommit}): the rows that sessions applied
 * while a batch was in flight are marked together, in one statement. Marking is idempotent (a row is
 * marked only once), so a failed batch is always tried again row by row.
 */
export class InboxMarks {
  private readonly batches = new GroupCommit<Mark>(
    (batch) => this.run(batch),
    () => true,
  );

  constructor(
    private readonly pool: pg.Pool,
    private readonly processId: string,
    /** The prefix of every process's inbox channel (its process id follows). */
    private readonly channelPrefix: string,
  ) {}

  /** Resolves once the row is marked applied with `ack` (or was marked already). */
  async applied(session: string, id: string, ack: object): Promise<void> {
    await this.batches.submit({ session, id, ack });
  }

  private async run(batch: readonly Mark[]): Promise<boolean[]> {
    await this.pool.query({
      ...sql.APPLIED_ALL,
      values: [
        batch.map((mark) => mark.id),
        batch.map((mark) => JSON.stringify(mark.ack)),
        this.processId,
        this.channelPrefix,
      ],
    });
    return batch.map(() => true);
  }
}
