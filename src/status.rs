//! A compact gRPC status: cheap to build, cheap to return in `Result`.
//!
//! [`Status`] is at most 40 bytes on 64-bit targets. Its code and message are
//! stored inline; binary details, metadata and a source error live in one
//! boxed part that is only allocated when one of them is set, so
//! `Status::new(code, "static text")` touches the heap not at all.
//!
//! ```
//! use grpc_stream_codec::status::{Code, Status};
//!
//! fn lookup(id: u32) -> Result<u32, Status> {
//!     if id == 0 {
//!         return Err(Status::new(Code::InvalidArgument, "id must not be 0"));
//!     }
//!     Ok(id * 2)
//! }
//! assert_eq!(lookup(0).unwrap_err().code(), Code::InvalidArgument);
//! ```

use std::borrow::Cow;
use std::error::Error as StdError;
use std::fmt;
use std::sync::Arc;

use base64::Engine as _;
use bytes::Bytes;
use http::header::{HeaderMap, HeaderName, HeaderValue};
use percent_encoding::{AsciiSet, CONTROLS, percent_decode, percent_encode};

/// Header carrying the numeric status code.
pub const GRPC_STATUS: &str = "grpc-status";
/// Header carrying the percent-encoded status message.
pub const GRPC_MESSAGE: &str = "grpc-message";
/// Header carrying base64 `google.rpc.Status` details.
pub const GRPC_STATUS_DETAILS: &str = "grpc-status-details-bin";

// The same names, parsed once: every response's trailers write them, and a
// `&str` key is parsed again on each lookup or insert.
const STATUS_NAME: HeaderName = HeaderName::from_static(GRPC_STATUS);
const MESSAGE_NAME: HeaderName = HeaderName::from_static(GRPC_MESSAGE);
const DETAILS_NAME: HeaderName = HeaderName::from_static(GRPC_STATUS_DETAILS);

/// Headers that belong to the gRPC protocol itself and are never kept as
/// user metadata when a status is read.
const RESERVED_HEADERS: &[&str] = &[
    GRPC_STATUS,
    GRPC_MESSAGE,
    GRPC_STATUS_DETAILS,
    "grpc-message-type",
    "grpc-encoding",
    "grpc-accept-encoding",
    "grpc-timeout",
    "content-type",
    "te",
    "user-agent",
];

/// Bytes the gRPC HTTP/2 spec requires to be percent-encoded in
/// `grpc-message`: everything outside printable ASCII (0x20..=0x7E) and `%`
/// itself. `percent_encode` always encodes non-ASCII bytes.
const MESSAGE_ENCODE_SET: &AsciiSet = &CONTROLS.add(b'%');

/// The gRPC status codes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Code {
    /// Not an error.
    Ok = 0,
    /// The operation was cancelled, typically by the caller.
    Cancelled = 1,
    /// Unknown error.
    Unknown = 2,
    /// The client specified an invalid argument.
    InvalidArgument = 3,
    /// The deadline expired before the operation could complete.
    DeadlineExceeded = 4,
    /// Some requested entity was not found.
    NotFound = 5,
    /// The entity a client attempted to create already exists.
    AlreadyExists = 6,
    /// The caller lacks permission for the operation.
    PermissionDenied = 7,
    /// Some resource (memory, quota, message size) has been exhausted.
    ResourceExhausted = 8,
    /// The system is not in a state required for the operation.
    FailedPrecondition = 9,
    /// The operation was aborted, typically due to a concurrency issue.
    Aborted = 10,
    /// The operation was attempted past the valid range.
    OutOfRange = 11,
    /// The operation is not implemented or supported.
    Unimplemented = 12,
    /// An invariant the system relies on has been broken.
    Internal = 13,
    /// The service is currently unavailable.
    Unavailable = 14,
    /// Unrecoverable data loss or corruption.
    DataLoss = 15,
    /// The request lacks valid authentication credentials.
    Unauthenticated = 16,
}

impl Code {
    const ALL: [Code; 17] = [
        Code::Ok,
        Code::Cancelled,
        Code::Unknown,
        Code::InvalidArgument,
        Code::DeadlineExceeded,
        Code::NotFound,
        Code::AlreadyExists,
        Code::PermissionDenied,
        Code::ResourceExhausted,
        Code::FailedPrecondition,
        Code::Aborted,
        Code::OutOfRange,
        Code::Unimplemented,
        Code::Internal,
        Code::Unavailable,
        Code::DataLoss,
        Code::Unauthenticated,
    ];

    /// The code for a numeric value; values outside 0..=16 are `Unknown`.
    pub fn from_i32(value: i32) -> Code {
        usize::try_from(value)
            .ok()
            .and_then(|index| Self::ALL.get(index).copied())
            .unwrap_or(Code::Unknown)
    }

