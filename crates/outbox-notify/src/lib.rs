//! Optional cross-pod commit notifications for the transactional outbox.
//!
//! A commit in one process may land in a bucket that a relay in another process owns.
//! This crate will hold the transport trait that broadcasts committed bucket ids between
//! processes, the background sender and listener workers, and bundled transports on
//! PostgreSQL LISTEN/NOTIFY and Redis pub/sub. Notifications are advisory only: polling
//! stays on and correctness never depends on them.
#![warn(missing_docs)]
