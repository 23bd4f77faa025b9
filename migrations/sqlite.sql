-- Outbox tables for SQLite, generated from the sea-orm migration in
-- crates/outbox-seaorm (src/ddl.rs). Do not edit: regenerate with
--   OUTBOX_BLESS=1 cargo test -p outbox-seaorm --lib ddl
-- Lease expiry and heartbeats are BIGINT milliseconds since the Unix epoch (UTC).

CREATE TABLE "outbox_messages" ( "id" integer NOT NULL PRIMARY KEY AUTOINCREMENT, "message_id" uuid_text NOT NULL, "bucket" integer NOT NULL, "topic" varchar(249) NOT NULL, "key" blob NULL, "value" blob NULL, "headers" blob NULL, "partition" integer NULL, "created_at" timestamp_with_timezone_text NOT NULL );

CREATE INDEX "outbox_messages_bucket_id_idx" ON "outbox_messages" ("bucket", "id");

CREATE TABLE "outbox_leases" ( "bucket" integer NOT NULL PRIMARY KEY, "owner" varchar(128) NULL, "expires_at_ms" integer NOT NULL );

CREATE TABLE "outbox_relays" ( "relay_id" varchar(128) NOT NULL PRIMARY KEY, "last_seen_at_ms" integer NOT NULL );

-- The parked-rows table (outbox_seaorm::ParkedMigration): rows set aside after
-- permanent publish failures, and the rows of their keys held behind them.

CREATE TABLE "outbox_parked" ( "id" integer NOT NULL PRIMARY KEY, "message_id" uuid_text NOT NULL, "bucket" integer NOT NULL, "topic" varchar(249) NOT NULL, "key" blob NULL, "value" blob NULL, "headers" blob NULL, "partition" integer NULL, "created_at" timestamp_with_timezone_text NOT NULL, "error" text NULL, "attempts" integer NOT NULL, "first_failed_at_ms" integer NULL, "last_failed_at_ms" integer NULL, "held_behind" integer NULL, "parked_at_ms" integer NOT NULL );

CREATE INDEX "outbox_parked_bucket_id_idx" ON "outbox_parked" ("bucket", "id");
