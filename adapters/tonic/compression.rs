//! tonic's compression settings in this crate's terms.

use http::{HeaderMap, HeaderName};
use tonic::codec::{CompressionEncoding as TonicEncoding, EnabledCompressionEncodings};

use crate::Status;
use crate::compression::{CompressionEncoding, EncodingSet, GRPC_ACCEPT_ENCODING, GRPC_ENCODING};
use crate::status::Code;

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

/// The encoding of a received stream, from its `grpc-encoding`, checked
/// against what this side accepts.
///
/// No header and `identity` are uncompressed. Anything else not in `accept`
/// is `unimplemented`, with `grpc-accept-encoding` in the status metadata
/// listing what is accepted, as the gRPC spec asks.
pub fn negotiate_received(
    headers: &HeaderMap,
    accept: EncodingSet,
) -> Result<Option<CompressionEncoding>, Status> {
    let Some(value) = headers.get(&ENCODING_NAME) else {
        return Ok(None);
    };
    let named = value.to_str().ok().and_then(CompressionEncoding::from_name);
    match named {
        Some(encoding) if encoding.is_identity() => Ok(None),
        Some(encoding) if accept.contains(encoding) && encoding.is_supported() => {
            Ok(Some(encoding))
        }
        _ => {
            let accepted = accept.with(CompressionEncoding::Identity);
            let mut metadata = HeaderMap::new();
            metadata.insert(GRPC_ACCEPT_ENCODING, accepted.accept_header_value());
            Err(Status::new(
                Code::Unimplemented,
                format!(
                    "message compression {:?} is not supported; supported: {accepted}",
                    String::from_utf8_lossy(value.as_bytes())
                ),
            )
            .with_metadata(metadata))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn headers(name: &'static str, value: &'static str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(name, HeaderValue::from_static(value));
        headers
    }

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

    #[test]
    fn received_encoding_must_be_accepted() {
        let accept = EncodingSet::empty().with(CompressionEncoding::Gzip);
        let gzip = headers(GRPC_ENCODING, "gzip");
        assert_eq!(
            negotiate_received(&gzip, accept).unwrap(),
            Some(CompressionEncoding::Gzip)
        );
        let identity = headers(GRPC_ENCODING, "identity");
        assert_eq!(negotiate_received(&identity, accept).unwrap(), None);
        assert_eq!(negotiate_received(&HeaderMap::new(), accept).unwrap(), None);

        for refused in ["zstd", "br"] {
            let status = negotiate_received(&headers(GRPC_ENCODING, refused), accept).unwrap_err();
            assert_eq!(status.code(), Code::Unimplemented);
            assert!(status.message().contains(refused), "{}", status.message());
            let listed = &status.metadata().unwrap()[GRPC_ACCEPT_ENCODING];
            assert_eq!(listed, "identity,gzip");
        }
    }
}
