//! Why compressed data could not be written or read: one error type for both
//! directions, turned into a [`Status`] once, with the codec's own error (if
//! it has one) kept as the status's source.

use std::borrow::Cow;
use std::error::Error as StdError;
use std::fmt;

use super::CompressionEncoding;
use crate::status::{Code, Status};

/// A codec's failure on one payload.
#[derive(Debug)]
pub(crate) struct CodecError {
    what: Cow<'static, str>,
    source: Option<Box<dyn StdError + Send + Sync + 'static>>,
}

impl CodecError {
    /// A failure this crate detected itself (a bad header, no progress).
    #[cfg(any(feature = "gzip", feature = "deflate", feature = "zstd"))]
    pub(crate) fn new(what: impl Into<Cow<'static, str>>) -> Self {
        CodecError {
            what: what.into(),
            source: None,
        }
    }

    /// A failure the codec library reported, kept as the source.
    #[cfg(any(feature = "gzip", feature = "deflate"))]
    pub(crate) fn from_library(error: impl StdError + Send + Sync + 'static) -> Self {
        CodecError {
            what: error.to_string().into(),
            source: Some(Box::new(error)),
        }
    }

    /// A zstd error code, by zstd's name for it.
    #[cfg(feature = "zstd")]
    pub(crate) fn zstd(code: usize) -> Self {
        CodecError::new(zstd::zstd_safe::get_error_name(code))
    }

    /// The `internal` status of a failed `action` ("compression",
    /// "decompression") with `encoding`, with this error as its source (so
    /// what reads the status can tell a codec's failure from the others).
    pub(crate) fn into_status(self, encoding: CompressionEncoding, action: &str) -> Status {
        Status::new(
            Code::Internal,
            format!("{encoding} {action} failed: {}", self.what),
        )
        .with_source(self)
    }

    /// Whether `status` is a codec's failure ([`into_status`](Self::into_status)).
    pub(crate) fn is_source_of(status: &Status) -> bool {
        StdError::source(status).is_some_and(|source| source.is::<CodecError>())
    }
}

impl fmt::Display for CodecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.what)
    }
}

// Displayed as the library's error when there is one (`what` is its
// text), and its causes are the library error's own.
impl StdError for CodecError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        self.source.as_ref().and_then(|source| source.source())
    }
}

/// How reading compressed data stopped short of a message.
#[derive(Debug)]
pub(crate) enum Failure {
    /// Output past the receive limit.
    TooLarge,
    /// Output past the room allowed for now, which is below the limit.
    OutOfRoom,
    /// Data that does not decode.
    #[cfg(any(feature = "gzip", feature = "deflate", feature = "zstd"))]
    Corrupt(CodecError),
    /// Bytes after the end of the compressed data.
    #[cfg(any(feature = "gzip", feature = "deflate", feature = "zstd"))]
    Trailing(usize),
}

#[cfg(any(feature = "gzip", feature = "deflate", feature = "zstd"))]
impl Failure {
    /// Data that does not decode, for a reason this crate found.
    pub(crate) fn corrupt(why: &'static str) -> Self {
        Failure::Corrupt(CodecError::new(why))
    }
}
