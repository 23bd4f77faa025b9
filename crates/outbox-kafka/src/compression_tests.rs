//! The codecs at work: what each enabled codec writes, and what a build without one
//! says when it is chosen.

use super::*;

const ALL: [Compression; 5] = [
    Compression::None,
    Compression::Gzip,
    Compression::Snappy,
    Compression::Lz4,
    Compression::Zstd,
];

#[test]
fn enabled_codecs_compress_and_disabled_ones_fail_without_panicking() {
    let records = vec![7u8; 4096];
    for codec in ALL {
        match codec.compress(&records) {
            Ok(out) => {
                assert!(codec.is_enabled(), "{codec:?} compressed while off");
                assert!(codec == Compression::None || out.len() < records.len());
            }
            Err(e) => {
                assert!(!codec.is_enabled(), "{codec:?}: {e}");
                let feature = codec.feature().unwrap_or_default();
                assert!(e.to_string().contains(&format!("`{feature}`")), "{e}");
            }
        }
    }
}

#[test]
fn no_compression_is_always_there_and_passes_the_records_through() {
    assert!(Compression::None.is_enabled());
    assert_eq!(Compression::None.feature(), None);
    let records = b"plain records".to_vec();
    assert_eq!(Compression::None.compress(&records).unwrap(), records);
    assert!(publisher_with(Compression::None).is_ok());
}

/// Builds a publisher (no I/O) that compresses with `codec`.
fn publisher_with(codec: Compression) -> Result<crate::KafkaPublisher, crate::ConfigError> {
    crate::KafkaPublisher::builder(["localhost:9092"])
        .compression(codec)
        .build()
}

/// Records that compress well, with some variety so a codec that dropped or reordered
/// bytes would show.
fn records() -> Vec<u8> {
    (0..8192u32).map(|i| (i % 251) as u8 / 8).collect()
}

/// One codec's two sides. In a build with its feature, the builder accepts it and what
/// it writes is that codec's format: its own decoder gives the records back. In a build
/// without it (only there does the `feature_off_` test exist; `cargo xtask test` runs
/// them in a build with only `gzip`), the builder refuses it with
/// [`ConfigError::CompressionNotEnabled`](crate::ConfigError) naming the feature, and
/// compressing with it directly is an error, not a panic.
macro_rules! codec_tests {
    ($codec:expr, $feature:literal, $on:ident, $off:ident, $decode:expr) => {
        #[cfg(feature = $feature)]
        #[test]
        fn $on() {
            assert!(publisher_with($codec).is_ok());
            let records = records();
            let written = $codec.compress(&records).unwrap();
            assert!(written.len() < records.len(), "{} bytes", written.len());
            let decode: fn(&[u8]) -> std::io::Result<Vec<u8>> = $decode;
            assert_eq!(decode(&written).unwrap(), records);
        }

        #[cfg(not(feature = $feature))]
        #[test]
        fn $off() {
            let e = publisher_with($codec).unwrap_err();
            assert_eq!(
                e,
                crate::ConfigError::CompressionNotEnabled {
                    codec: $codec,
                    feature: $feature,
                }
            );
            let shown = e.to_string();
            assert!(
                shown.contains(concat!("`", $feature, "` cargo feature")),
                "{shown}"
            );
            let e = $codec.compress(&records()).unwrap_err();
            assert_eq!(e.kind(), std::io::ErrorKind::Unsupported);
            assert!(e.to_string().contains(concat!("`", $feature, "`")), "{e}");
        }
    };
}

codec_tests!(
    Compression::Gzip,
    "gzip",
    gzip_writes_what_gzip_reads,
    feature_off_gzip_is_refused_naming_its_feature,
    |bytes| {
        let mut out = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(bytes), &mut out)?;
        Ok(out)
    }
);

codec_tests!(
    Compression::Snappy,
    "snappy",
    snappy_writes_what_snappy_reads,
    feature_off_snappy_is_refused_naming_its_feature,
    |bytes| {
        snap::raw::Decoder::new()
            .decompress_vec(bytes)
            .map_err(std::io::Error::other)
    }
);

codec_tests!(
    Compression::Lz4,
    "lz4",
    lz4_writes_what_lz4_reads,
    feature_off_lz4_is_refused_naming_its_feature,
    |bytes| {
        let mut out = Vec::new();
        std::io::Read::read_to_end(&mut lz4::Decoder::new(bytes)?, &mut out)?;
        Ok(out)
    }
);

codec_tests!(
    Compression::Zstd,
    "zstd",
    zstd_writes_what_zstd_reads,
    feature_off_zstd_is_refused_naming_its_feature,
    |bytes| zstd::stream::decode_all(bytes)
);