    /// The code a `grpc-status` value names: decimal digits, blanks around
    /// them allowed; `None` for anything else. Read by hand: a status is
    /// read on every call, and `str::parse` costs more than the digits.
    pub(crate) fn from_header_value(value: &[u8]) -> Option<Code> {
        let digits = value.trim_ascii();
        // More digits than any i32 has are out of range, hence `Unknown`.
        if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
            return None;
        }
        if digits.len() > 9 {
            return Some(Code::Unknown);
        }
        let value = digits
            .iter()
            .fold(0, |value, digit| value * 10 + i32::from(digit - b'0'));
        Some(Code::from_i32(value))
    }

    /// The numeric value of this code.
    pub const fn as_i32(self) -> i32 {
        self as i32
    }

    /// The canonical upper-case name, e.g. `RESOURCE_EXHAUSTED`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Code::Ok => "OK",
            Code::Cancelled => "CANCELLED",
            Code::Unknown => "UNKNOWN",
            Code::InvalidArgument => "INVALID_ARGUMENT",
            Code::DeadlineExceeded => "DEADLINE_EXCEEDED",
            Code::NotFound => "NOT_FOUND",
            Code::AlreadyExists => "ALREADY_EXISTS",
            Code::PermissionDenied => "PERMISSION_DENIED",
            Code::ResourceExhausted => "RESOURCE_EXHAUSTED",
            Code::FailedPrecondition => "FAILED_PRECONDITION",
            Code::Aborted => "ABORTED",
            Code::OutOfRange => "OUT_OF_RANGE",
            Code::Unimplemented => "UNIMPLEMENTED",
            Code::Internal => "INTERNAL",
            Code::Unavailable => "UNAVAILABLE",
            Code::DataLoss => "DATA_LOSS",
            Code::Unauthenticated => "UNAUTHENTICATED",
        }
    }

    /// The code for an HTTP response that carried no `grpc-status`, per the
    /// gRPC spec's "HTTP to gRPC status code mapping".
    pub fn from_http_status(status: u16) -> Code {
        match status {
            400 => Code::Internal,
            401 => Code::Unauthenticated,
            403 => Code::PermissionDenied,
            404 => Code::Unimplemented,
            429 | 502 | 503 | 504 => Code::Unavailable,
            _ => Code::Unknown,
        }
    }

    /// The `grpc-status` header value for this code.
    fn header_value(self) -> HeaderValue {
        const DIGITS: [&str; 17] = [
            "0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "13", "14", "15",
            "16",
        ];
        HeaderValue::from_static(DIGITS[self as usize])
    }
}

impl From<i32> for Code {
    fn from(value: i32) -> Self {
        Code::from_i32(value)
    }
}

