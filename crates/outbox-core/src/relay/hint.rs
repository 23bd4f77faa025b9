//! Commit notifications as the machine takes them: a bucket, or "somewhere".

/// A commit notification.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hint {
    /// Something was committed somewhere: probe every owned bucket.
    Unknown,
    /// Rows were committed in this bucket.
    Bucket(i32),
}

impl Hint {
    /// Decodes the wire form used by notification transports: `-1` is unknown.
    pub fn from_wire(bucket: i32) -> Self {
        if bucket < 0 {
            Hint::Unknown
        } else {
            Hint::Bucket(bucket)
        }
    }
}
