//! The plain answers a connection hands back (metadata, a producer id, one partition's
//! produce result), free of rskafka's types, and the names of Kafka's error codes.

/// One broker in a metadata answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BrokerInfo {
    pub node_id: i32,
    /// `host:port` as the broker advertises it.
    pub addr: String,
}

/// One partition in a metadata answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PartitionInfo {
    pub index: i32,
    pub leader: i32,
    pub error_code: i16,
}

/// One topic in a metadata answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TopicInfo {
    pub name: String,
    pub error_code: i16,
    pub partitions: Vec<PartitionInfo>,
}

/// A metadata answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MetadataInfo {
    pub brokers: Vec<BrokerInfo>,
    pub topics: Vec<TopicInfo>,
}

/// A new producer identity, or the broker's refusal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ProducerIdAnswer {
    pub error_code: i16,
    pub producer_id: i64,
    pub producer_epoch: i16,
}

/// The broker's answer for one produced batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ProduceAnswer {
    pub error_code: i16,
    pub base_offset: i64,
}

/// The name of a Kafka error code, for messages and logs.
pub(crate) fn error_name(code: i16) -> String {
    match rskafka::protocol::error::Error::new(code) {
        Some(error) => format!("{error:?} ({code})"),
        None => format!("NONE ({code})"),
    }
}
