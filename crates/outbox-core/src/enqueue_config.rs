//! What a writer needs to know to turn a record into an outbox row.

use std::num::NonZeroU32;

use crate::options::{OptionsError, RelayOptions};
use crate::schema::{OutboxSchema, OutboxTables};

/// Writer-side settings, validated once at construction: the [`OutboxSchema`] shared with
/// every relay of the outbox, plus, optionally, a record size limit of the writer's own
/// below the schema's.
///
/// Every record is checked against a size limit at enqueue, so that one the publisher
/// would refuse forever fails the business transaction instead: by default the schema's
/// [`max_request_size`](OutboxSchema::max_request_size), measured as the publisher
/// measures a request carrying the record alone (see [`wire_size`](crate::wire_size)).
///
/// The bucket count and message-id header come from the schema and nowhere else; give
/// the relays the same schema, or derive this from their options with
/// [`RelayOptions::enqueue_config`], so a process that runs both cannot disagree with
/// itself.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EnqueueConfig {
    schema: OutboxSchema,
    max_record_size: Option<usize>,
}

impl EnqueueConfig {
    /// Starts from the defaults ([`OutboxSchema::default`], its 1 MiB request limit).
    pub fn builder() -> EnqueueConfigBuilder {
        EnqueueConfigBuilder {
            schema: OutboxSchema::default(),
            max_record_size: None,
        }
    }

    /// The shared settings.
    pub fn schema(&self) -> &OutboxSchema {
        &self.schema
    }

    /// Number of ordering buckets, the schema's.
    pub fn bucket_count(&self) -> NonZeroU32 {
        self.schema.bucket_count()
    }

    /// Largest accepted record, in bytes as measured by
    /// [`MessageBuilder::record_size`](crate::MessageBuilder::record_size): the writer's
    /// own limit if it set one, else the schema's `max_request_size`.
    pub fn max_record_size(&self) -> usize {
        self.max_record_size
            .unwrap_or_else(|| self.schema.max_request_size())
    }

    /// Name of the header the relay stamps with the message id; writers may not use it.
    pub fn message_id_header(&self) -> &str {
        self.schema.message_id_header()
    }
}

impl From<OutboxSchema> for EnqueueConfig {
    /// The schema's settings, its request limit as the record size limit.
    fn from(schema: OutboxSchema) -> Self {
        EnqueueConfig {
            schema,
            max_record_size: None,
        }
    }
}

impl From<OutboxTables> for EnqueueConfig {
    /// These tables with the default bucket count, header and request limit.
    fn from(tables: OutboxTables) -> Self {
        EnqueueConfig::from(OutboxSchema::from(tables))
    }
}

impl RelayOptions {
    /// The writer-side settings that agree with this relay: its schema, with the schema's
    /// request limit. (Defined here so that `options` does not depend on `enqueue_config`.)
    pub fn enqueue_config(&self) -> EnqueueConfig {
        EnqueueConfig::from(self.schema().clone())
    }
}

/// Builder for [`EnqueueConfig`]; nothing is checked until [`build`](Self::build).
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct EnqueueConfigBuilder {
    schema: OutboxSchema,
    max_record_size: Option<usize>,
}

impl EnqueueConfigBuilder {
    /// The tables, bucket count and message-id header shared with the relays. Default
    /// [`OutboxSchema::default`].
    pub fn schema(mut self, schema: OutboxSchema) -> Self {
        self.schema = schema;
        self
    }

    /// Rejects records larger than `bytes` at enqueue time, a limit of the writer's own;
    /// it may not exceed the schema's `max_request_size` (a larger record could never be
    /// published). Default: the schema's `max_request_size`.
    pub fn max_record_size(mut self, bytes: usize) -> Self {
        self.max_record_size = Some(bytes);
        self
    }

    /// Validates and returns the config.
    pub fn build(self) -> Result<EnqueueConfig, OptionsError> {
        if self.max_record_size == Some(0) {
            return Err(OptionsError::MaxRecordSizeZero);
        }
        if let Some(bytes) = self.max_record_size
            && bytes > self.schema.max_request_size()
        {
            return Err(OptionsError::MaxRecordSizeAboveRequestSize {
                record: bytes,
                request: self.schema.max_request_size(),
            });
        }
        Ok(EnqueueConfig {
            schema: self.schema,
            max_record_size: self.max_record_size,
        })
    }
}

#[cfg(test)]
#[path = "enqueue_config_tests.rs"]
mod tests;
