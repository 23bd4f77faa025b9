//! The record-batch compression codecs Kafka defines.

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

    /// Compresses the concatenated records of one batch.
    pub(crate) fn compress(self, records: &[u8]) -> std::io::Result<Vec<u8>> {
        match self {
            Compression::None => Ok(records.to_vec()),
            Compression::Gzip => {
                let mut encoder = flate2::write::GzEncoder::new(
                    Vec::with_capacity(records.len() / 2),
                    flate2::Compression::default(),
                );
                encoder.write_all(records)?;
                encoder.finish()
            }
            Compression::Snappy => snap::raw::Encoder::new()
                .compress_vec(records)
                .map_err(std::io::Error::other),
            Compression::Lz4 => {
                let mut encoder = lz4::EncoderBuilder::new()
                    .block_mode(lz4::BlockMode::Independent)
                    .build(Vec::with_capacity(records.len() / 2))?;
                encoder.write_all(records)?;
                let (out, result) = encoder.finish();
                result.map(|()| out)
            }
            Compression::Zstd => zstd::stream::encode_all(records, 0),
        }
    }
}
