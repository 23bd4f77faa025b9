//! The checked-in `migrations/` files against what the migrations run, and quoting of
//! custom names in every statement.

use std::path::PathBuf;

use super::*;
use crate::ddl::inbox_script;
use crate::ddl::render::quote;

const BACKENDS: [Backend; 3] = Backend::ALL;

fn migrations_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../migrations")
}

/// The checked-in DDL files are exactly what the migrations run for the default
/// names: `migrations/<backend>.sql` for the outbox, `migrations/inbox/<backend>.sql`
/// for the opt-in inbox. `OUTBOX_BLESS=1` rewrites them instead of failing.
#[test]
fn migrations_dir_matches_the_migration() {
    let bless = std::env::var("OUTBOX_BLESS").is_ok_and(|v| v == "1");
    let mut drifted = Vec::new();
    for backend in BACKENDS {
        let file = format!("{}.sql", backend.name());
        let expected = [
            (
                migrations_dir().join(&file),
                script(backend, &OutboxTables::default()),
            ),
            (
                migrations_dir().join("inbox").join(&file),
                inbox_script(backend, &crate::InboxTable::default()),
            ),
        ];
        for (path, expected) in expected {
            if bless {
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(&path, &expected).unwrap();
                continue;
            }
            let actual = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{} is missing ({e})", path.display()));
            if actual != expected {
                drifted.push(format!(
                    "{}:\n--- checked in\n{actual}\n--- generated\n{expected}",
                    path.display()
                ));
            }
        }
    }
    assert!(
        drifted.is_empty(),
        "migrations/ drifted from the sea-orm migrations; review and regenerate with \
         `OUTBOX_BLESS=1 cargo test -p outbox-seaorm --lib ddl`:\n{}",
        drifted.join("\n")
    );
}

#[test]
fn custom_names_are_quoted_everywhere() {
    let tables = OutboxTables::builder()
        .schema("Messaging")
        .messages("Orders_Outbox")
        .leases("orders_leases")
        .relays("orders_relays")
        .build()
        .unwrap();
    for backend in BACKENDS {
        let all = create_statements(backend, &tables).join("\n");
        let q = if backend == Backend::MySql { '`' } else { '"' };
        assert!(
            all.contains(&format!("{q}Messaging{q}.{q}Orders_Outbox{q}")),
            "{all}"
        );
        assert!(!all.contains(" Orders_Outbox "), "unquoted name in {all}");
        let drops = drop_statements(backend, &tables).join("\n");
        assert!(
            drops.contains(&format!("{q}Messaging{q}.{q}orders_relays{q}")),
            "{drops}"
        );
    }
    assert_eq!(
        create_statements(Backend::Postgres, &tables)[0],
        r#"CREATE SCHEMA IF NOT EXISTS "Messaging""#
    );
    assert_eq!(
        create_statements(Backend::MySql, &tables)[1],
        "CREATE INDEX `Orders_Outbox_bucket_id_idx` ON `Messaging`.`Orders_Outbox` (`bucket`, `id`)"
    );
    assert_eq!(
        create_statements(Backend::Sqlite, &tables)[1],
        r#"CREATE INDEX "Messaging"."Orders_Outbox_bucket_id_idx" ON "Orders_Outbox" ("bucket", "id")"#
    );
    assert_eq!(quote(Backend::MySql, "a`b"), "`a``b`");
}
