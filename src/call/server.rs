//! One server call's rules on the request's headers, written once for both
//! adapters and checked before the call is served.

use http::HeaderMap;

use super::deadline::{GRPC_TIMEOUT, parse_timeout};
use crate::binary_metadata::{first_malformed_binary, malformed_binary_message};
use crate::observe;
use crate::status::{Code, Status};

/// The status a request is refused with when its headers break a rule
/// (`INTERNAL`, as grpc-go answers each): a `grpc-timeout` that is not 1 to
/// 8 digits and a unit (the frameworks ignore one, or overflow on it), or a
/// binary (`-bin`) header that is not base64. `None` for a request to serve.
pub fn request_head_error(headers: &HeaderMap) -> Option<Status> {
    if headers
        .get(GRPC_TIMEOUT)
        .is_some_and(|value| parse_timeout(value.as_bytes()).is_none())
    {
        return Some(Status::internal("malformed grpc-timeout"));
    }
    first_malformed_binary(headers).map(|name| Status::internal(malformed_binary_message(name)))
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

    #[test]
    fn a_malformed_deadline_or_binary_header_is_refused() {
        assert!(request_head_error(&headers("grpc-timeout", "10S")).is_none());
        assert!(request_head_error(&headers("x-trace-bin", "AAEC")).is_none());
        let timeout = request_head_error(&headers("grpc-timeout", "123456789S")).unwrap();
        assert_eq!(timeout.message(), "malformed grpc-timeout");
        let binary = request_head_error(&headers("x-trace-bin", "%%%")).unwrap();
        assert_eq!(
            binary.message(),
            malformed_binary_message(&"x-trace-bin".parse().unwrap())
        );
    }
}
