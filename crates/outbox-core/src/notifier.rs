//! Telling the local relay that rows were committed.

/// Wakes a relay after a commit. Called on the writer's path right after a successful
/// commit, so implementations must not block, allocate in proportion to anything large,
/// or await: record the hint and return.
///
/// Never call it before the commit is confirmed; a notification is only a hint and
/// never authorizes publishing by itself.
pub trait CommitNotifier: Send + Sync {
    /// Rows were committed in buckets that are not known.
    fn notify_committed(&self);

    /// Rows were committed in exactly these buckets. The default forgets the detail.
    fn notify_buckets(&self, buckets: &[i32]) {
        let _ = buckets;
        self.notify_committed();
    }
}

/// A notifier that does nothing, for writers without a local relay: the relays find the
/// rows by polling.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoopNotifier;

impl CommitNotifier for NoopNotifier {
    fn notify_committed(&self) {}
}
