//! Name rules shared by messages and options.

/// Why a topic name is not one Kafka accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TopicNameError {
    /// Empty string.
    #[error("is empty")]
    Empty,
    /// More than 249 characters.
    #[error("is {0} characters long; Kafka allows at most 249")]
    TooLong(usize),
    /// `.` or `..`, which Kafka reserves.
    #[error("`.` and `..` are reserved")]
    Reserved,
    /// A character outside `[A-Za-z0-9._-]`.
    #[error("contains {0:?}; only ASCII letters, digits, `.`, `_` and `-` are allowed")]
    InvalidChar(char),
}

/// The longest topic name Kafka accepts.
pub const MAX_TOPIC_LEN: usize = 249;

/// Checks a topic name against Kafka's rules, so a bad name fails at enqueue time
/// instead of sitting in the table until the broker rejects it.
pub fn validate_topic(topic: &str) -> Result<(), TopicNameError> {
    if topic.is_empty() {
        return Err(TopicNameError::Empty);
    }
    if topic == "." || topic == ".." {
        return Err(TopicNameError::Reserved);
    }
    if let Some(c) = topic
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
    {
        return Err(TopicNameError::InvalidChar(c));
    }
    // All characters are ASCII here, so bytes == characters.
    if topic.len() > MAX_TOPIC_LEN {
        return Err(TopicNameError::TooLong(topic.len()));
    }
    Ok(())
}

/// Checks a short identifier (relay id, metrics name): `1..=max` characters and not
/// only white space. Returns a reason on failure.
pub(crate) fn validate_label(value: &str, max: usize) -> Result<(), String> {
    let chars = value.chars().count();
    if value.trim().is_empty() {
        return Err("must contain a non-blank character".into());
    }
    if chars > max {
        return Err(format!("is {chars} characters long; at most {max} allowed"));
    }
    if value.chars().any(char::is_control) {
        return Err("must not contain control characters".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topic_rules() {
        assert_eq!(validate_topic("orders.v1_eu-west"), Ok(()));
        assert_eq!(validate_topic(""), Err(TopicNameError::Empty));
        assert_eq!(validate_topic("."), Err(TopicNameError::Reserved));
        assert_eq!(validate_topic(".."), Err(TopicNameError::Reserved));
        assert_eq!(validate_topic("..."), Ok(()));
        assert_eq!(validate_topic("a b"), Err(TopicNameError::InvalidChar(' ')));
        assert_eq!(
            validate_topic("tópico"),
            Err(TopicNameError::InvalidChar('ó'))
        );
        assert_eq!(validate_topic(&"a".repeat(249)), Ok(()));
        assert_eq!(
            validate_topic(&"a".repeat(250)),
            Err(TopicNameError::TooLong(250))
        );
    }

    #[test]
    fn label_rules() {
        assert!(validate_label("outbox", 64).is_ok());
        assert!(validate_label("", 64).is_err());
        assert!(validate_label("   ", 64).is_err());
        assert!(validate_label(&"x".repeat(65), 64).is_err());
        assert!(validate_label(&"é".repeat(64), 64).is_ok());
        assert!(validate_label("a\nb", 64).is_err());
    }
}
