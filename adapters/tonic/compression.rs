//! tonic's compression settings in this crate's terms.

use http::HeaderName;
use tonic::codec::{CompressionEncoding as TonicEncoding, EnabledCompressionEncodings};

use crate::compression::{CompressionEncoding, EncodingSet, GRPC_ENCODING};

// Parsed once: generated servers look both up on every request.
pub(crate) const ENCODING_NAME: HeaderName = HeaderName::from_static(GRPC_ENCODING);

/// This crate's encoding for one of tonic's; `None` for one this crate was
/// built without.
pub fn encoding_from_tonic(encoding: TonicEncoding) -> Option<CompressionEncoding> {
    match encoding {
        #[cfg(feature = "gzip")]
        TonicEncoding::Gzip => Some(CompressionEncoding::Gzip),
        #[cfg(feature = "deflate")]
        TonicEncoding::Deflate => Some(CompressionEncoding::Deflate),
        #[cfg(feature = "zstd")]
        TonicEncoding::Zstd => Some(CompressionEncoding::Zstd),
        // tonic's enum is non-exhaustive, and its other variants are ones
        // this build does not support.
        #[allow(unreachable_patterns)]
        _ => None,
    }
}

/// The encodings tonic's generated code enabled, as a set of this crate's.
///
/// Generated servers call this on every request, so it is a few flag tests.
pub fn encodings_from_tonic(enabled: EnabledCompressionEncodings) -> EncodingSet {
    #[allow(unused_mut)]
    let mut set = EncodingSet::empty();
    #[cfg(feature = "gzip")]
    if enabled.is_enabled(TonicEncoding::Gzip) {
        set = set.with(CompressionEncoding::Gzip);
    }
    #[cfg(feature = "deflate")]
    if enabled.is_enabled(TonicEncoding::Deflate) {
        set = set.with(CompressionEncoding::Deflate);
    }
    #[cfg(feature = "zstd")]
    if enabled.is_enabled(TonicEncoding::Zstd) {
        set = set.with(CompressionEncoding::Zstd);
    }
    let _ = enabled;
    set
}

/// The builder methods `server::Grpc` and `client::Grpc` share with
/// tonic's: `accept_compressed` (into the `accept` field) and the two
/// message size limits (into `limits`), each with the docs of its side.
macro_rules! accept_and_limits {
    (
        $(#[$accept:meta])* accept_compressed;
        $(#[$decode:meta])* max_decoding_message_size;
        $(#[$encode:meta])* max_encoding_message_size;
    ) => {
        $(#[$accept])*
        pub fn accept_compressed(mut self, encoding: TonicEncoding) -> Self {
            if let Some(encoding) = encoding_from_tonic(encoding) {
                self.accept = self.accept.with(encoding);
            }
            self
        }

        $(#[$decode])*
        pub fn max_decoding_message_size(mut self, limit: usize) -> Self {
            self.limits = self.limits.with_max_receive(limit);
            self
        }

        $(#[$encode])*
        pub fn max_encoding_message_size(mut self, limit: usize) -> Self {
            self.limits = self.limits.with_max_send(limit);
            self
        }
    };
}
pub(super) use accept_and_limits;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tonic_encodings_map_by_name() {
        assert_eq!(
            encoding_from_tonic(TonicEncoding::Gzip),
            Some(CompressionEncoding::Gzip)
        );
        assert_eq!(
            encoding_from_tonic(TonicEncoding::Deflate),
            Some(CompressionEncoding::Deflate)
        );
        assert_eq!(
            encoding_from_tonic(TonicEncoding::Zstd),
            Some(CompressionEncoding::Zstd)
        );
        let mut enabled = EnabledCompressionEncodings::default();
        enabled.enable(TonicEncoding::Zstd);
        enabled.enable(TonicEncoding::Gzip);
        let set = encodings_from_tonic(enabled);
        assert!(set.contains(CompressionEncoding::Gzip));
        assert!(set.contains(CompressionEncoding::Zstd));
        assert!(!set.contains(CompressionEncoding::Deflate));
    }
}
