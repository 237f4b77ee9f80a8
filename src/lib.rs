//! # grpc-stream-codec
//!
//! The framing half of a gRPC streaming stack, built to spend less memory and
//! CPU than the stock paths of tonic and volo-grpc. Modules:
//!
//! - [`encode`]: the batching encoder ([`encode::EncodeStream`]) and the HTTP
//!   body around it;
//! - [`decode`]: the frame-fed decoder ([`decode::EnvelopeAssembler`],
//!   [`decode::Streaming`])
//!   and its allocation policy;
//! - [`envelope`]: the 5-byte length prefix, its flags and size limits;
//! - [`compression`]: identity, gzip, deflate (zlib) and zstd, with ordered
//!   negotiation and decompression bounded by the receive limit;
//! - [`budget`]: a receive memory budget shared across streams, with
//!   HTTP/2 backpressure instead of errors;
//! - [`status`]: a compact [`status::Status`] that is cheap to return in
//!   `Result`;
//! - `observe` (feature `opentelemetry`): gRPC's OpenTelemetry metrics
//!   (gRFC A66) of the adapters' calls, and a receive budget's figures;
//! - `tonic` (feature `tonic`, build hook alone: `tonic-build-hook`): full
//!   framing for tonic 0.14 through a build-script hook, and a codec for
//!   `codec_path`;
//! - `volo` (feature `volo`, build hook alone: `volo-build-hook`): the
//!   adapter for volo-grpc 0.12's generated code.
//!
//! The core names no framework and no runtime; the adapters use it, never
//! the other way round. The repository's README has a quick start per
//! framework; `docs/architecture.md` maps the adapters' files side by side.
#![forbid(unsafe_code)]
#![warn(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod binary_metadata;
mod spares;

/// What `http_body::Body::poll_frame` returns for the crate's bodies of
/// `Bytes`.
pub(crate) type PolledFrame<E> = std::task::Poll<Option<Result<http_body::Frame<bytes::Bytes>, E>>>;

pub mod budget;
#[cfg(any(feature = "tonic", feature = "volo"))]
pub(crate) mod call;
pub mod compression;
pub mod decode;
pub mod encode;
pub mod envelope;
#[cfg(feature = "opentelemetry")]
pub mod observe;
#[cfg(not(feature = "opentelemetry"))]
mod observe;
pub mod status;

/// Puts `#[cfg(feature = $feature)]` on each item: the adapters' files and
/// names that need the framework itself, not only its build hook.
#[cfg(any(feature = "tonic-build-hook", feature = "volo-build-hook"))]
macro_rules! with_feature {
    ($feature:literal, $($item:item)*) => {
        $(#[cfg(feature = $feature)] $item)*
    };
}

/// `new`, `Default`, `Clone` and `Debug` (the type's name) for the
/// adapters' message encoders and decoders, `Name<T>(PhantomData<..>)`:
/// they hold no state, so none of it depends on `T`.
#[cfg(any(feature = "tonic", feature = "volo"))]
macro_rules! stateless_codec_impls {
    ($($name:ident),*) => {$(
        impl<T> $name<T> {
            /// One for `T`.
            pub fn new() -> Self {
                $name(std::marker::PhantomData)
            }
        }

        impl<T> Default for $name<T> {
            fn default() -> Self {
                Self::new()
            }
        }

        impl<T> Clone for $name<T> {
            fn clone(&self) -> Self {
                Self::new()
            }
        }

        impl<T> std::fmt::Debug for $name<T> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(stringify!($name))
            }
        }
    )*};
}

// The include check both adapters' include macros share.
#[cfg(any(feature = "tonic-build-hook", feature = "volo-build-hook"))]
#[macro_use]
mod include_check;

#[cfg(any(feature = "tonic-build-hook", feature = "volo-build-hook"))]
#[doc(hidden)]
pub mod codegen;

// The code-only path rewriter both build hooks share, and their errors.
#[cfg(any(feature = "volo-build-hook", feature = "tonic-build-hook"))]
pub mod build;
#[cfg(any(feature = "volo-build-hook", feature = "tonic-build-hook"))]
mod rewrite;

#[cfg(any(feature = "tonic", feature = "tonic-build-hook"))]
#[path = "../adapters/tonic/mod.rs"]
pub mod tonic;

#[cfg(any(feature = "volo", feature = "volo-build-hook"))]
#[path = "../adapters/volo/mod.rs"]
pub mod volo;