impl From<Code> for i32 {
    fn from(code: Code) -> Self {
        code.as_i32()
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The optional, rarely used parts of a [`Status`], boxed together so the
/// common case costs one pointer.
#[derive(Clone, Default)]
struct Extra {
    details: Bytes,
    metadata: HeaderMap,
    source: Option<Arc<dyn StdError + Send + Sync + 'static>>,
}

/// A gRPC status: a [`Code`], a message, and optional binary details,
/// metadata and source error.
#[derive(Clone)]
pub struct Status {
    code: Code,
    message: Cow<'static, str>,
    extra: Option<Box<Extra>>,
}

impl Status {
    /// A status with a code and message. A `&'static str` message is stored
    /// without allocating.
    pub fn new(code: Code, message: impl Into<Cow<'static, str>>) -> Status {
        Status {
            code,
            message: message.into(),
            extra: None,
        }
    }

    /// An `OK` status with an empty message.
    pub const fn ok() -> Status {
        Status {
            code: Code::Ok,
            message: Cow::Borrowed(""),
            extra: None,
        }
    }

    /// An `internal` status.
    pub fn internal(message: impl Into<Cow<'static, str>>) -> Status {
        Status::new(Code::Internal, message)
    }

    /// A status whose message is the error's text and whose source is the error.
    pub fn from_error(code: Code, error: impl StdError + Send + Sync + 'static) -> Status {
        Status::new(code, error.to_string()).with_source(error)
    }

    /// The status for an HTTP response that carried no `grpc-status`.
    pub fn from_http_status(status: http::StatusCode) -> Status {
        let code = Code::from_http_status(status.as_u16());
        Status::new(code, format!("HTTP status {status} without a grpc-status"))
    }

    /// The status code.
    pub fn code(&self) -> Code {
        self.code
    }

    /// The status message.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The binary details (`grpc-status-details-bin`), empty when unset.
    pub fn details(&self) -> &[u8] {
        self.extra.as_ref().map_or(&[], |extra| &extra.details)
    }

    /// The metadata carried with the status, if any was set.
    pub fn metadata(&self) -> Option<&HeaderMap> {
        self.extra
            .as_ref()
            .map(|extra| &extra.metadata)
            .filter(|map| !map.is_empty())
    }

    /// Mutable metadata; allocates the boxed part on first use.
    pub fn metadata_mut(&mut self) -> &mut HeaderMap {
        &mut self.extra_mut().metadata
    }

    /// Takes the metadata out of the status, leaving it empty.
    pub fn take_metadata(&mut self) -> HeaderMap {
        self.extra
            .as_mut()
            .map(|extra| std::mem::take(&mut extra.metadata))
            .unwrap_or_default()
    }

    /// Takes the details out of the status, leaving them empty.
    pub fn take_details(&mut self) -> Bytes {
        self.extra
            .as_mut()
            .map(|extra| std::mem::take(&mut extra.details))
            .unwrap_or_default()
    }

    /// Sets the binary details.
    pub fn with_details(mut self, details: impl Into<Bytes>) -> Status {
        self.extra_mut().details = details.into();
        self
    }

    /// Sets the metadata, replacing any that was there.
    pub fn with_metadata(mut self, metadata: HeaderMap) -> Status {
        if !metadata.is_empty() || self.extra.is_some() {
            self.extra_mut().metadata = metadata;
        }
        self
    }

    /// Sets the underlying error, reported by [`std::error::Error::source`].
    pub fn with_source(mut self, source: impl StdError + Send + Sync + 'static) -> Status {
        self.extra_mut().source = Some(Arc::new(source));
        self
    }

    /// The code, message, details and metadata, moved out.
    pub fn into_parts(self) -> (Code, Cow<'static, str>, Bytes, HeaderMap) {
        let (details, metadata) = match self.extra {
            Some(extra) => {
                let Extra {
                    details, metadata, ..
                } = *extra;
                (details, metadata)
            }
            None => (Bytes::new(), HeaderMap::new()),
        };
        (self.code, self.message, details, metadata)
    }

    fn extra_mut(&mut self) -> &mut Extra {
        self.extra.get_or_insert_with(Box::default)
    }

    /// Reads a status from response headers or trailers, copying metadata.
    ///
    /// Returns `None` when there is no `grpc-status` header. An `OK` status
    /// copies no metadata.
    pub fn from_header_map(headers: &HeaderMap) -> Option<Status> {
        let mut status = Self::read_code_and_message(headers)?;
        if status.code != Code::Ok {
            let mut metadata = HeaderMap::new();
            for (name, value) in headers {
                if !is_reserved(name) {
                    metadata.append(name.clone(), value.clone());
                }
            }
            status = status.with_metadata(metadata);
        }
        Some(status)
    }

    /// Reads a status from owned headers or trailers, moving the non-reserved
    /// entries into its metadata without copying them.
    ///
    /// Returns `None` when there is no `grpc-status` header.
    pub fn from_headers(mut headers: HeaderMap) -> Option<Status> {
        let status = Self::read_code_and_message(&headers)?;
        if status.code == Code::Ok {
            return Some(status);
        }
        for name in RESERVED_HEADERS {
            headers.remove(*name);
        }
        Some(status.with_metadata(headers))
    }

    fn read_code_and_message(headers: &HeaderMap) -> Option<Status> {
        let raw_code = headers.get(&STATUS_NAME)?;
        let Some(code) = Code::from_header_value(raw_code.as_bytes()) else {
            return Some(Status::new(
                Code::Unknown,
                format!("invalid grpc-status header: {raw_code:?}"),
            ));
        };
        let message: Cow<'static, str> = match headers.get(&MESSAGE_NAME) {
            Some(value) => Cow::Owned(decode_message(value.as_bytes())),
            None => Cow::Borrowed(""),
        };
        let mut status = Status::new(code, message);
        if let Some(details) = headers.get(&DETAILS_NAME) {
            match crate::binary_metadata::BASE64_LENIENT.decode(details.as_bytes()) {
                Ok(decoded) => status = status.with_details(decoded),
                Err(error) => {
                    return Some(Status::new(
                        Code::Internal,
                        format!("invalid grpc-status-details-bin: {error}"),
                    ));
                }
            }
        }
        Some(status)
    }

    /// Writes `grpc-status`, `grpc-message` (percent-encoded, omitted when
    /// empty), `grpc-status-details-bin` (base64, unpadded) and the metadata
    /// into `headers`.
    pub fn write_headers(&self, headers: &mut HeaderMap) {
        headers.insert(STATUS_NAME, self.code.header_value());
        if !self.message.is_empty() {
            headers.insert(MESSAGE_NAME, encode_message(&self.message));
        }
        if let Some(extra) = &self.extra {
            if !extra.details.is_empty() {
                let encoded = crate::binary_metadata::BASE64_LENIENT.encode(&extra.details);
                // Base64 output is always a valid header value.
                if let Ok(value) = HeaderValue::from_str(&encoded) {
                    headers.insert(DETAILS_NAME, value);
                }
            }
            for (name, value) in &extra.metadata {
                headers.append(name.clone(), value.clone());
            }
        }
    }

    /// Like [`Status::write_headers`], moving the metadata instead of copying it.
    pub fn into_headers(mut self, headers: &mut HeaderMap) {
        let metadata = self.take_metadata();
        self.write_headers(headers);
        // Most statuses (every `OK` a server sends) carry none: no walk.
        if !metadata.is_empty() {
            append_moved(headers, metadata);
        }
    }

    /// A new header map holding this status, as sent in trailers.
    pub fn to_header_map(&self) -> HeaderMap {
        let mut headers = HeaderMap::new();
        self.write_headers(&mut headers);
        headers
    }
}

/// Appends every entry of `metadata` to `headers`, moving the values.
fn append_moved(headers: &mut HeaderMap, metadata: HeaderMap) {
    let mut last_name: Option<HeaderName> = None;
    for (name, value) in metadata {
        // `HeaderMap::into_iter` yields the name only on a key's first value.
        if let Some(name) = name {
            last_name = Some(name);
        }
        if let Some(name) = &last_name {
            headers.append(name.clone(), value);
        }
    }
}

fn is_reserved(name: &HeaderName) -> bool {
    RESERVED_HEADERS.contains(&name.as_str())
}

/// Percent-encodes a status message for `grpc-message`.
pub(crate) fn encode_message(message: &str) -> HeaderValue {
    let encoded: Cow<'_, str> = percent_encode(message.as_bytes(), MESSAGE_ENCODE_SET).into();
    match encoded {
        Cow::Borrowed(text) => HeaderValue::from_str(text),
        Cow::Owned(text) => HeaderValue::try_from(text),
    }
    // Every byte left unencoded is printable ASCII, which is always valid.
    .unwrap_or_else(|_| HeaderValue::from_static(""))
}

/// Decodes a `grpc-message` value; invalid UTF-8 is replaced, not rejected,
/// as the spec asks of receivers.
pub fn decode_message(raw: &[u8]) -> String {
    percent_decode(raw).decode_utf8_lossy().into_owned()
}

impl fmt::Debug for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut debug = f.debug_struct("Status");
        debug.field("code", &self.code);
        debug.field("message", &self.message);
        if let Some(extra) = &self.extra {
            if !extra.details.is_empty() {
                debug.field("details", &extra.details);
            }
            if !extra.metadata.is_empty() {
                debug.field("metadata", &extra.metadata);
            }
            if let Some(source) = &extra.source {
                debug.field("source", source);
            }
        }
        debug.finish()
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.message.is_empty() {
            write!(f, "{}", self.code)
        } else {
            write!(f, "{}: {}", self.code, self.message)
        }
    }
}

