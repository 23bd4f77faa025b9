//! The publisher's rule for a topic still unknown after a metadata refresh.

use super::*;

#[test]
fn a_topic_unknown_after_a_refresh_waits_without_blaming_its_rows() {
    let unknown = topic_error("gone", -1, code::UNKNOWN_TOPIC_OR_PARTITION);
    assert!(!unknown.is_permanent(), "a produce answer stays retryable");
    let after_refresh = missing_after_refresh(unknown);
    assert_eq!(
        after_refresh.topic_unavailable(),
        Some(("gone", TopicUnavailableReason::Missing))
    );
    assert!(!after_refresh.blames_row());
    let id = outbox_core::Uuid::nil();
    let error = after_refresh.into_publish_error(id);
    assert_eq!(error.kind, outbox_core::PublishErrorKind::Setup);
    assert_eq!(error.blamed_message(), None);
    let other = missing_after_refresh(topic_error("t", -1, code::LEADER_NOT_AVAILABLE));
    assert!(!other.is_permanent(), "other codes keep their class");
}
