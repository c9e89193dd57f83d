import type { TestProject } from "vitest/node";
import { resolveTestDatabase } from "./postgres-server.js";

declare module "vitest" {
  export interface ProvidedContext {
    /** The database every PostgreSQL suite creates its own schema in. */
    postgresUrl: string;
  }
}

/** Finds (or starts) one PostgreSQL server for the whole run; suites read its URL with inject(). */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const database = await resolveTestDatabase();
  project.provide("postgresUrl", database.url);
  return () => database.stop();
}
