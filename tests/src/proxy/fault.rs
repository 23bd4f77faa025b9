//! What the Kafka-aware proxy does to requests: the api keys tests name, the public
//! [`Fault`], and the queue of faults plus the request counters that a
//! `Proxy` handle shares with its connections.

use std::collections::{HashMap, VecDeque};

/// Kafka api key of Produce.
pub const PRODUCE: i16 = 0;
/// Kafka api key of Metadata.
pub const METADATA: i16 = 3;

/// What to do to one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Forward the request, then swallow the broker's response; the connection stays
    /// open, so the client only notices through its own timeout.
    DropResponse,
    /// Forward the request, swallow the response and close the client connection.
    DropResponseAndClose,
    /// Do not forward; answer a Produce request with this error code for every
    /// partition in it (for example 6, NOT_LEADER_OR_FOLLOWER).
    FailWith(i16),
}

/// A queued fault: which requests it applies to.
#[derive(Debug, Clone)]
pub(super) struct Rule {
    pub(super) api_key: i16,
    /// Only Produce requests that include this topic and partition.
    pub(super) target: Option<(String, i32)>,
    pub(super) fault: Fault,
}

/// The state a proxy handle shares with its connections: the queued faults and what
/// passed so far.
#[derive(Debug, Default)]
pub(super) struct Shared {
    pub(super) faults: VecDeque<Rule>,
    pub(super) requests: HashMap<i16, usize>,
    pub(super) faults_applied: usize,
}
