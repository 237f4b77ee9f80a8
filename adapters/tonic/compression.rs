//! tonic's compression settings in this crate's terms.

use std::fmt::{self, Write};

use http::HeaderMap;
use tonic::codec::{CompressionEncoding as TonicEncoding, EnabledCompressionEncodings};

use crate::Status;
use crate::compression::{CompressionEncoding, EncodingSet, GRPC_ACCEPT_ENCODING, GRPC_ENCODING};
use crate::status::Code;

/// This crate's encoding for one of tonic's.
///
/// tonic's enum has one variant per compression feature of *tonic*, so it is
/// matched by name, which works whatever features tonic was built with.
/// `None` when this crate was built without that encoding.
pub fn encoding_from_tonic(encoding: TonicEncoding) -> Option<CompressionEncoding> {
    let mut name = NameBuf::default();
    write!(name, "{encoding}").ok()?;
    CompressionEncoding::from_name(name.as_str()).filter(|encoding| encoding.is_supported())
}

/// The encodings tonic's generated code enabled, as a set of this crate's.
pub fn encodings_from_tonic(mut enabled: EnabledCompressionEncodings) -> EncodingSet {
    let mut set = EncodingSet::empty();
    // `pop` is the only way tonic lists what is enabled.
    while let Some(encoding) = enabled.pop() {
        if let Some(encoding) = encoding_from_tonic(encoding) {
            set = set.with(encoding);
        }
    }
    set
}

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
    let Some(value) = headers.get(GRPC_ENCODING) else {
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

/// The encoding to send with: the first entry of the peer's
/// `grpc-accept-encoding` (the peer's order of preference) that this side
/// may send, or `None`.
pub fn negotiate_send(headers: &HeaderMap, send: EncodingSet) -> Option<CompressionEncoding> {
    if send.is_empty() {
        return None;
    }
    headers
        .get_all(GRPC_ACCEPT_ENCODING)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .filter_map(|name| CompressionEncoding::from_name(name.trim()))
        .find(|encoding| !encoding.is_identity() && send.contains(*encoding))
}

/// Room for the longest encoding name tonic knows.
#[derive(Default)]
struct NameBuf {
    bytes: [u8; 16],
    len: usize,
}

impl NameBuf {
    fn as_str(&self) -> &str {
        std::str::from_utf8(&self.bytes[..self.len]).unwrap_or("")
    }
}

impl Write for NameBuf {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let end = self.len + s.len();
        let slot = self.bytes.get_mut(self.len..end).ok_or(fmt::Error)?;
        slot.copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
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

    #[test]
    fn send_encoding_follows_the_peers_preference() {
        let send = EncodingSet::empty()
            .with(CompressionEncoding::Gzip)
            .with(CompressionEncoding::Zstd);
        let accept = headers(GRPC_ACCEPT_ENCODING, "identity, zstd,gzip");
        assert_eq!(
            negotiate_send(&accept, send),
            Some(CompressionEncoding::Zstd)
        );
        let deflate_only = headers(GRPC_ACCEPT_ENCODING, "deflate");
        assert_eq!(negotiate_send(&deflate_only, send), None);
        assert_eq!(negotiate_send(&accept, EncodingSet::empty()), None);
    }
}
