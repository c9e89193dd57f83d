/** What every PostgreSQL adapter is given: where the database is, and the schema its tables live in. */
export interface PostgresConnectionOptions {
  /** A `postgres://` connection string. */
  url: string;
  /**
   * Schema of the tables (created by the migrations when absent). Lowercase letters, digits and `_`.
   * @default "tiller"
   */
  schema?: string;
  /**
   * Shown as `application_name` in `pg_stat_activity`.
   * @default "tiller" (the delivery log: "tiller deliveries"; the cluster sessions and lanes add the process id)
   */
  applicationName?: string;
  /** Pool size. @default 10 */
  poolSize?: number;
  /**
   * How long a new connection refused by a busy server (`max_connections` reached, the server still
   * starting) is tried again, with backoff, before the statement fails. A refused connection sent
   * nothing, so trying again is always safe. @default 5000
   */
  connectRetryMs?: number;
}
