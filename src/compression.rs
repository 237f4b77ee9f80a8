//! Message compression: `identity`, `gzip`, `deflate` (zlib format, as gRPC
//! means the name) and `zstd`, header negotiation, and decompression that
//! never writes more than the receive limit.
//!
//! One negotiation rule, used by both adapters: a client lists what it
//! accepts in `grpc-accept-encoding` in its order of preference
//! ([`EncodingList`], the order its `accept_compressed` calls came in, then
//! `identity`), and a server answers with the first entry of that list it
//! may send ([`EncodingSet::negotiate`]), as stock tonic and volo-grpc do.
//!
//! ```
//! use grpc_stream_codec::compression::{CompressionEncoding, EncodingList, EncodingSet};
//! use http::HeaderMap;
//!
//! // The client prefers zstd, then gzip.
//! let accept = EncodingList::empty()
//!     .with(CompressionEncoding::Zstd)
//!     .with(CompressionEncoding::Gzip);
//! let mut headers = HeaderMap::new();
//! headers.insert("grpc-accept-encoding", accept.accept_header_value().unwrap());
//! assert_eq!(headers["grpc-accept-encoding"], "zstd,gzip,identity");
//!
//! // A server that may send gzip and zstd answers with zstd.
//! let send = EncodingSet::empty()
//!     .with(CompressionEncoding::Gzip)
//!     .with(CompressionEncoding::Zstd);
//! assert_eq!(send.negotiate(&headers), Some(CompressionEncoding::Zstd));
//! ```

mod compress;
mod decompress;
mod error;
#[cfg(feature = "gzip")]
mod gzip;
#[cfg(any(feature = "gzip", feature = "deflate", feature = "zstd"))]
mod pool;
// The cases cover every encoding at once.
#[cfg(all(test, feature = "gzip", feature = "deflate", feature = "zstd"))]
mod context_tests;

use std::fmt;

use bytes::{Buf, BufMut, BytesMut};
use http::HeaderValue;

pub use compress::Compressor;
pub(crate) use decompress::Bounded;
pub use decompress::Decompressor;
pub(crate) use error::CodecError;

use crate::status::{Code, Status};

/// Header naming the encoding of compressed messages on a stream.
pub const GRPC_ENCODING: &str = "grpc-encoding";
/// Header listing the encodings a peer accepts.
pub const GRPC_ACCEPT_ENCODING: &str = "grpc-accept-encoding";

/// volo-grpc's name for gRPC's `deflate` (zlib format), read as `deflate`
/// wherever an encoding name is read.
pub(crate) const ZLIB_NAME: &str = "zlib";

/// A message encoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CompressionEncoding {
    /// No compression.
    Identity,
    /// gzip (RFC 1952).
    Gzip,
    /// zlib (RFC 1950), which gRPC calls `deflate`.
    Deflate,
    /// Zstandard.
    Zstd,
}

impl CompressionEncoding {
    const ALL: [CompressionEncoding; 4] = [
        CompressionEncoding::Identity,
        CompressionEncoding::Gzip,
        CompressionEncoding::Deflate,
        CompressionEncoding::Zstd,
    ];

    /// The name used in `grpc-encoding` and `grpc-accept-encoding`.
    pub const fn name(self) -> &'static str {
        match self {
            CompressionEncoding::Identity => "identity",
            CompressionEncoding::Gzip => "gzip",
            CompressionEncoding::Deflate => "deflate",
            CompressionEncoding::Zstd => "zstd",
        }
    }

    /// Reads an encoding name. `zlib` is read as `deflate`, since volo-grpc
    /// sends that name. Names are case-sensitive, as in the gRPC spec.
    pub fn from_name(name: &str) -> Option<CompressionEncoding> {
        match name.trim() {
            "identity" => Some(CompressionEncoding::Identity),
            "gzip" => Some(CompressionEncoding::Gzip),
            "deflate" | ZLIB_NAME => Some(CompressionEncoding::Deflate),
            "zstd" => Some(CompressionEncoding::Zstd),
            _ => None,
        }
    }

    /// Whether this build can compress and decompress the encoding (the
    /// cargo features `gzip`, `deflate` and `zstd`).
    pub const fn is_supported(self) -> bool {
        match self {
            CompressionEncoding::Identity => true,
            CompressionEncoding::Gzip => cfg!(feature = "gzip"),
            CompressionEncoding::Deflate => cfg!(feature = "deflate"),
            CompressionEncoding::Zstd => cfg!(feature = "zstd"),
        }
    }

    /// Whether this encoding leaves payloads as they are.
    pub const fn is_identity(self) -> bool {
        matches!(self, CompressionEncoding::Identity)
    }

    /// The header value naming this encoding.
    pub const fn header_value(self) -> HeaderValue {
        HeaderValue::from_static(self.name())
    }

    /// Reads the stream's `grpc-encoding` header against every encoding
    /// this build supports (see [`EncodingSet::received_encoding`]).
    pub fn from_encoding_header(
        headers: &http::HeaderMap,
    ) -> Result<Option<CompressionEncoding>, Status> {
        EncodingSet::supported().received_encoding(headers)
    }

    const fn bit(self) -> u8 {
        1 << self as u8
    }
}

