import { CLAIM_QUICK_FUNCTION } from "./claim-quick-function.js";
import { CLAIM_WALK_FUNCTION } from "./claim-walk-function.js";
import { ENQUEUE_CLAIM_FUNCTION } from "./enqueue-claim-function.js";
import { INBOX_ACCEPT_OLDER_FUNCTION } from "./inbox-accept-older-function.js";
import { STATEMENT_FUNCTIONS } from "./statement-functions.js";

/**
 * The schema, as numbered migrations. Each runs once, in order, inside one transaction, under a
 * database-wide advisory lock (see migrate.ts), and is recorded in `tiller_migrations`. A migration is
 * never edited once released: changes come as a new, higher number. Names are unqualified: every
 * connection of a store or lane adapter sets `search_path` to its schema.
 */
export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: "transcripts and session state",
    sql: `
CREATE TABLE sessions (
  session_key      text PRIMARY KEY,
  session_id       text NOT NULL,
  revision         integer NOT NULL DEFAULT 1,
  -- seq of the last record; the next append takes last_seq + 1 (the row lock orders appends)
  last_seq         bigint NOT NULL DEFAULT 0,
  -- the context window holds the records with seq > window_after_seq
  window_after_seq bigint NOT NULL DEFAULT 0,
  created_at       timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE transcript (
  session_key text NOT NULL REFERENCES sessions (session_key),
  seq         bigint NOT NULL,
  record_id   text NOT NULL UNIQUE,
  revision    integer NOT NULL,
  role        text NOT NULL,
  -- for an undelivered-final marker: the seq of the final it marks (details.finalSeq, else seq - 1)
  marks_seq   bigint,
  -- the record exactly as appended (JSON text: jsonb would refuse some strings a record may carry)
  body        text NOT NULL,
  PRIMARY KEY (session_key, seq)
);
CREATE TABLE session_state (
  session_key text PRIMARY KEY,
  state       text NOT NULL,
  updated_at  timestamptz NOT NULL DEFAULT now()
);`,
  },
  {
    version: 2,
    name: "cluster lanes, processes and session ownership",
    sql: `
CREATE TABLE processes (
  process_id  text PRIMARY KEY,
  started_at  timestamptz NOT NULL DEFAULT now(),
  -- renewed by the heartbeat; past it the process counts as dead and its waiting work is dropped
  alive_until timestamptz NOT NULL,
  info        jsonb NOT NULL DEFAULT '{}'
);
CREATE TABLE lane_capacity (
  lane     text PRIMARY KEY,
  capacity integer NOT NULL CHECK (capacity >= 0)
);
CREATE SEQUENCE fence_seq;
CREATE TABLE lane_runs (
  id          bigserial PRIMARY KEY,
  lane        text NOT NULL,
  session_key text NOT NULL,
  -- 0 foreground, 1 normal, 2 background
  priority    smallint NOT NULL,
  state       text NOT NULL CHECK (state IN ('queued', 'active')),
  -- the process that enqueued the task and runs it, and the task's id there
  owner       text NOT NULL,
  local_id    bigint NOT NULL,
  -- from fence_seq at each grant: every write the run makes carries it
  fence       bigint,
  lease_until timestamptz,
  enqueued_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  started_at  timestamptz
);
-- at most one active run per session, cluster-wide, enforced by the database itself
CREATE UNIQUE INDEX lane_runs_one_active ON lane_runs (session_key) WHERE state = 'active';
-- a session's queue, oldest first (its head is the only row of it that may start)
CREATE INDEX lane_runs_queued ON lane_runs (session_key, id) WHERE state = 'queued';
CREATE INDEX lane_runs_queued_lane ON lane_runs (lane) WHERE state = 'queued';
CREATE INDEX lane_runs_active ON lane_runs (lane) WHERE state = 'active';
CREATE INDEX lane_runs_owner ON lane_runs (owner);
CREATE TABLE session_owners (
  session_key text PRIMARY KEY,
  owner       text NOT NULL,
  fence       bigint NOT NULL,
  lease_until timestamptz NOT NULL
);`,
  },
  {
    version: 3,
    name: "inbox, follow-ups, deliveries, commitments, dedupe windows",
    sql: `
-- every accepted inbound message, committed before its ack; the owner drains it (steers at the next
-- tool-batch boundary, follow-ups as their own turns); NOTIFY only wakes the owner
CREATE TABLE inbox (
  id          bigserial PRIMARY KEY,
  session_key text NOT NULL,
  message_id  text NOT NULL,
  -- steer | followup | collect | interrupt | control
  mode        text NOT NULL,
  body        jsonb NOT NULL,
  received_by text NOT NULL,
  received_at timestamptz NOT NULL DEFAULT now(),
  -- the run that showed it to the model (NULL while waiting)
  taken_by    text,
  taken_at    timestamptz,
  UNIQUE (session_key, message_id)
);
CREATE INDEX inbox_waiting ON inbox (session_key, id) WHERE taken_at IS NULL;
-- turns waiting for their own run (follow-ups, collected bursts, recoveries), durable across crashes
CREATE TABLE follow_ups (
  id          bigserial PRIMARY KEY,
  session_key text NOT NULL,
  kind        text NOT NULL,
  message_ids text[] NOT NULL DEFAULT '{}',
  payload     jsonb NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX follow_ups_session ON follow_ups (session_key, id);
-- a durable 'sending' intent is written before a channel is called; its receipt next to it after
CREATE TABLE delivery_intents (
  delivery_id text PRIMARY KEY,
  session_key text NOT NULL,
  kind        text NOT NULL,
  payload     jsonb NOT NULL,
  fence       bigint,
  created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX delivery_intents_session ON delivery_intents (session_key);
CREATE TABLE delivery_receipts (
  delivery_id  text PRIMARY KEY REFERENCES delivery_intents (delivery_id),
  message_id   text NOT NULL,
  receipt      jsonb NOT NULL DEFAULT '{}',
  committed_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE commitments (
  id          text PRIMARY KEY,
  session_key text NOT NULL,
  dedupe_key  text NOT NULL,
  status      text NOT NULL CHECK (status IN ('pending', 'sent', 'dismissed', 'expired')),
  due_at      timestamptz NOT NULL,
  payload     jsonb NOT NULL,
  -- claimed once cluster-wide (FOR UPDATE SKIP LOCKED) by the process that reviews it
  claimed_by  text,
  claimed_at  timestamptz,
  sent_at     timestamptz,
  created_at  timestamptz NOT NULL DEFAULT now(),
  UNIQUE (session_key, dedupe_key)
);
CREATE INDEX commitments_due ON commitments (due_at, id) WHERE status = 'pending' AND claimed_by IS NULL;
CREATE INDEX commitments_sent ON commitments (session_key, sent_at) WHERE sent_at IS NOT NULL;
-- message ids seen per session within the dedupe window: a redelivery is acked as duplicate
CREATE TABLE dedupe_windows (
  session_key text NOT NULL,
  message_id  text NOT NULL,
  seen_at     timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (session_key, message_id)
);
CREATE INDEX dedupe_windows_age ON dedupe_windows (seen_at);`,
  },
  {
    version: 4,
    name: "schedule states",
    sql: `
-- the next run time of each configured schedule, so a restart neither repeats nor skips a slot
CREATE TABLE schedule_state (
  schedule_id text PRIMARY KEY,
  state       jsonb NOT NULL,
  updated_at  timestamptz NOT NULL DEFAULT now()
);`,
  },
  {
    version: 5,
    name: "commitments as the store keeps them",
    sql: `
-- Version 3's table was never written to. A commitment is opaque JSON to the store, and the gateway
-- may hold two pending commitments of one dedupe key (a new one made while the other's send is in
-- flight, whose send then fails): no uniqueness on (session_key, dedupe_key).
DROP TABLE commitments;
CREATE TABLE commitments (
  id            text PRIMARY KEY,
  -- the order commitments were first stored in (a new version keeps its row's place)
  stored_order  bigserial NOT NULL,
  -- copied from the record (NULL when it has no such field): what the claim and operators query
  session_key   text,
  dedupe_key    text,
  status        text,
  -- ms on the gateway's clock
  due_ms        double precision,
  -- the record carries a durable 'sending' intent: never claimed again
  sending       boolean NOT NULL DEFAULT false,
  sent_ms       double precision,
  -- the record exactly as saved (JSON text)
  body          text NOT NULL,
  -- claimed once cluster-wide (FOR UPDATE SKIP LOCKED) by the process that reviews it, until
  -- claimed_until_ms (gateway clock): a dead claimer's claim is retaken after it
  claimed_by    text,
  claimed_until_ms double precision,
  updated_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX commitments_order ON commitments (stored_order);
CREATE INDEX commitments_due ON commitments (due_ms, id) WHERE status = 'pending' AND NOT sending;
CREATE INDEX commitments_key ON commitments (session_key, dedupe_key) WHERE status = 'pending';`,
  },
  {
    version: 6,
    name: "inbox acks for messages steered across processes",
    sql: `
-- the ack of the owner that applied the message, read by the process that received it
ALTER TABLE inbox ADD COLUMN ack jsonb;
-- the sessions one process owns (its renewal, its leaving)
CREATE INDEX session_owners_owner ON session_owners (owner);`,
  },
  {
    version: 7,
    name: "web channel deliveries shared by the cluster",
    sql: `
-- what the web channel delivered, per session, read by the deliveries stream of every process
CREATE TABLE web_deliveries (
  session_key text NOT NULL,
  -- gap-free per session (1, 2, …): the order of the stream
  seq         bigint NOT NULL,
  -- the receipt's id and the SSE event id: "<seq>-<random>"
  message_id  text NOT NULL,
  -- the gateway's id of the logical delivery: a second send with it is not a second delivery
  delivery_id text,
  kind        text NOT NULL,
  text        text NOT NULL,
  run_id      text,
  -- wall-clock ms of the store
  at_ms       double precision NOT NULL,
  PRIMARY KEY (session_key, seq)
);
CREATE UNIQUE INDEX web_deliveries_message ON web_deliveries (session_key, message_id);
CREATE UNIQUE INDEX web_deliveries_delivery ON web_deliveries (session_key, delivery_id)
  WHERE delivery_id IS NOT NULL;
-- each session's last seq: its row lock serializes the session's appends across processes
CREATE TABLE web_delivery_heads (
  session_key text PRIMARY KEY,
  last_seq    bigint NOT NULL
);`,
  },
  {
    version: 8,
    name: "commitment change feed and per-session send counts",
    sql: `
-- the commitments' change counter: a write takes the next value under this row's lock, held until it
-- commits, so values become visible in the order they were taken and a reader that saw value N has
-- seen every write numbered N or less (a sequence would not do: its values are taken before commit)
CREATE TABLE commitment_changes (
  id       smallint PRIMARY KEY CHECK (id = 1),
  last_seq bigint NOT NULL
);
INSERT INTO commitment_changes (id, last_seq) VALUES (1, 1);
-- the change_seq of the write that made the row's current version: a heartbeat reads only the rows
-- above the last value it saw (rows stored before this migration all start at 1)
ALTER TABLE commitments ADD COLUMN change_seq bigint NOT NULL DEFAULT 1;
ALTER TABLE commitments ALTER COLUMN change_seq DROP DEFAULT;
CREATE INDEX commitments_change ON commitments (change_seq);
-- a session's sends in the rolling 24 h, counted by the claim against commitments.maxPerDay (its
-- commitments in flight are found through commitments_key)
CREATE INDEX commitments_sent ON commitments (session_key, sent_ms) WHERE sent_ms IS NOT NULL;`,
  },
  {
    version: 9,
    name: "waiting lane rows by priority class",
    sql: `
-- the claim's quick path reads the oldest waiting rows of each priority class of a lane
CREATE INDEX lane_runs_queued_class ON lane_runs (lane, priority, id) WHERE state = 'queued';`,
  },
  {
    version: 10,
    name: "claims of sends",
    sql: `
-- who calls the channel for a delivery: one process at a time, and nobody once it landed ('sent'); a
-- 'sending' claim not renewed by lease_until (its process died or was cut off) may be taken by another
CREATE TABLE delivery_claims (
  session_key text NOT NULL,
  delivery_id text NOT NULL,
  owner       text NOT NULL,
  state       text NOT NULL CHECK (state IN ('sending', 'sent', 'failed', 'unknown')),
  message_id  text,
  lease_until timestamptz NOT NULL,
  settled_at  timestamptz,
  PRIMARY KEY (session_key, delivery_id)
);
CREATE INDEX delivery_claims_settled ON delivery_claims (settled_at) WHERE settled_at IS NOT NULL;`,
  },
  {
    version: 11,
    name: "the lanes' quick claim as a function",
    // One statement per claim whose inner plans each connection keeps (see claim-quick-function.ts).
    sql: CLAIM_QUICK_FUNCTION,
  },
  STATEMENT_FUNCTIONS,
  {
    version: 13,
    name: "sessions whose state holds work, indexed",
    // Every process looks for sessions left with work and no owner twice a second (ORPHANS in
    // session-sql.ts): it parsed every session's state, 150 ms a look at 100k sessions. The state says
    // once, when written, whether it holds a queue or a pending turn; the index holds only those few,
    // and the column's statistics tell the planner how few.
    sql: `
ALTER TABLE session_state ADD COLUMN has_work boolean GENERATED ALWAYS AS (
  coalesce(state::jsonb -> 'pending', 'null'::jsonb) <> 'null'::jsonb
  OR jsonb_array_length(coalesce(state::jsonb -> 'queue', '[]'::jsonb)) > 0) STORED;
CREATE INDEX session_state_has_work ON session_state (session_key) WHERE has_work;`,
  },
  ENQUEUE_CLAIM_FUNCTION,
  INBOX_ACCEPT_OLDER_FUNCTION,
  CLAIM_WALK_FUNCTION,
];
