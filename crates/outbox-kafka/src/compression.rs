//! The record-batch compression codecs Kafka defines.
//!
//! Each codec is a cargo feature (`gzip`, `snappy`, `lz4`, `zstd`; all four by default).
//! The enum keeps every variant in every build, so code that names a codec compiles
//! whichever features are on; choosing one whose feature is off is refused when the
//! publisher is built ([`ConfigError::CompressionNotEnabled`](crate::ConfigError)).

#[cfg(any(feature = "gzip", feature = "lz4"))]
use std::io::Write;

/// How record batches are compressed on the wire.
///
/// The codec applies to whole record batches (the records after the batch header), as
/// Kafka's message format v2 prescribes; the broker and consumers decompress
/// transparently. Keys, values and headers are never re-serialized either way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Compression {
    /// No compression (the default).
    #[default]
    None,
    /// gzip (deflate), default level.
    Gzip,
    /// Snappy, raw block format (what librdkafka writes; Kafka's Java client reads it).
    Snappy,
    /// LZ4 frame format with independent blocks, the only mode Kafka accepts.
    Lz4,
    /// Zstandard, default level.
    Zstd,
}

impl Compression {
    /// The codec id in the low three bits of a record batch's attributes.
    pub(crate) fn attribute(self) -> i16 {
        match self {
            Compression::None => 0,
            Compression::Gzip => 1,
            Compression::Snappy => 2,
            Compression::Lz4 => 3,
            Compression::Zstd => 4,
        }
    }

    /// The cargo feature that compiles this codec in; `None` for no compression.
    pub fn feature(self) -> Option<&'static str> {
        match self {
            Compression::None => None,
            Compression::Gzip => Some("gzip"),
            Compression::Snappy => Some("snappy"),
            Compression::Lz4 => Some("lz4"),
            Compression::Zstd => Some("zstd"),
        }
    }

    /// Whether this build can write the codec: always for [`Compression::None`],
    /// otherwise when its [`feature`](Self::feature) is on.
    pub fn is_enabled(self) -> bool {
        match self {
            Compression::None => true,
            Compression::Gzip => cfg!(feature = "gzip"),
            Compression::Snappy => cfg!(feature = "snappy"),
            Compression::Lz4 => cfg!(feature = "lz4"),
            Compression::Zstd => cfg!(feature = "zstd"),
        }
    }

    /// Compresses the concatenated records of one batch.
    ///
    /// A codec compiled out is an error, never a panic; the builder refuses it first,
    /// so a publisher never gets here with one.
    pub(crate) fn compress(self, records: &[u8]) -> std::io::Result<Vec<u8>> {
        match self {
            Compression::None => Ok(records.to_vec()),
            #[cfg(feature = "gzip")]
            Compression::Gzip => {
                let mut encoder = flate2::write::GzEncoder::new(
                    Vec::with_capacity(records.len() / 2),
                    flate2::Compression::default(),
                );
                encoder.write_all(records)?;
                encoder.finish()
            }
            #[cfg(feature = "snappy")]
            Compression::Snappy => snap::raw::Encoder::new()
                .compress_vec(records)
                .map_err(std::io::Error::other),
            #[cfg(feature = "lz4")]
            Compression::Lz4 => {
                let mut encoder = lz4::EncoderBuilder::new()
                    .block_mode(lz4::BlockMode::Independent)
                    .build(Vec::with_capacity(records.len() / 2))?;
                encoder.write_all(records)?;
                let (out, result) = encoder.finish();
                result.map(|()| out)
            }
            #[cfg(feature = "zstd")]
            Compression::Zstd => zstd::stream::encode_all(records, 0),
            #[allow(unreachable_patterns)] // every codec enabled: nothing left over
            disabled => Err(std::io::Error::new(
                std::io::ErrorKind::Unsupported,
                format!(
                    "{disabled:?} compression is not compiled in: enable the `{}` feature",
                    disabled.feature().unwrap_or("none")
                ),
            )),
        }
    }
}

#[cfg(test)]
#[path = "compression_tests.rs"]
mod tests;
