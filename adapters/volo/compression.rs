//! Mapping volo-grpc's `CompressionEncoding` onto this crate's.
//!
//! volo-grpc names the zlib format `zlib` where gRPC says `deflate`; both are
//! [`CompressionEncoding::Deflate`] here. volo-grpc's `Identity` (and `None`)
//! mean no compression: messages go out with flag 0 and the raw payload. A
//! variant without a config (`Gzip(None)`) compresses at the default level,
//! where stock volo-grpc sets the compressed flag and writes nothing.

use volo_grpc::codec::compression::{CompressionEncoding as VoloEncoding, Level};

use crate::compression::{Compression, CompressionEncoding, CompressionLevel};

/// The encoding volo-grpc negotiated, as this crate names it.
///
/// `Identity` is `Identity`: a compressed flag on such a stream is still a
/// protocol error on receive.
pub fn encoding_from_volo(encoding: VoloEncoding) -> CompressionEncoding {
    match encoding {
        VoloEncoding::Identity => CompressionEncoding::Identity,
        VoloEncoding::Gzip(_) => CompressionEncoding::Gzip,
        VoloEncoding::Zlib(_) => CompressionEncoding::Deflate,
        VoloEncoding::Zstd(_) => CompressionEncoding::Zstd,
    }
}

/// What to compress outgoing messages with; `None` for `None` and
/// `Some(Identity)`.
///
/// volo-grpc carries a flate2 level (0 to 9) in its configs. For zstd, level
/// 0 means zstd's default, as in volo-grpc.
pub fn compression_from_volo(encoding: Option<VoloEncoding>) -> Option<Compression> {
    let precise = |level: Level| CompressionLevel::Precise(level.level() as i32);
    let compression = match encoding? {
        VoloEncoding::Identity => return None,
        VoloEncoding::Gzip(config) => Compression::new(CompressionEncoding::Gzip)
            .with_level(config.map_or(CompressionLevel::Default, |c| precise(c.level))),
        VoloEncoding::Zlib(config) => Compression::new(CompressionEncoding::Deflate)
            .with_level(config.map_or(CompressionLevel::Default, |c| precise(c.level))),
        VoloEncoding::Zstd(config) => Compression::new(CompressionEncoding::Zstd).with_level(
            match config.map(|c| c.level.level()) {
                None | Some(0) => CompressionLevel::Default,
                Some(level) => CompressionLevel::Precise(level as i32),
            },
        ),
    };
    Some(compression)
}

/// volo-grpc's encoding for this crate's, at volo-grpc's default level.
pub fn encoding_to_volo(encoding: CompressionEncoding) -> VoloEncoding {
    match encoding {
        CompressionEncoding::Identity => VoloEncoding::Identity,
        CompressionEncoding::Gzip => VoloEncoding::Gzip(None),
        CompressionEncoding::Deflate => VoloEncoding::Zlib(None),
        CompressionEncoding::Zstd => VoloEncoding::Zstd(None),
    }
}

#[cfg(test)]
mod tests {
    use volo_grpc::codec::compression::{GzipConfig, ZlibConfig, ZstdConfig};

    use super::*;

    #[test]
    fn zlib_is_deflate() {
        assert_eq!(
            encoding_from_volo(VoloEncoding::Zlib(None)),
            CompressionEncoding::Deflate
        );
        assert_eq!(
            compression_from_volo(Some(VoloEncoding::Zlib(None))).map(|c| c.encoding),
            Some(CompressionEncoding::Deflate)
        );
        assert!(matches!(
            encoding_to_volo(CompressionEncoding::Deflate),
            VoloEncoding::Zlib(_)
        ));
    }

    #[test]
    fn identity_and_none_send_uncompressed() {
        assert_eq!(compression_from_volo(None), None);
        assert_eq!(compression_from_volo(Some(VoloEncoding::Identity)), None);
    }

    #[test]
    fn a_missing_config_compresses_at_the_default_level() {
        for (volo, ours) in [
            (VoloEncoding::Gzip(None), CompressionEncoding::Gzip),
            (VoloEncoding::Zlib(None), CompressionEncoding::Deflate),
            (VoloEncoding::Zstd(None), CompressionEncoding::Zstd),
        ] {
            assert_eq!(
                compression_from_volo(Some(volo)),
                Some(Compression::new(ours))
            );
        }
    }

    #[test]
    fn configured_levels_carry_over() {
        let gzip = VoloEncoding::Gzip(Some(GzipConfig {
            level: Level::new(1),
        }));
        assert_eq!(
            compression_from_volo(Some(gzip)).map(|c| c.level),
            Some(CompressionLevel::Precise(1))
        );
        let zlib = VoloEncoding::Zlib(Some(ZlibConfig {
            level: Level::new(9),
        }));
        assert_eq!(
            compression_from_volo(Some(zlib)).map(|c| c.level),
            Some(CompressionLevel::Precise(9))
        );
        let zstd_default = VoloEncoding::Zstd(Some(ZstdConfig {
            level: Level::new(0),
        }));
        assert_eq!(
            compression_from_volo(Some(zstd_default)).map(|c| c.level),
            Some(CompressionLevel::Default)
        );
    }
}
