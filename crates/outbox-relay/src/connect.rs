//! Builds the store and the publisher from the validated configuration.

use std::sync::Arc;

use outbox_kafka::rustls::pki_types::CertificateDer;
use outbox_kafka::rustls::pki_types::pem::PemObject;
use outbox_kafka::rustls::{ClientConfig, RootCertStore};
use outbox_kafka::{KafkaPublisher, Sasl as KafkaSasl};
use outbox_seaorm::{ConnectSettings, Migration, ParkedMigration, SeaOrmStore};
use sea_orm::DatabaseConnection;
use sea_orm_migration::{MigrationTrait, SchemaManager};

use crate::config::{Config, SaslMechanism};

/// A start-up failure, with what to check.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The database could not be reached or migrated.
    #[error("database: {0}")]
    Database(String),
    /// The publisher settings are invalid.
    #[error("kafka: {0}")]
    Kafka(String),
    /// The TLS settings are invalid.
    #[error("tls: {0}")]
    Tls(String),
}

/// Connects the store (and a second connection for backlog samples) for the relay's
/// schema, migrating first when asked.
///
/// The store's pool holds `max_concurrent_lanes + 2` connections
/// ([`ConnectSettings::for_relay`]); on SQLite the file runs in WAL mode with a busy
/// timeout, and statements are logged at DEBUG, so a normal run logs no sqlx warning.
pub async fn store(config: &Config) -> Result<SeaOrmStore, StartError> {
    let schema = config.relay.schema();
    let tables = schema.tables();
    let db_error = |e: sea_orm::DbErr| StartError::Database(e.to_string());
    let db: DatabaseConnection = ConnectSettings::new(config.database_url.as_str())
        .for_relay(&config.relay)
        .connect()
        .await
        .map_err(db_error)?;
    if config.migrate {
        let manager = SchemaManager::new(&db);
        if !manager
            .has_table(tables.messages())
            .await
            .map_err(db_error)?
        {
            Migration::new(schema.clone())
                .up(&manager)
                .await
                .map_err(db_error)?;
            tracing::info!("created the outbox tables");
        }
        if !manager.has_table(tables.parked()).await.map_err(db_error)? {
            ParkedMigration::new(schema.clone())
                .up(&manager)
                .await
                .map_err(db_error)?;
            tracing::info!(table = tables.parked(), "created the parked-rows table");
        }
    }
    // The backlog sampler's own connection: a slow aggregate never holds a lane's.
    let metrics_db = ConnectSettings::new(config.database_url.as_str())
        .max_connections(1)
        .connect()
        .await
        .map_err(db_error)?;
    SeaOrmStore::new(db, schema.clone())
        .and_then(|store| store.with_metrics_connection(metrics_db))
        .map_err(|e| StartError::Database(e.to_string()))
}

/// The dependency watch's own connection (one, with short timeouts): its pings never wait
/// behind the relay's lanes, and a database that stops answering fails them promptly.
pub async fn watch_connection(config: &Config) -> Result<DatabaseConnection, StartError> {
    let mut options = ConnectSettings::new(config.database_url.as_str())
        .max_connections(1)
        .options();
    options
        .min_connections(0)
        .connect_timeout(crate::probe::PROBE_TIMEOUT)
        .acquire_timeout(crate::probe::PROBE_TIMEOUT);
    sea_orm::Database::connect(options)
        .await
        .map_err(|e| StartError::Database(e.to_string()))
}

/// The store for the operator commands: one connection, no migration. A database that
/// refuses TCP connections is reported at once, with the operating system's answer,
/// instead of sqlx's "pool timed out" after its whole pool timeout.
pub async fn operator_store(
    database: &crate::config::DatabaseConfig,
) -> Result<SeaOrmStore, StartError> {
    let url = database.database_url.as_str();
    crate::probe::database_reachable(url)
        .await
        .map_err(|e| StartError::Database(format!("{} {e}", crate::probe::redact_url(url))))?;
    let db = ConnectSettings::new(url)
        .max_connections(1)
        .connect()
        .await
        .map_err(|e| StartError::Database(e.to_string()))?;
    SeaOrmStore::new(db, database.schema.clone()).map_err(|e| StartError::Database(e.to_string()))
}

/// The Kafka publisher, with TLS and SASL as configured.
pub fn publisher(config: &Config) -> Result<KafkaPublisher, StartError> {
    let mut b = KafkaPublisher::builder(config.brokers.iter().map(String::as_str))
        .client_id(config.client_id.clone())
        .schema(config.relay.schema());
    if config.tls {
        b = b.tls(Arc::new(tls_config(config)?));
    }
    if let Some(sasl) = &config.sasl {
        let (user, password) = (sasl.username.clone(), sasl.password.clone());
        b = b.sasl(match sasl.mechanism {
            SaslMechanism::Plain => KafkaSasl::Plain {
                username: user,
                password,
            },
            SaslMechanism::ScramSha256 => KafkaSasl::ScramSha256 {
                username: user,
                password,
            },
            SaslMechanism::ScramSha512 => KafkaSasl::ScramSha512 {
                username: user,
                password,
            },
        });
    }
    b.build().map_err(|e| StartError::Kafka(e.to_string()))
}

fn tls_config(config: &Config) -> Result<ClientConfig, StartError> {
    let mut roots = RootCertStore::empty();
    match &config.tls_ca_file {
        Some(path) => {
            let certs = CertificateDer::pem_file_iter(path)
                .map_err(|e| StartError::Tls(format!("{}: {e}", path.display())))?;
            for cert in certs {
                let cert = cert.map_err(|e| StartError::Tls(format!("{}: {e}", path.display())))?;
                roots
                    .add(cert)
                    .map_err(|e| StartError::Tls(format!("{}: {e}", path.display())))?;
            }
            if roots.is_empty() {
                return Err(StartError::Tls(format!(
                    "{} holds no certificate",
                    path.display()
                )));
            }
        }
        None => roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
    }
    Ok(ClientConfig::builder()
        .with_root_certificates(roots)
        .with_no_client_auth())
}
