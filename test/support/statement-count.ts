import pg from "pg";
import { vi } from "vitest";

/**
 * Runs `work` and counts the statements every connection sends meanwhile (with `name`: only the
 * prepared statements of that name, so other traffic, a receiver's reads say, does not count).
 */
export async function countStatements<T>(
  work: () => Promise<T>,
  name?: string,
): Promise<{ result: T; count: number }> {
  let count = 0;
  const query = pg.Client.prototype.query;
  const spy = vi.spyOn(pg.Client.prototype, "query").mockImplementation(function (
    this: pg.Client,
    ...args: unknown[]
  ) {
    if (name === undefined || (args[0] as { name?: string } | undefined)?.name === name) count++;
    return (query as (...a: unknown[]) => unknown).apply(this, args) as never;
  });
  try {
    const result = await work();
    return { result, count };
  } finally {
    spy.mockRestore();
  }
}
