-- Outbox tables for MySQL / MariaDB, generated from the sea-orm migration in
-- crates/outbox-seaorm (src/ddl.rs). Do not edit: regenerate with
--   OUTBOX_BLESS=1 cargo test -p outbox-seaorm --lib ddl
-- Lease expiry and heartbeats are BIGINT milliseconds since the Unix epoch (UTC).

CREATE TABLE `outbox_messages` ( `id` bigint NOT NULL PRIMARY KEY AUTO_INCREMENT, `message_id` binary(16) NOT NULL, `bucket` int NOT NULL, `topic` varchar(249) NOT NULL, `key` longblob NULL, `value` longblob NULL, `headers` longblob NULL, `partition` int NULL, `created_at` datetime(6) NOT NULL ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE INDEX `outbox_messages_bucket_id_idx` ON `outbox_messages` (`bucket`, `id`);

CREATE TABLE `outbox_leases` ( `bucket` int NOT NULL PRIMARY KEY, `owner` varchar(128) NULL, `expires_at_ms` bigint NOT NULL ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE `outbox_relays` ( `relay_id` varchar(128) NOT NULL PRIMARY KEY, `last_seen_at_ms` bigint NOT NULL ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- The parked-rows table (outbox_seaorm::ParkedMigration): rows set aside after
-- permanent publish failures, and the rows of their keys held behind them.

CREATE TABLE `outbox_parked` ( `id` bigint NOT NULL PRIMARY KEY, `message_id` binary(16) NOT NULL, `bucket` int NOT NULL, `topic` varchar(249) NOT NULL, `key` longblob NULL, `value` longblob NULL, `headers` longblob NULL, `partition` int NULL, `created_at` datetime(6) NOT NULL, `error` text NULL, `attempts` int NOT NULL, `first_failed_at_ms` bigint NULL, `last_failed_at_ms` bigint NULL, `held_behind` bigint NULL, `parked_at_ms` bigint NOT NULL ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE INDEX `outbox_parked_bucket_id_idx` ON `outbox_parked` (`bucket`, `id`);