impl fmt::Display for CompressionEncoding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A compression level.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum CompressionLevel {
    /// The fastest setting of the algorithm.
    Fastest,
    /// The algorithm's default trade-off.
    #[default]
    Default,
    /// The smallest output the algorithm can produce.
    Best,
    /// An algorithm-specific level (flate2: 0..=9, zstd: 1..=22), clamped.
    Precise(i32),
}

/// An encoding with a level: what a sender compresses with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Compression {
    /// The encoding.
    pub encoding: CompressionEncoding,
    /// The level.
    pub level: CompressionLevel,
}

impl Compression {
    /// An encoding at its default level.
    pub const fn new(encoding: CompressionEncoding) -> Self {
        Self {
            encoding,
            level: CompressionLevel::Default,
        }
    }

    /// Sets the level.
    pub const fn with_level(mut self, level: CompressionLevel) -> Self {
        self.level = level;
        self
    }

    /// Compresses all of `input` (consuming it) and appends the result to `out`.
    ///
    /// `Identity` copies the input as it is. Each call sets up a context of
    /// its own; a stream of messages should keep a [`Compressor`] instead.
    pub fn compress(&self, input: &mut impl Buf, out: &mut impl BufMut) -> Result<(), Status> {
        let mut compressed = BytesMut::new();
        Compressor::new(*self).compress(input, &mut compressed)?;
        out.put_slice(&compressed);
        Ok(())
    }

    /// The deflate level, 0..=9 as in zlib (libdeflate reads them alike;
    /// its 10..=12 are far slower and not offered).
    #[cfg(any(feature = "gzip", feature = "deflate"))]
    fn deflate_level(&self) -> i32 {
        match self.level {
            CompressionLevel::Fastest => 1,
            CompressionLevel::Default => 6,
            CompressionLevel::Best => 9,
            CompressionLevel::Precise(level) => level.clamp(0, 9),
        }
    }

    #[cfg(feature = "zstd")]
    fn zstd_level(&self) -> i32 {
        match self.level {
            CompressionLevel::Fastest => 1,
            // zstd's own default trades ratio for speed the way gRPC users expect.
            CompressionLevel::Default => zstd::DEFAULT_COMPRESSION_LEVEL,
            CompressionLevel::Best => 19,
            CompressionLevel::Precise(level) => level.clamp(1, 22),
        }
    }
}

impl From<CompressionEncoding> for Compression {
    fn from(encoding: CompressionEncoding) -> Self {
        Compression::new(encoding)
    }
}

/// Decompresses all of `input` (consuming it) and appends the result to `out`,
/// writing at most `limit` bytes.
///
/// Output beyond `limit` fails with `resource_exhausted` (the envelope's
/// standard text) before it is written, and `out` never grows past `limit`
/// bytes of capacity, so a small bomb cannot make a large allocation. Corrupt
/// input is `internal`, and so is input with bytes left over after the end of
/// the compressed stream (they would otherwise be dropped unseen).
///
/// Each call sets up a context of its own; a stream of messages should keep
/// a [`Decompressor`] instead.
pub fn decompress(
    encoding: CompressionEncoding,
    input: &mut impl Buf,
    out: &mut Vec<u8>,
    limit: usize,
) -> Result<(), Status> {
    let mut decompressor = Decompressor::new(encoding);
    let len = input.remaining();
    if input.chunk().len() == len {
        decompressor.decompress(input.chunk(), out, limit)?;
        input.advance(len);
    } else {
        let joined = input.copy_to_bytes(len);
        decompressor.decompress(&joined, out, limit)?;
    }
    Ok(())
}

