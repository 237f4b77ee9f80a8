//! Mapping volo-grpc's `CompressionEncoding` onto this crate's.
//!
//! volo-grpc names the zlib format `zlib` where gRPC says `deflate`; both are
//! [`CompressionEncoding::Deflate`] here. volo-grpc's `Identity` (and `None`)
//! mean no compression: messages go out with flag 0 and the raw payload. A
//! variant without a config (`Gzip(None)`) compresses at the default level,
//! where stock volo-grpc sets the compressed flag and writes nothing.

use volo_grpc::codec::compression::CompressionEncoding as VoloEncoding;
#[cfg(any(feature = "gzip", feature = "deflate"))]
use volo_grpc::codec::compression::Level;

#[cfg(any(feature = "gzip", feature = "deflate", feature = "zstd"))]
use crate::compression::CompressionLevel;
use crate::compression::{Compression, CompressionEncoding};

// volo-grpc's variants exist only with its features of the same names, which
// this crate's `gzip`, `deflate` and `zstd` turn on. A crate that enables one
// on volo-grpc directly brings a variant this build does not name: such an
// encoding is mapped by its header name, and fails later as unsupported.

/// The encoding volo-grpc negotiated, as this crate names it.
///
/// `Identity` is `Identity`: a compressed flag on such a stream is still a
/// protocol error on receive.
pub fn encoding_from_volo(encoding: VoloEncoding) -> CompressionEncoding {
    #[allow(unreachable_patterns)]
    match encoding {
        VoloEncoding::Identity => CompressionEncoding::Identity,
        #[cfg(feature = "gzip")]
        VoloEncoding::Gzip(_) => CompressionEncoding::Gzip,
        #[cfg(feature = "deflate")]
        VoloEncoding::Zlib(_) => CompressionEncoding::Deflate,
        #[cfg(feature = "zstd")]
        VoloEncoding::Zstd(_) => CompressionEncoding::Zstd,
        other => by_name(other),
    }
}

/// An encoding this build has no variant arm for, by volo-grpc's name of it.
fn by_name(encoding: VoloEncoding) -> CompressionEncoding {
    let value = encoding.into_header_value();
    let name = value.to_str().unwrap_or_default();
    // volo-grpc's own `zlib` is read as deflate there too.
    CompressionEncoding::from_name(name).unwrap_or(CompressionEncoding::Identity)
}

/// What to compress outgoing messages with; `None` for `None` and
/// `Some(Identity)`.
///
/// volo-grpc carries a flate2 level (0 to 9) in its configs. For zstd, level
/// 0 means zstd's default, as in volo-grpc.
pub fn compression_from_volo(encoding: Option<VoloEncoding>) -> Option<Compression> {
    #[cfg(any(feature = "gzip", feature = "deflate"))]
    let precise = |level: Level| CompressionLevel::Precise(level.level() as i32);
    #[allow(unreachable_patterns)]
    let compression = match encoding? {
        VoloEncoding::Identity => return None,
        #[cfg(feature = "gzip")]
        VoloEncoding::Gzip(config) => Compression::new(CompressionEncoding::Gzip)
            .with_level(config.map_or(CompressionLevel::Default, |c| precise(c.level))),
        #[cfg(feature = "deflate")]
        VoloEncoding::Zlib(config) => Compression::new(CompressionEncoding::Deflate)
            .with_level(config.map_or(CompressionLevel::Default, |c| precise(c.level))),
        #[cfg(feature = "zstd")]
        VoloEncoding::Zstd(config) => Compression::new(CompressionEncoding::Zstd).with_level(
            match config.map(|c| c.level.level()) {
                None | Some(0) => CompressionLevel::Default,
                Some(level) => CompressionLevel::Precise(level as i32),
            },
        ),
        other => Compression::new(by_name(other)),
    };
    Some(compression)
}

/// volo-grpc's encoding for this crate's, at volo-grpc's default level;
/// `None` for an encoding this build of the adapter does not turn on in
/// volo-grpc (its feature is off).
pub fn encoding_to_volo(encoding: CompressionEncoding) -> Option<VoloEncoding> {
    match encoding {
        CompressionEncoding::Identity => Some(VoloEncoding::Identity),
        #[cfg(feature = "gzip")]
        CompressionEncoding::Gzip => Some(VoloEncoding::Gzip(None)),
        #[cfg(feature = "deflate")]
        CompressionEncoding::Deflate => Some(VoloEncoding::Zlib(None)),
        #[cfg(feature = "zstd")]
        CompressionEncoding::Zstd => Some(VoloEncoding::Zstd(None)),
        #[allow(unreachable_patterns)]
        _ => None,
    }
}

#[cfg(all(test, feature = "gzip", feature = "deflate", feature = "zstd"))]
mod level_tests {
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
            Some(VoloEncoding::Zlib(_))
        ));
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