impl StdError for Status {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        self.extra
            .as_ref()
            .and_then(|extra| extra.source.as_deref())
            .map(|source| source as &(dyn StdError + 'static))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_status_value_is_its_digits_and_nothing_else() {
        let read = Code::from_header_value;
        assert_eq!(read(b"0"), Some(Code::Ok));
        assert_eq!(read(b" 14 "), Some(Code::Unavailable));
        assert_eq!(read(b"16"), Some(Code::Unauthenticated));
        assert_eq!(read(b"17"), Some(Code::Unknown));
        assert_eq!(read(b"99999999999999"), Some(Code::Unknown));
        for invalid in [&b""[..], b" ", b"+5", b"-1", b"1a", b"\xff"] {
            assert_eq!(read(invalid), None, "{invalid:?}");
        }
    }

    #[test]
    fn ok_status_copies_no_metadata() {
        let mut headers = HeaderMap::new();
        headers.insert(GRPC_STATUS, HeaderValue::from_static("0"));
        headers.insert("x-trace", HeaderValue::from_static("t"));
        let status = Status::from_header_map(&headers).unwrap();
        assert_eq!(status.code(), Code::Ok);
        assert!(status.extra.is_none());
        let status = Status::from_headers(headers).unwrap();
        assert!(status.extra.is_none());
    }
}
