//! One server call's rules on the request's headers, written once for both
//! adapters and checked before the call is served.

use std::time::Duration;

use http::{HeaderMap, HeaderName, HeaderValue};

use super::deadline::{GRPC_TIMEOUT, parse_timeout};
use crate::binary_metadata::{is_binary_value, malformed_binary_message};
use crate::compression::{CompressionEncoding, EncodingSet, GRPC_ACCEPT_ENCODING, GRPC_ENCODING};
use crate::observe;
use crate::status::{Code, Status};

/// gRPC's name for the zlib format, which volo-grpc calls `zlib`.
const DEFLATE: &[u8] = b"deflate";

static ENCODING: HeaderName = HeaderName::from_static(GRPC_ENCODING);
static ACCEPT_ENCODING: HeaderName = HeaderName::from_static(GRPC_ACCEPT_ENCODING);

/// What the call layer takes from a request's headers.
#[derive(Debug, Default)]
pub struct RequestHead {
    /// The call's deadline, from `grpc-timeout`.
    pub timeout: Option<Duration>,
    /// The compression of the request's messages, from `grpc-encoding`.
    pub encoding: Option<CompressionEncoding>,
    /// Whether the request carries binary (`-bin`) metadata.
    pub has_binary: bool,
    /// Whether `grpc-encoding` or `grpc-accept-encoding` mentions
    /// `deflate`: a framework that calls it otherwise (volo-grpc's `zlib`)
    /// has names to change, and most requests have none.
    pub names_deflate: bool,
}

/// Reads a request's headers in one pass (every request pays for it), or
/// the status the request is refused with when they break a rule:
/// `INTERNAL`, as grpc-go answers each, for a `grpc-timeout` that is not 1
/// to 8 digits and a unit (the frameworks ignore one, or overflow on it) and
/// for a binary header that is not base64; then `UNIMPLEMENTED` for a
/// `grpc-encoding` outside `accepted` (see [`EncodingSet::received_encoding`]).
pub fn read_request_head(
    headers: &HeaderMap,
    accepted: EncodingSet,
) -> Result<RequestHead, Status> {
    let mut head = RequestHead::default();
    let mut timeout: Option<&HeaderValue> = None;
    let mut encoding: Option<&HeaderValue> = None;
    let mut malformed_binary: Option<&HeaderName> = None;
    for (name, value) in headers {
        if *name == GRPC_TIMEOUT {
            timeout.get_or_insert(value);
        } else if *name == ENCODING {
            encoding.get_or_insert(value);
        } else if *name == ACCEPT_ENCODING {
            head.names_deflate |= mentions_deflate(value.as_bytes());
        } else if name.as_str().ends_with("-bin") {
            head.has_binary = true;
            if malformed_binary.is_none() && !is_binary_value(value.as_bytes()) {
                malformed_binary = Some(name);
            }
        }
    }
    if let Some(value) = timeout {
        head.timeout = parse_timeout(value.as_bytes());
        if head.timeout.is_none() {
            return Err(Status::internal("malformed grpc-timeout"));
        }
    }
    if let Some(name) = malformed_binary {
        return Err(Status::internal(malformed_binary_message(name)));
    }
    head.names_deflate |= encoding.is_some_and(|value| value.as_bytes() == DEFLATE);
    head.encoding = encoding
        .map(|value| accepted.encoding_named(value))
        .transpose()?;
    Ok(head)
}

/// Whether a header value has `deflate` in it (a list of names may).
fn mentions_deflate(value: &[u8]) -> bool {
    value.windows(DEFLATE.len()).any(|window| window == DEFLATE)
}

/// `status`, for a request to `path` that the call layer refused before
/// serving it: the one place such a refusal is logged. A `grpc-encoding`
/// this build does not read (the only refusal answered `UNIMPLEMENTED`)
/// refuses the request's messages: it is counted with them.
pub fn refused(path: &str, status: Status) -> Status {
    if status.code() == Code::Unimplemented {
        let method = observe::Method::of(path);
        let reason = observe::Refusal::UnsupportedEncoding;
        observe::message_refused(observe::Side::Server, &method, reason, &status);
    } else {
        observe::request_refused(path, &status);
    }
    status
}

#[cfg(test)]
mod tests {
    use http::HeaderValue;

    use super::*;

    fn headers(name: &'static str, value: &'static str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(name, HeaderValue::from_static(value));
        headers
    }

    fn read(headers: &HeaderMap) -> Result<RequestHead, Status> {
        read_request_head(headers, EncodingSet::supported())
    }

    #[test]
    fn a_malformed_deadline_or_binary_header_is_refused() {
        let head = read(&headers("grpc-timeout", "10S")).unwrap();
        assert_eq!(head.timeout, Some(Duration::from_secs(10)));
        assert!(read(&headers("x-trace-bin", "AAEC")).unwrap().has_binary);
        let timeout = read(&headers("grpc-timeout", "123456789S")).unwrap_err();
        assert_eq!(timeout.message(), "malformed grpc-timeout");
        let binary = read(&headers("x-trace-bin", "%%%")).unwrap_err();
        assert_eq!(
            binary.message(),
            malformed_binary_message(&"x-trace-bin".parse().unwrap())
        );
    }

    #[test]
    fn a_bad_deadline_is_named_before_bad_binary_metadata_and_an_encoding() {
        let mut both = headers("x-trace-bin", "%%%");
        both.insert("grpc-encoding", HeaderValue::from_static("snappy"));
        assert!(read(&both).unwrap_err().message().contains("binary"));
        both.insert("grpc-timeout", HeaderValue::from_static("1x"));
        assert_eq!(read(&both).unwrap_err().message(), "malformed grpc-timeout");
    }

    #[test]
    fn the_encoding_is_checked_against_the_accepted_set() {
        let gzip = headers("grpc-encoding", "gzip");
        if CompressionEncoding::Gzip.is_supported() {
            assert_eq!(
                read(&gzip).unwrap().encoding,
                Some(CompressionEncoding::Gzip)
            );
        }
        let refused = read_request_head(&gzip, EncodingSet::default()).unwrap_err();
        assert_eq!(refused.code(), crate::status::Code::Unimplemented);
        assert_eq!(read(&HeaderMap::new()).unwrap().encoding, None);
    }

    #[test]
    fn deflate_is_noticed_in_either_encoding_header() {
        assert!(
            !read(&headers("grpc-accept-encoding", "gzip,zstd"))
                .unwrap()
                .names_deflate
        );
        assert!(
            read(&headers("grpc-accept-encoding", "gzip, deflate"))
                .unwrap()
                .names_deflate
        );
        if CompressionEncoding::Deflate.is_supported() {
            assert!(
                read(&headers("grpc-encoding", "deflate"))
                    .unwrap()
                    .names_deflate
            );
        }
        assert!(
            !read(&headers("grpc-encoding", "identity"))
                .unwrap()
                .names_deflate
        );
    }
}