/// The largest zstd window a frame may declare when at most `limit` bytes
/// may come out of it. zstd allocates the declared window up front, so a tiny
/// frame could otherwise reserve up to 128 MiB; a window larger than the
/// whole permitted output buys the sender nothing. Never below 8 MiB (2^23),
/// the window common encoders use at their default levels (zstd's own and
/// Go's), never above zstd's default cap (2^27).
#[cfg(feature = "zstd")]
fn zstd_window_log_max(limit: usize) -> u32 {
    let needed = usize::BITS - limit.saturating_sub(1).leading_zeros();
    needed.clamp(23, 27)
}

fn unsupported(encoding: CompressionEncoding) -> Status {
    Status::new(
        Code::Unimplemented,
        format!(
            "{encoding} is not enabled in this build; supported: {}",
            EncodingSet::supported()
        ),
    )
}

/// A set of encodings, as listed in `grpc-accept-encoding`.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct EncodingSet(u8);

impl EncodingSet {
    /// The empty set.
    pub const fn empty() -> Self {
        EncodingSet(0)
    }

    /// Every encoding this build supports, `identity` included.
    pub fn supported() -> Self {
        CompressionEncoding::ALL
            .into_iter()
            .filter(|encoding| encoding.is_supported())
            .collect()
    }

    /// The encoding of a received stream, from its `grpc-encoding`,
    /// checked against this set of accepted encodings.
    ///
    /// No header means `None` (messages must not be compressed); `identity`
    /// is always accepted. Anything else outside the set, or not supported
    /// by this build, is `unimplemented`, listing what is accepted in the
    /// message and in `grpc-accept-encoding` metadata, as the gRPC spec
    /// asks.
    pub fn received_encoding(
        self,
        headers: &http::HeaderMap,
    ) -> Result<Option<CompressionEncoding>, Status> {
        match headers.get(GRPC_ENCODING) {
            Some(value) => self.encoding_named(value).map(Some),
            None => Ok(None),
        }
    }

    /// The encoding a `grpc-encoding` value names, checked as
    /// [`received_encoding`](Self::received_encoding) checks it.
    pub(crate) fn encoding_named(self, value: &HeaderValue) -> Result<CompressionEncoding, Status> {
        let named = value.to_str().ok().and_then(CompressionEncoding::from_name);
        match named {
            Some(encoding)
                if encoding.is_identity()
                    || (self.contains(encoding) && encoding.is_supported()) =>
            {
                Ok(encoding)
            }
            _ => {
                let accepted = self.with(CompressionEncoding::Identity);
                let mut metadata = http::HeaderMap::new();
                metadata.insert(GRPC_ACCEPT_ENCODING, accepted.accept_header_value());
                Err(Status::new(
                    Code::Unimplemented,
                    format!(
                        "unsupported grpc-encoding {:?}; supported: {accepted}",
                        String::from_utf8_lossy(value.as_bytes()),
                    ),
                )
                .with_metadata(metadata))
            }
        }
    }

    /// Adds an encoding.
    pub const fn with(self, encoding: CompressionEncoding) -> Self {
        EncodingSet(self.0 | encoding.bit())
    }

    /// Whether the set holds `encoding`.
    pub const fn contains(self, encoding: CompressionEncoding) -> bool {
        self.0 & encoding.bit() != 0
    }

    /// Whether the set is empty.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The encodings in the set, in the order `identity, gzip, deflate, zstd`.
    pub fn iter(self) -> impl Iterator<Item = CompressionEncoding> {
        CompressionEncoding::ALL
            .into_iter()
            .filter(move |encoding| self.contains(*encoding))
    }

    /// Parses a `grpc-accept-encoding` value; unknown names are ignored.
    pub fn parse_accept(value: &str) -> Self {
        value
            .split(',')
            .filter_map(CompressionEncoding::from_name)
            .collect()
    }

