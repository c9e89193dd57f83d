import type pg from "pg";
import { appendAtHead } from "./append-at-head.js";
import { GroupCommit } from "./group-commit.js";
import { SAVE_STATES, type StateSave, saveCtes, saveValues } from "./state-saves.js";
import {
  APPEND_ALL_AT_HEAD,
  appendCtes,
  appendValues,
  type HeadAppend,
  rolledBack,
} from "./transcript-appends.js";

/** A write the store commits with other sessions' writes. */
type StoreWrite = ({ kind: "save" } & StateSave) | ({ kind: "append" } & HeadAppend);

/**
 * Saves and appends of different sessions in one statement: a turn's writes alternate between the two,
 * so a batch of either kind alone would leave the other kind waiting for the next commit.
 */
const SAVE_AND_APPEND = `WITH ${saveCtes(1)}, ${appendCtes(6)}
SELECT 's' AS kind, ord, ok FROM s_c
UNION ALL SELECT 'a', ord, true FROM a_moved`;

/**
 * Group commit of the store's state saves and transcript appends at known heads (see
 * {@link GroupCommit}): what sessions write while a batch is in flight is committed together, in one
 * statement. When a batch fails, a save is tried once more alone (saving a state twice writes the same
 * row); an append only when the database answered with an error, which rolled the statement back (after
 * a broken connection the batch may have committed, and an append written twice would duplicate records).
 */
export class StoreWrites {
  private readonly batches = new GroupCommit<StoreWrite>(
    (batch) => this.run(batch),
    (error, write) => write.kind === "save" || rolledBack(error),
  );

  constructor(private readonly pool: pg.Pool) {}

  /** True when the save went through; false when its tokens no longer hold (nothing written). */
  save(save: StateSave): Promise<boolean> {
    return this.batches.submit({ kind: "save", ...save });
  }

  /** True when the records were written; false when the head moved on or the token lost its lease. */
  append(append: HeadAppend): Promise<boolean> {
    return this.batches.submit({ kind: "append", ...append });
  }

  /** Runs one batch (GroupCommit hands it over sorted by key): whether each write went through, in order. */
  private async run(batch: readonly StoreWrite[]): Promise<boolean[]> {
    const saves: StateSave[] = [];
    const appends: HeadAppend[] = [];
    // Each write's place in its kind's list, so the answers come back in the batch's order.
    const place = batch.map((write) =>
      write.kind === "save" ? saves.push(write) - 1 : appends.push(write) - 1,
    );
    let saved: boolean[];
    let appended: boolean[];
    if (appends.length === 0) {
      const { rows } = await this.pool.query<{ ord: string; ok: boolean }>({
        // Prepared once per connection, as every statement here is.
        name: "tiller.saveStates",
        text: SAVE_STATES,
        values: saveValues(saves),
      });
      saved = answers(saves.length, rows);
      appended = [];
    } else if (saves.length === 0) {
      appended = await this.appendOnly(appends);
      saved = [];
    } else {
      const { rows } = await this.pool.query<{ kind: string; ord: string; ok: boolean }>({
        name: "tiller.saveAndAppend",
        text: SAVE_AND_APPEND,
        values: [...saveValues(saves), ...appendValues(appends)],
      });
      saved = answers(
        saves.length,
        rows.filter((row) => row.kind === "s"),
      );
      appended = answers(
        appends.length,
        rows.filter((row) => row.kind === "a"),
      );
    }
    return batch.map((write, index) => (write.kind === "save" ? saved : appended)[place[index]!]!);
  }

  private async appendOnly(appends: readonly HeadAppend[]): Promise<boolean[]> {
    if (appends.length === 1) {
      const only = appends[0]!;
      return [await appendAtHead(this.pool, only.session, only.fence, only.head, only.stamped)];
    }
    const { rows } = await this.pool.query<{ ord: string }>({
      name: "tiller.appendAllAtHead",
      text: APPEND_ALL_AT_HEAD,
      values: appendValues(appends),
    });
    return answers(appends.length, rows);
  }
}

/**
 * Whether each of `count` writes went through, from the rows that answer by place (`ord`, 1-based):
 * a row without `ok` names a write that went through.
 */
function answers(count: number, rows: readonly { ord: string; ok?: boolean }[]): boolean[] {
  const done = new Array<boolean>(count).fill(false);
  for (const row of rows) if (row.ok !== false) done[Number(row.ord) - 1] = true;
  return done;
}
