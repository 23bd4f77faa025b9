-- Consumer inbox table for MySQL / MariaDB (opt-in), generated from the sea-orm migration
-- in crates/outbox-seaorm (src/ddl/inbox.rs). Do not edit: regenerate with
--   OUTBOX_BLESS=1 cargo test -p outbox-seaorm --lib ddl
-- One row per (consumer, message id) processed; processed_at is UTC.

CREATE TABLE `outbox_inbox` ( `consumer` varchar(128) NOT NULL, `message_id` binary(16) NOT NULL, `processed_at` datetime(6) NOT NULL, PRIMARY KEY (`consumer`, `message_id`) ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE INDEX `outbox_inbox_processed_at_idx` ON `outbox_inbox` (`processed_at`);
