//! Checks of single values that clap cannot type: the database URL's scheme, the table
//! names, `--max-publish-attempts` and `--park-policy`; each refusal names its option.

use std::num::NonZeroU32;

use outbox_core::{OutboxTables, ParkPolicy, SchemaError};

use super::error::ConfigError;

/// The database URL from the flag/environment or the file, with a supported scheme.
pub(super) fn database_url(
    cli: Option<String>,
    file: Option<String>,
) -> Result<String, ConfigError> {
    let database_url = cli.or(file).ok_or(ConfigError::Missing(
        "the database URL",
        "database-url",
        "OUTBOX_DATABASE_URL",
        "database_url",
    ))?;
    if ![
        "postgres://",
        "postgresql://",
        "mysql://",
        "mariadb://",
        "sqlite:",
    ]
    .iter()
    .any(|p| database_url.starts_with(p))
    {
        return Err(ConfigError::Invalid {
            option: "database-url",
            reason: "must start with postgres://, mysql:// or sqlite:".into(),
        });
    }
    Ok(database_url)
}

/// Schema, messages, leases, relays and parked table names, each optional.
pub(super) fn tables(names: [Option<String>; 5]) -> Result<OutboxTables, ConfigError> {
    let [schema, messages, leases, relays, parked] = names;
    let mut tables = OutboxTables::builder();
    if let Some(v) = schema {
        tables = tables.schema(v);
    }
    if let Some(v) = messages {
        tables = tables.messages(v);
    }
    if let Some(v) = leases {
        tables = tables.leases(v);
    }
    if let Some(v) = relays {
        tables = tables.relays(v);
    }
    if let Some(v) = parked {
        tables = tables.parked(v);
    }
    Ok(tables.build().map_err(SchemaError::from)?)
}

/// `N` (>= 1) or `never`.
pub(super) fn parse_attempts(text: &str) -> Result<Option<NonZeroU32>, ConfigError> {
    if text.eq_ignore_ascii_case("never") {
        return Ok(None);
    }
    text.parse::<NonZeroU32>()
        .map(Some)
        .map_err(|_| ConfigError::Invalid {
            option: "max-publish-attempts",
            reason: format!("{text:?} is neither a positive number nor `never`"),
        })
}

/// The name `--park-policy` takes for `policy` (`None` for a policy the binary does not
/// offer).
pub fn park_policy_name(policy: ParkPolicy) -> Option<&'static str> {
    match policy {
        ParkPolicy::HoldKey => Some("hold-key"),
        ParkPolicy::SkipRow => Some("skip-row"),
        _ => None,
    }
}

pub(super) fn parse_park_policy(text: &str) -> Result<ParkPolicy, ConfigError> {
    match text.to_ascii_lowercase().as_str() {
        "hold-key" => Ok(ParkPolicy::HoldKey),
        "skip-row" => Ok(ParkPolicy::SkipRow),
        _ => Err(ConfigError::Invalid {
            option: "park-policy",
            reason: format!("{text:?} is neither hold-key nor skip-row"),
        }),
    }
}
