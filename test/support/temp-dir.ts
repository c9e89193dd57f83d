import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach } from "vitest";

/**
 * A fresh empty directory for each test of the enclosing `describe` (removed after it): read `.path`
 * inside a test.
 */
export function useTempDir(prefix: string): { readonly path: string } {
  let path = "";
  beforeEach(async () => {
    path = await mkdtemp(join(tmpdir(), `${prefix}-`));
  });
  afterEach(async () => {
    await rm(path, { recursive: true, force: true });
  });
  return {
    get path() {
      return path;
    },
  };
}
