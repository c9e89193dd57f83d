import type pg from "pg";

/**
 * Sends `text`, several statements in one message (one round trip), and returns one result per
 * statement. node-postgres answers such a query with an array of results, though its type names one;
 * the count is checked, so a changed statement list fails loudly instead of reading the wrong result.
 */
export async function queryStatements<R extends pg.QueryResultRow>(
  client: pg.ClientBase,
  text: string,
  count: number,
): Promise<pg.QueryResult<R>[]> {
  const results: unknown = await client.query(text);
  if (!Array.isArray(results) || results.length !== count)
    throw new Error(
      `expected ${count} statement results, got ${Array.isArray(results) ? results.length : "one"}`,
    );
  return results as pg.QueryResult<R>[];
}
