//! Companions: background tasks another crate starts beside a relay (a notification
//! transport, say), and the context the relay hands them when it starts.

use std::sync::Arc;

use tokio::runtime::Handle;
use tokio::task::JoinHandle;

use super::local_notifier::LocalNotifier;
use crate::options::RelayOptions;

/// What a companion sees when the relay starts it: the relay's notifier (which it may
/// feed or drain), the options and id, and the runtime to spawn on.
#[derive(Debug)]
pub struct CompanionContext<'a> {
    pub(super) notifier: &'a Arc<LocalNotifier>,
    pub(super) options: &'a RelayOptions,
    pub(super) runtime: &'a Handle,
}

impl CompanionContext<'_> {
    /// The relay's local notifier: commits in this process reach the relay through it.
    pub fn notifier(&self) -> Arc<LocalNotifier> {
        Arc::clone(self.notifier)
    }

    /// The relay's validated options.
    pub fn options(&self) -> &RelayOptions {
        self.options
    }

    /// The relay's id (as in the lease tables).
    pub fn relay_id(&self) -> &str {
        self.options.relay_id()
    }

    /// The runtime the relay runs on; spawn the companion's tasks here.
    pub fn runtime(&self) -> &Handle {
        self.runtime
    }
}

/// Starts a companion's background tasks; they are aborted once the relay has stopped.
pub(super) type Companion = Box<dyn FnOnce(&CompanionContext<'_>) -> Vec<JoinHandle<()>> + Send>;

/// The companions a builder collected, started in order when the relay spawns.
pub(super) type Companions = Vec<Companion>;