    /// Reads the `grpc-accept-encoding` header; absent means no compression
    /// is accepted beyond `identity`.
    pub fn from_accept_header(headers: &http::HeaderMap) -> Self {
        headers
            .get_all(GRPC_ACCEPT_ENCODING)
            .iter()
            .filter_map(|value| value.to_str().ok())
            .fold(EncodingSet::empty(), |set, value| {
                EncodingSet(set.0 | EncodingSet::parse_accept(value).0)
            })
            .with(CompressionEncoding::Identity)
    }

    /// The `grpc-accept-encoding` value listing this set.
    pub fn accept_header_value(self) -> HeaderValue {
        HeaderValue::try_from(self.to_string()).unwrap_or_else(|_| HeaderValue::from_static(""))
    }

    /// The encoding to send with, given the peer's request headers: the
    /// first entry of its `grpc-accept-encoding` (its order of preference;
    /// several header values are read in order) that is a compressing
    /// encoding this set holds and this build supports; `None` (send
    /// uncompressed) when there is none. This is the rule stock tonic and
    /// volo-grpc servers follow, and the one both adapters use.
    pub fn negotiate(self, headers: &http::HeaderMap) -> Option<CompressionEncoding> {
        if self.is_empty() {
            return None;
        }
        headers
            .get_all(GRPC_ACCEPT_ENCODING)
            .iter()
            .filter_map(|value| value.to_str().ok())
            .flat_map(|value| value.split(','))
            .filter_map(CompressionEncoding::from_name)
            .find(|encoding| {
                !encoding.is_identity() && encoding.is_supported() && self.contains(*encoding)
            })
    }
}

/// Encodings in an order of preference: what a client accepts, in the order
/// it was told (repeats keep their first place). Its
/// [`accept_header_value`](Self::accept_header_value) lists them in that
/// order, then `identity`, as stock tonic does, so a server answers with
/// the client's first choice it may send.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct EncodingList {
    items: [Option<CompressionEncoding>; 4],
}

impl EncodingList {
    /// The empty list.
    pub const fn empty() -> Self {
        EncodingList { items: [None; 4] }
    }

    /// Appends `encoding` unless the list holds it already.
    pub fn with(mut self, encoding: CompressionEncoding) -> Self {
        for slot in &mut self.items {
            match slot {
                Some(held) if *held == encoding => break,
                Some(_) => continue,
                None => {
                    *slot = Some(encoding);
                    break;
                }
            }
        }
        self
    }

    /// The encodings, in order.
    pub fn iter(self) -> impl Iterator<Item = CompressionEncoding> {
        self.items.into_iter().flatten()
    }

    /// Whether the list holds `encoding`.
    pub fn contains(self, encoding: CompressionEncoding) -> bool {
        self.iter().any(|held| held == encoding)
    }

    /// Whether the list is empty.
    pub fn is_empty(self) -> bool {
        self.items[0].is_none()
    }

    /// The same encodings as a set.
    pub fn to_set(self) -> EncodingSet {
        self.iter().collect()
    }

    /// The `grpc-accept-encoding` value: the compressing encodings in order,
    /// then `identity` (`zstd,gzip,identity`); `None` when the list holds no
    /// compressing encoding (then the header is not sent).
    pub fn accept_header_value(self) -> Option<HeaderValue> {
        let mut value = String::new();
        for encoding in self.iter().filter(|encoding| !encoding.is_identity()) {
            value.push_str(encoding.name());
            value.push(',');
        }
        if value.is_empty() {
            return None;
        }
        value.push_str(CompressionEncoding::Identity.name());
        HeaderValue::try_from(value).ok()
    }
}

/// `FromIterator`, `Display` (the names comma-separated, as the headers list
/// them) and `Debug` for both encoding collections.
macro_rules! encoding_collection_impls {
    ($($collection:ident: $debug:ident),*) => {$(
        impl FromIterator<CompressionEncoding> for $collection {
            fn from_iter<I: IntoIterator<Item = CompressionEncoding>>(iter: I) -> Self {
                iter.into_iter().fold($collection::empty(), $collection::with)
            }
        }

        impl fmt::Display for $collection {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                for (index, encoding) in self.iter().enumerate() {
                    if index > 0 {
                        f.write_str(",")?;
                    }
                    f.write_str(encoding.name())?;
                }
                Ok(())
            }
        }

        impl fmt::Debug for $collection {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.$debug().entries(self.iter()).finish()
            }
        }
    )*};
}

encoding_collection_impls!(EncodingList: debug_list, EncodingSet: debug_set);
