//! Where a relay's id comes from: given, `<host>-<metrics_name>`, or generated (see
//! "The default relay id" in the [module docs](super)).

use crate::relay_id::{HostName, default_relay_id, generated_relay_id};

/// Where a relay's id came from, for the log line that says so.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RelayIdSource {
    /// Given to [`RelayOptionsBuilder::relay_id`](super::RelayOptionsBuilder::relay_id).
    Explicit,
    /// `<host>-<metrics_name>`, the host read from this source (`POD_NAME`, `HOSTNAME`,
    /// the kernel host name, or `explicit` for
    /// [`RelayOptionsBuilder::host_name`](super::RelayOptionsBuilder::host_name)).
    Host(&'static str),
    /// Generated because no host name was found: restarts wait for the old leases.
    Generated,
}

/// The default id for `host` and `metrics_name`, or a generated one.
pub(super) fn derive_relay_id(
    host: Option<&HostName>,
    metrics_name: &str,
) -> (String, RelayIdSource) {
    host.and_then(|h| default_relay_id(&h.name, metrics_name).map(|id| (id, h.source)))
        .map_or_else(
            || (generated_relay_id(), RelayIdSource::Generated),
            |(id, source)| (id, RelayIdSource::Host(source)),
        )
}
