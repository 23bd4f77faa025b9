-- Consumer inbox table for PostgreSQL (opt-in), generated from the sea-orm migration
-- in crates/outbox-seaorm (src/ddl/inbox.rs). Do not edit: regenerate with
--   OUTBOX_BLESS=1 cargo test -p outbox-seaorm --lib ddl
-- One row per (consumer, message id) processed; processed_at is UTC.

CREATE TABLE "outbox_inbox" ( "consumer" varchar(128) NOT NULL, "message_id" uuid NOT NULL, "processed_at" timestamp with time zone NOT NULL, PRIMARY KEY ("consumer", "message_id") );

CREATE INDEX "outbox_inbox_processed_at_idx" ON "outbox_inbox" ("processed_at");
