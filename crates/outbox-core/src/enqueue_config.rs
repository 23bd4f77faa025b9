//! What a writer needs to know to turn a record into an outbox row.

use std::num::NonZeroU32;

use crate::options::{
    DEFAULT_BUCKET_COUNT, DEFAULT_MESSAGE_ID_HEADER, OptionsError, check_bucket_count,
    check_header_name,
};

/// Writer-side settings, validated once at construction.
///
/// The bucket count must be the same for every writer and relay sharing an outbox
/// table; [`RelayOptions::enqueue_config`](crate::RelayOptions::enqueue_config) derives
/// one from the relay's options so a process that runs both cannot disagree with itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnqueueConfig {
    bucket_count: NonZeroU32,
    max_record_size: Option<usize>,
    message_id_header: String,
}

impl Default for EnqueueConfig {
    fn default() -> Self {
        EnqueueConfig {
            bucket_count: DEFAULT_BUCKET_COUNT,
            max_record_size: None,
            message_id_header: DEFAULT_MESSAGE_ID_HEADER.to_owned(),
        }
    }
}

impl EnqueueConfig {
    /// Starts from the defaults (8 buckets, no size limit, `x-outbox-message-id`).
    pub fn builder() -> EnqueueConfigBuilder {
        EnqueueConfigBuilder {
            bucket_count: DEFAULT_BUCKET_COUNT.get(),
            max_record_size: None,
            message_id_header: DEFAULT_MESSAGE_ID_HEADER.to_owned(),
        }
    }

    /// Number of ordering buckets.
    pub fn bucket_count(&self) -> NonZeroU32 {
        self.bucket_count
    }

    /// Largest accepted record, in bytes as measured by
    /// [`MessageBuilder::record_size`](crate::MessageBuilder::record_size).
    pub fn max_record_size(&self) -> Option<usize> {
        self.max_record_size
    }

    /// Name of the header the relay stamps with the message id; writers may not use it.
    pub fn message_id_header(&self) -> &str {
        &self.message_id_header
    }
}

/// Builder for [`EnqueueConfig`]; nothing is checked until [`build`](Self::build).
#[derive(Debug, Clone)]
pub struct EnqueueConfigBuilder {
    bucket_count: u32,
    max_record_size: Option<usize>,
    message_id_header: String,
}

impl EnqueueConfigBuilder {
    /// Number of ordering buckets (1..=65536). Default 8.
    pub fn bucket_count(mut self, count: u32) -> Self {
        self.bucket_count = count;
        self
    }

    /// Rejects records larger than `bytes` at enqueue time. Default: no limit.
    pub fn max_record_size(mut self, bytes: usize) -> Self {
        self.max_record_size = Some(bytes);
        self
    }

    /// Header name for the message id. Default `x-outbox-message-id`.
    pub fn message_id_header(mut self, name: impl Into<String>) -> Self {
        self.message_id_header = name.into();
        self
    }

    /// Validates and returns the config.
    pub fn build(self) -> Result<EnqueueConfig, OptionsError> {
        let bucket_count = check_bucket_count(self.bucket_count)?;
        check_header_name(&self.message_id_header)?;
        if self.max_record_size == Some(0) {
            return Err(OptionsError::MaxRecordSizeZero);
        }
        Ok(EnqueueConfig {
            bucket_count,
            max_record_size: self.max_record_size,
            message_id_header: self.message_id_header,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults() {
        let c = EnqueueConfig::builder().build().unwrap();
        assert_eq!(c, EnqueueConfig::default());
        assert_eq!(c.bucket_count().get(), 8);
        assert_eq!(c.message_id_header(), "x-outbox-message-id");
        assert_eq!(c.max_record_size(), None);
    }

    #[test]
    fn rejections() {
        assert_eq!(
            EnqueueConfig::builder().bucket_count(0).build(),
            Err(OptionsError::BucketCount(0))
        );
        assert_eq!(
            EnqueueConfig::builder().max_record_size(0).build(),
            Err(OptionsError::MaxRecordSizeZero)
        );
        assert!(matches!(
            EnqueueConfig::builder().message_id_header(" ").build(),
            Err(OptionsError::MessageIdHeader(_))
        ));
    }
}
