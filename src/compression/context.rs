//! Compression state for streams: a [`Compressor`] for the sending side and
//! a [`Decompressor`] for the receiving side.
//!
//! Setting a context up costs more than compressing a small message with it
//! (a libdeflate compressor is about 660 KB of tables, zstd's contexts a few
//! hundred KB), so contexts are reused from one message to the next; but
//! not one per stream, which would pin that memory on every idle stream.
//! Each message takes a context from a process-wide pool (`pool.rs`) and
//! gives it back when done, as grpc-go pools its compressors: a process
//! holds about as many contexts as it compresses messages at once, and an
//! idle stream none. A context that grew with a large message (zstd sizes
//! its tables and window to the message) or failed is dropped instead.
//!
//! gzip and zlib are compressed whole by libdeflate: the encoder has the
//! whole message, and libdeflate keeps no stream state to reset. They are
//! decompressed by zlib-rs (flate2), which measured faster than libdeflate
//! for small messages and reads a stream incrementally, so the output
//! limit is enforced as it is written. gzip is read as raw deflate between
//! a header and trailer checked here: a zlib-rs inflate state in gzip mode
//! is rebuilt on every reset, a raw one is reset in place.

// With no compressing feature enabled only `identity` is left, and the
// shared deflate/zstd helpers below go unused.
#![cfg_attr(
    not(any(feature = "gzip", feature = "deflate", feature = "zstd")),
    allow(dead_code)
)]

use bytes::{Buf, BytesMut};

#[cfg(any(feature = "gzip", feature = "deflate", feature = "zstd"))]
use super::pool::Pool;
#[cfg(feature = "zstd")]
use super::zstd_window_log_max;
use super::{Compression, CompressionEncoding, unsupported};
use crate::envelope::too_large;
use crate::status::{Code, Status};

/// Messages above this size drop their zstd context after use instead of
/// giving it back to the pool: zstd grows its tables and window buffers to
/// the largest message seen, and a reused context is worth little once the
/// message itself dominates. (libdeflate's and zlib-rs's states do not grow.)
#[cfg(feature = "zstd")]
const KEEP_CONTEXT_MAX: usize = 256 * 1024;

/// First output reservation of a decompression whose size is not declared.
const MIN_OUTPUT: usize = 256;

/// deflate cannot expand data by more than about 1032:1, so a declared
/// decompressed size above that many times the input is a lie; it is
/// believed (for an exact first allocation) only up to this ratio.
#[cfg(any(feature = "gzip", feature = "zstd"))]
const MAX_DEFLATE_RATIO: usize = 1032;

/// Compresses the messages of one stream with pooled, reused contexts.
///
/// ```
/// use bytes::BytesMut;
/// use grpc_stream_codec::compression::{Compressor, Decompressor};
/// use grpc_stream_codec::{Compression, CompressionEncoding};
///
/// let mut compressor = Compressor::new(Compression::new(CompressionEncoding::Gzip));
/// let mut decompressor = Decompressor::new(CompressionEncoding::Gzip);
/// for text in [&b"first message"[..], b"second message"] {
///     let mut wire = BytesMut::new();
///     compressor.compress(&mut &text[..], &mut wire)?;
///     let mut plain = Vec::new();
///     decompressor.decompress(&wire, &mut plain, 1024)?;
///     assert_eq!(plain, text);
/// }
/// # Ok::<(), grpc_stream_codec::Status>(())
/// ```
pub struct Compressor {
    compression: Compression,
}

/// A libdeflate compressor and the buffer a message in several chunks is
/// joined in (libdeflate compresses one contiguous buffer).
#[cfg(any(feature = "gzip", feature = "deflate"))]
struct Deflater {
    compressor: libdeflater::Compressor,
    joined: Vec<u8>,
}

/// Idle gzip/deflate compressors, by level: each holds about 660 KB at
/// levels 2-9 (libdeflate's match finder and block buffers, allocated
/// through the Rust allocator).
#[cfg(any(feature = "gzip", feature = "deflate"))]
static DEFLATERS: Pool<Deflater> = Pool::new();

/// Idle zstd compression contexts, by level.
#[cfg(feature = "zstd")]
static ZSTD_COMPRESSORS: Pool<zstd::zstd_safe::CCtx<'static>> = Pool::new();

/// The largest joined buffer a pooled [`Deflater`] keeps.
#[cfg(any(feature = "gzip", feature = "deflate"))]
const KEEP_JOINED_MAX: usize = 64 * 1024;

impl Compressor {
    /// A compressor for `compression`. It holds no context of its own: one
    /// is taken from a process-wide pool for each message and given back
    /// after it, so an idle stream pins no compression memory.
    pub fn new(compression: Compression) -> Self {
        Self { compression }
    }

    /// The encoding and level this compressor applies.
    pub fn compression(&self) -> Compression {
        self.compression
    }

    /// Compresses all of `input` (consuming it) as one complete stream of
    /// the encoding and appends it to `out`. `Identity` copies.
    pub fn compress(&mut self, input: &mut impl Buf, out: &mut BytesMut) -> Result<(), Status> {
        let start = out.len();
        let result: Result<(), String> = match self.compression.encoding {
            CompressionEncoding::Identity => {
                copy_into(input, out);
                Ok(())
            }
            #[cfg(feature = "gzip")]
            CompressionEncoding::Gzip => self.deflate(input, out, true),
            #[cfg(feature = "deflate")]
            CompressionEncoding::Deflate => self.deflate(input, out, false),
            #[cfg(feature = "zstd")]
            CompressionEncoding::Zstd => self.zstd(input, out),
            #[allow(unreachable_patterns)]
            other => return Err(unsupported(other)),
        };
        result.map_err(|error| {
            out.truncate(start);
            Status::new(
                Code::Internal,
                format!("{} compression failed: {error}", self.compression.encoding),
            )
        })
    }

    /// gzip or zlib, the whole message in one call: libdeflate keeps no
    /// stream state, so unlike zlib's `deflateReset` nothing is cleared
    /// beyond the tables the message's size needs.
    #[cfg(any(feature = "gzip", feature = "deflate"))]
    fn deflate(
        &mut self,
        input: &mut impl Buf,
        out: &mut BytesMut,
        gzip: bool,
    ) -> Result<(), String> {
        let level = self.compression.deflate_level();
        let mut lease = DEFLATERS.take(level, || {
            let level = libdeflater::CompressionLvl::new(level)
                .map_err(|_| format!("invalid deflate level {level}"))?;
            Ok::<_, String>(Deflater {
                compressor: libdeflater::Compressor::new(level),
                joined: Vec::new(),
            })
        })?;
        let Deflater { compressor, joined } = &mut *lease;
        let len = input.remaining();
        let contiguous = input.chunk().len() == len;
        if !contiguous {
            joined.clear();
            copy_into(input, joined);
        }
        let data = if contiguous {
            input.chunk()
        } else {
            &joined[..]
        };
        let room = if gzip {
            compressor.gzip_compress_bound(len)
        } else {
            compressor.zlib_compress_bound(len)
        };
        let (result, _) = with_room(out, room, |dst| {
            let result = if gzip {
                compressor.gzip_compress(data, dst)
            } else {
                compressor.zlib_compress(data, dst)
            };
            let written = *result.as_ref().unwrap_or(&0);
            (result, written)
        });
        if contiguous {
            input.advance(len);
        }
        if joined.capacity() > KEEP_JOINED_MAX {
            *joined = Vec::new();
        }
        result.map(drop).map_err(|error| error.to_string())
    }

    #[cfg(feature = "zstd")]
    fn zstd(&mut self, input: &mut impl Buf, out: &mut BytesMut) -> Result<(), String> {
        use zstd::zstd_safe::zstd_sys::ZSTD_EndDirective as EndDirective;
        use zstd::zstd_safe::{CCtx, CParameter, InBuffer, OutBuffer, ResetDirective};

        let zstd_error = |code| zstd::zstd_safe::get_error_name(code).to_string();
        let level = self.compression.zstd_level();
        let len = input.remaining();
        let mut ctx = ZSTD_COMPRESSORS.take(level, || {
            let mut ctx = CCtx::try_create().ok_or("cannot allocate a zstd context")?;
            ctx.set_parameter(CParameter::CompressionLevel(level))
                .map_err(zstd_error)?;
            // With the size in the frame header, receivers know the
            // output size and zstd picks a window no larger than it.
            ctx.set_parameter(CParameter::ContentSizeFlag(true))
                .map_err(zstd_error)?;
            Ok::<_, String>(ctx)
        })?;
        let result = (|| {
            ctx.reset(ResetDirective::SessionOnly).map_err(zstd_error)?;
            ctx.set_pledged_src_size(Some(len as u64))
                .map_err(zstd_error)?;
            loop {
                let chunk = input.chunk();
                let last = chunk.len() == input.remaining();
                let directive = if last {
                    EndDirective::ZSTD_e_end
                } else {
                    EndDirective::ZSTD_e_continue
                };
                let mut source = InBuffer::around(chunk);
                let room = zstd::zstd_safe::compress_bound(chunk.len());
                let (left, written) = with_room(out, room, |dst| {
                    let mut sink = OutBuffer::around(dst);
                    let left = ctx.compress_stream2(&mut sink, &mut source, directive);
                    (left, sink.pos())
                });
                let left = left.map_err(zstd_error)?;
                let consumed = source.pos();
                let whole = consumed == chunk.len();
                input.advance(consumed);
                if last && whole && left == 0 {
                    return Ok(());
                }
                if consumed == 0 && written == 0 {
                    return Err("zstd made no progress".to_string());
                }
            }
        })();
        // zstd sizes its tables and window to the message: a context that
        // grew with a large one, or failed mid-frame, is not kept.
        if result.is_err() || len > KEEP_CONTEXT_MAX {
            ctx.discard();
        }
        result
    }
}

/// Appends all of `input` to `out`, consuming it.
fn copy_into(input: &mut impl Buf, out: &mut impl bytes::BufMut) {
    while input.has_remaining() {
        let chunk = input.chunk();
        let taken = chunk.len();
        out.put_slice(chunk);
        input.advance(taken);
    }
}

impl std::fmt::Debug for Compressor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Compressor")
            .field("compression", &self.compression)
            .finish_non_exhaustive()
    }
}

/// The fixed 10-byte gzip member header this crate writes: deflate, no
/// flags, no modification time, unknown OS (as zlib's `gzip` mode does
/// without a header of its own).
#[cfg(all(test, feature = "gzip", feature = "deflate", feature = "zstd"))]
const GZIP_HEADER: [u8; 10] = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];

/// Appends `room` zeroed bytes to `out`, lets `write` fill a prefix of them
/// and report its length, and cuts `out` back to what was written.
fn with_room<T>(
    out: &mut BytesMut,
    room: usize,
    write: impl FnOnce(&mut [u8]) -> (T, usize),
) -> (T, usize) {
    let start = out.len();
    out.resize(start + room, 0);
    let (result, written) = write(&mut out[start..]);
    let written = written.min(room);
    out.truncate(start + written);
    (result, written)
}

/// How a decompression with bounded room ended
/// ([`Decompressor::decompress_within`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Inflated {
    /// All of the input is decompressed.
    Done,
    /// The output needs more than the room given, and the limit allows
    /// more: nothing was kept.
    NeedsRoom,
}

/// Decompresses the messages of one stream with pooled, reused contexts.
///
/// Every call is bounded as [`decompress`](super::decompress) describes: the
/// output never grows past the limit (a bomb is `resource_exhausted` before
/// it is written), corrupt or truncated input and bytes after the end of the
/// compressed data are `internal`. See [`Compressor`] for an example.
pub struct Decompressor {
    encoding: CompressionEncoding,
}

/// Idle inflate states (zlib-rs: about 40 KB of window and tables each).
#[cfg(any(feature = "gzip", feature = "deflate"))]
static INFLATERS: Pool<flate2::Decompress> = Pool::new();

/// Idle zstd decompression contexts, by the window cap set on them.
#[cfg(feature = "zstd")]
static ZSTD_DECOMPRESSORS: Pool<zstd::zstd_safe::DCtx<'static>> = Pool::new();

impl Decompressor {
    /// A decompressor for `encoding`. Like [`Compressor`] it holds no
    /// context between messages: each message takes one from a
    /// process-wide pool and gives it back.
    pub fn new(encoding: CompressionEncoding) -> Self {
        Self { encoding }
    }

    /// The encoding this decompressor reads.
    pub fn encoding(&self) -> CompressionEncoding {
        self.encoding
    }

    /// Decompresses all of `input`, one complete compressed stream, and
    /// appends the result to `out`, writing at most `limit` bytes.
    ///
    /// On error `out` is left as it was.
    pub fn decompress(
        &mut self,
        input: &[u8],
        out: &mut Vec<u8>,
        limit: usize,
    ) -> Result<(), Status> {
        match self.decompress_within(input, out, limit, limit)? {
            Inflated::Done => Ok(()),
            // With all of the limit as room, more output is too large.
            Inflated::NeedsRoom => Err(too_large(limit.saturating_add(1), limit)),
        }
    }

    /// [`decompress`](Self::decompress) with at most `room` (≤ `limit`)
    /// bytes of output allowed for now: output that would need more, while
    /// the limit allows more, stops with [`Inflated::NeedsRoom`] and `out`
    /// left as it was, so the caller can find more room (a receive budget's
    /// grant) and run again on the same input. Output past `limit` is
    /// `resource_exhausted` as in `decompress`. `out` never grows past
    /// `room` bytes of capacity beyond its length at the start.
    pub(crate) fn decompress_within(
        &mut self,
        input: &[u8],
        out: &mut Vec<u8>,
        limit: usize,
        room: usize,
    ) -> Result<Inflated, Status> {
        let start = out.len();
        let room = room.min(limit);
        let mut sink = Sink {
            out,
            start,
            limit,
            room,
        };
        let result: Result<(), Failure> = match self.encoding {
            CompressionEncoding::Identity => sink.copy(input),
            #[cfg(feature = "gzip")]
            CompressionEncoding::Gzip => self.gunzip(input, &mut sink),
            #[cfg(feature = "deflate")]
            CompressionEncoding::Deflate => {
                self.inflate(input, &mut sink, true)
                    .and_then(|rest| match rest.len() {
                        0 => Ok(()),
                        left => Err(Failure::Trailing(left)),
                    })
            }
            #[cfg(feature = "zstd")]
            CompressionEncoding::Zstd => self.unzstd(input, &mut sink),
            #[allow(unreachable_patterns)]
            other => return Err(unsupported(other)),
        };
        let written = sink.written();
        let result = match result {
            Ok(()) => return Ok(Inflated::Done),
            Err(Failure::NeedsRoom) => {
                out.truncate(start);
                return Ok(Inflated::NeedsRoom);
            }
            Err(failure) => Err(failure),
        };
        result.map_err(|failure| {
            out.truncate(start);
            match failure {
                // Report a size past the limit, not what was written.
                Failure::TooLarge | Failure::NeedsRoom => too_large(written.saturating_add(1).max(limit + 1), limit),
                Failure::Corrupt(why) => Status::new(
                    Code::Internal,
                    format!("{} decompression failed: {why}", self.encoding),
                ),
                Failure::Trailing(left) => Status::new(
                    Code::Internal,
                    format!(
                        "{} decompression failed: {left} bytes after the end of the compressed data",
                        self.encoding
                    ),
                ),
            }
        })
    }

    /// What decompressing `input` will produce, as far as the compressed
    /// data says so before it is decoded: a zstd frame's declared content
    /// size (output past it is refused as corrupt), a gzip member's ISIZE
    /// believed only up to what deflate can expand its body to (output
    /// that does not match it fails the trailer check). `None` for zlib,
    /// which declares nothing, and for frames that declare nothing.
    pub(crate) fn output_hint(&self, input: &[u8]) -> Option<usize> {
        match self.encoding {
            #[cfg(feature = "zstd")]
            CompressionEncoding::Zstd => match zstd::zstd_safe::get_frame_content_size(input) {
                Ok(Some(declared)) => Some(usize::try_from(declared).unwrap_or(usize::MAX)),
                _ => None,
            },
            #[cfg(feature = "gzip")]
            CompressionEncoding::Gzip => {
                let body = input.get(gzip_header_len(input).ok()?..)?;
                let size = body.get(body.len().checked_sub(4)?..)?;
                let declared = u32::from_le_bytes([size[0], size[1], size[2], size[3]]) as usize;
                let believable = body
                    .len()
                    .saturating_mul(MAX_DEFLATE_RATIO)
                    .saturating_add(MIN_OUTPUT);
                Some(declared.min(believable))
            }
            _ => {
                let _ = input;
                None
            }
        }
    }

    /// A gzip member (RFC 1952): header, raw deflate, CRC-32 and size.
    #[cfg(feature = "gzip")]
    fn gunzip(&mut self, input: &[u8], sink: &mut Sink<'_>) -> Result<(), Failure> {
        let body = gzip_header_len(input).map(|len| &input[len..])?;
        // ISIZE, the last four bytes, is the size modulo 2^32: a hint for
        // the first allocation, believed only as far as deflate can expand.
        if let Some(size) = body
            .get(body.len().saturating_sub(4)..)
            .filter(|s| s.len() == 4)
        {
            let declared = u32::from_le_bytes([size[0], size[1], size[2], size[3]]) as usize;
            sink.expect(declared, body.len());
        }
        let rest = self.inflate(body, sink, false)?;
        let trailer = rest
            .get(..8)
            .ok_or_else(|| Failure::corrupt("truncated gzip trailer"))?;
        let mut crc = flate2::Crc::new();
        crc.update(sink.output());
        let crc_ok = trailer[..4] == crc.sum().to_le_bytes();
        let size_ok = trailer[4..] == crc.amount().to_le_bytes();
        if !crc_ok || !size_ok {
            return Err(Failure::corrupt("gzip trailer does not match the data"));
        }
        match rest.len() - 8 {
            0 => Ok(()),
            left => Err(Failure::Trailing(left)),
        }
    }

    /// Inflates one deflate stream (zlib-wrapped or raw) from the start of
    /// `input`, returning the bytes after its end.
    #[cfg(any(feature = "gzip", feature = "deflate"))]
    fn inflate<'a>(
        &mut self,
        input: &'a [u8],
        sink: &mut Sink<'_>,
        zlib: bool,
    ) -> Result<&'a [u8], Failure> {
        use flate2::Decompress;

        let mut state = INFLATERS.take(0, || Ok::<_, Failure>(Decompress::new(zlib)))?;
        state.reset(zlib);
        let result = inflate_with(&mut state, input, sink);
        // Stopping for room is no failure: the state is reset before reuse.
        if matches!(
            result,
            Err(Failure::Corrupt(_) | Failure::TooLarge | Failure::Trailing(_))
        ) {
            // A state that failed mid-stream is not trusted again.
            state.discard();
        }
        result
    }

    /// One zstd frame, with the window capped for `limit`.
    #[cfg(feature = "zstd")]
    fn unzstd(&mut self, input: &[u8], sink: &mut Sink<'_>) -> Result<(), Failure> {
        use zstd::zstd_safe::{DCtx, DParameter, ResetDirective};

        let zstd_error = |code| Failure::Corrupt(zstd::zstd_safe::get_error_name(code).into());
        let window_log_max = zstd_window_log_max(sink.limit);
        let mut ctx = ZSTD_DECOMPRESSORS.take(window_log_max as i32, || {
            let mut ctx = DCtx::try_create()
                .ok_or_else(|| Failure::corrupt("cannot allocate a zstd context"))?;
            ctx.set_parameter(DParameter::WindowLogMax(window_log_max))
                .map_err(zstd_error)?;
            Ok::<_, Failure>(ctx)
        })?;
        let result = ctx
            .reset(ResetDirective::SessionOnly)
            .map_err(zstd_error)
            .and_then(|_| unzstd_with(&mut ctx, input, sink));
        // zstd grows its buffers to the frame: a context that did so for a
        // large message, or failed mid-frame, is not kept.
        let failed = matches!(
            result,
            Err(Failure::Corrupt(_) | Failure::TooLarge | Failure::Trailing(_))
        );
        if failed || sink.written() > KEEP_CONTEXT_MAX {
            ctx.discard();
        }
        result
    }
}

/// Decodes one zstd frame from `input` with `ctx` (freshly reset).
#[cfg(feature = "zstd")]
///
/// A frame that declares its size is judged on it, so the outcome does not
/// depend on how much zstd buffers before it notices a lie (which depends
/// on the buffers a pooled context grew for earlier messages): a declared
/// size over the limit is `TooLarge` before anything is decoded, and
/// output past a declared size within the limit is corrupt, whether or not
/// it also passed the limit.
fn unzstd_with(
    ctx: &mut zstd::zstd_safe::DCtx<'static>,
    input: &[u8],
    sink: &mut Sink<'_>,
) -> Result<(), Failure> {
    let declared = match zstd::zstd_safe::get_frame_content_size(input) {
        Ok(Some(declared)) => Some(usize::try_from(declared).unwrap_or(usize::MAX)),
        _ => None,
    };
    let Some(declared) = declared else {
        return unzstd_frame(ctx, input, sink);
    };
    if declared > sink.limit_left() {
        return Err(Failure::TooLarge);
    }
    if declared > sink.room_left() {
        return Err(Failure::NeedsRoom);
    }
    sink.expect(declared, input.len());
    match unzstd_frame(ctx, input, sink) {
        // The room holds the declared size: more is past it.
        Err(Failure::TooLarge | Failure::NeedsRoom) => Err(Failure::corrupt(
            "zstd frame holds more than its declared content size",
        )),
        result => result,
    }
}

/// Decodes one zstd frame from `input` with `ctx`, within the limit.
#[cfg(feature = "zstd")]
fn unzstd_frame(
    ctx: &mut zstd::zstd_safe::DCtx<'static>,
    input: &[u8],
    sink: &mut Sink<'_>,
) -> Result<(), Failure> {
    use zstd::zstd_safe::{InBuffer, OutBuffer};

    let zstd_error = |code| Failure::Corrupt(zstd::zstd_safe::get_error_name(code).into());
    let mut source = InBuffer::around(input);
    loop {
        let before_in = source.pos();
        let before_out = sink.out.len();
        let left = if sink.make_room() {
            let pos = sink.out.len();
            let mut dst = OutBuffer::around_pos(&mut *sink.out, pos);
            ctx.decompress_stream(&mut dst, &mut source)
        } else {
            let mut probe = [0u8; 1];
            let mut dst = OutBuffer::around(&mut probe);
            let left = ctx.decompress_stream(&mut dst, &mut source);
            if dst.pos() > 0 {
                return Err(sink.over());
            }
            left
        }
        .map_err(zstd_error)?;
        sink.check()?;
        if left == 0 {
            // The frame is decoded and flushed.
            return match input.len() - source.pos() {
                0 => Ok(()),
                rest => Err(Failure::Trailing(rest)),
            };
        }
        if source.pos() == before_in && sink.out.len() == before_out {
            return Err(Failure::corrupt("compressed data ends early"));
        }
    }
}

/// Inflates one deflate stream from the start of `input` with `state`
/// (freshly reset), returning the bytes after its end.
#[cfg(any(feature = "gzip", feature = "deflate"))]
fn inflate_with<'a>(
    state: &mut flate2::Decompress,
    mut input: &'a [u8],
    sink: &mut Sink<'_>,
) -> Result<&'a [u8], Failure> {
    use flate2::{FlushDecompress, Status as FlateStatus};

    loop {
        let before_in = state.total_in();
        let before_out = state.total_out();
        let status = if sink.make_room() {
            state.decompress_vec(input, sink.out, FlushDecompress::None)
        } else {
            // At the limit: one more byte of output is a bomb; the end
            // of the stream is fine.
            let mut probe = [0u8; 1];
            let status = state.decompress(input, &mut probe, FlushDecompress::None);
            if state.total_out() > before_out {
                return Err(sink.over());
            }
            status
        }
        .map_err(|error| Failure::Corrupt(error.to_string()))?;
        sink.check()?;
        let consumed = (state.total_in() - before_in) as usize;
        let produced = state.total_out() - before_out;
        input = &input[consumed..];
        match status {
            FlateStatus::StreamEnd => return Ok(input),
            _ if consumed == 0 && produced == 0 => {
                return Err(Failure::corrupt("compressed data ends early"));
            }
            _ => {}
        }
    }
}

impl std::fmt::Debug for Decompressor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Decompressor")
            .field("encoding", &self.encoding)
            .finish_non_exhaustive()
    }
}

enum Failure {
    TooLarge,
    /// More output than the room allowed, which is below the limit.
    NeedsRoom,
    Corrupt(String),
    Trailing(usize),
}

impl Failure {
    fn corrupt(why: &str) -> Self {
        Failure::Corrupt(why.to_string())
    }
}

/// Length of the gzip member header at the start of `input` (RFC 1952 2.3),
/// with its optional fields and, if present, its CRC-16 checked.
#[cfg(feature = "gzip")]
fn gzip_header_len(input: &[u8]) -> Result<usize, Failure> {
    const FHCRC: u8 = 0x02;
    const FEXTRA: u8 = 0x04;
    const FNAME: u8 = 0x08;
    const FCOMMENT: u8 = 0x10;
    const RESERVED: u8 = 0xe0;
    let truncated = || Failure::corrupt("truncated gzip header");
    let fixed = input.get(..10).ok_or_else(truncated)?;
    if fixed[..3] != [0x1f, 0x8b, 8] {
        return Err(Failure::corrupt("invalid gzip header"));
    }
    let flags = fixed[3];
    if flags & RESERVED != 0 {
        return Err(Failure::corrupt("reserved gzip header flags set"));
    }
    let mut len = 10;
    if flags & FEXTRA != 0 {
        let xlen = input.get(len..len + 2).ok_or_else(truncated)?;
        len += 2 + u16::from_le_bytes([xlen[0], xlen[1]]) as usize;
    }
    for flag in [FNAME, FCOMMENT] {
        if flags & flag != 0 {
            let rest = input.get(len..).ok_or_else(truncated)?;
            let end = rest.iter().position(|&b| b == 0).ok_or_else(truncated)?;
            len += end + 1;
        }
    }
    if flags & FHCRC != 0 {
        let stored = input.get(len..len + 2).ok_or_else(truncated)?;
        let mut crc = flate2::Crc::new();
        crc.update(&input[..len]);
        if stored != &(crc.sum() as u16).to_le_bytes()[..] {
            return Err(Failure::corrupt("gzip header CRC mismatch"));
        }
        len += 2;
    }
    if len > input.len() {
        return Err(truncated());
    }
    Ok(len)
}

/// The output of one decompression: `out[start..]`, at most `limit` bytes,
/// grown by doubling (or once to a believable declared size), never past
/// `room` (at most the limit).
struct Sink<'a> {
    out: &'a mut Vec<u8>,
    start: usize,
    limit: usize,
    /// The output allowed for now (≤ `limit`).
    room: usize,
}

impl Sink<'_> {
    fn written(&self) -> usize {
        self.out.len() - self.start
    }

    #[cfg(feature = "gzip")]
    fn output(&self) -> &[u8] {
        &self.out[self.start..]
    }

    fn room_left(&self) -> usize {
        self.room.saturating_sub(self.written())
    }

    #[cfg(feature = "zstd")]
    fn limit_left(&self) -> usize {
        self.limit.saturating_sub(self.written())
    }

    /// Output past the room: too large when the room is the limit, else a
    /// call for more room.
    fn over(&self) -> Failure {
        if self.room >= self.limit {
            Failure::TooLarge
        } else {
            Failure::NeedsRoom
        }
    }

    /// Reserves for a declared output size, as far as `input_len` bytes of
    /// compressed data can plausibly produce and the limit allows.
    #[cfg(any(feature = "gzip", feature = "zstd"))]
    fn expect(&mut self, declared: usize, input_len: usize) {
        let believable = input_len
            .saturating_mul(MAX_DEFLATE_RATIO)
            .saturating_add(MIN_OUTPUT);
        let want = declared.min(believable).min(self.room_left());
        if want > self.out.capacity() - self.out.len() {
            self.out.reserve_exact(want);
        }
    }

    /// Makes spare capacity for more output, within the limit; `false` when
    /// the limit is reached. A caller's vector may already have spare
    /// capacity past the limit; the decoders may write into it, and
    /// [`Sink::check`] then refuses the result.
    fn make_room(&mut self) -> bool {
        let room = self.room_left();
        if room == 0 {
            return false;
        }
        if self.out.capacity() == self.out.len() {
            // Doubling, from a small start, capped at the limit.
            let grown = self.written().max(MIN_OUTPUT).min(room);
            self.out.reserve_exact(grown);
        }
        true
    }

    fn check(&self) -> Result<(), Failure> {
        if self.written() > self.room {
            return Err(self.over());
        }
        Ok(())
    }

    fn copy(&mut self, input: &[u8]) -> Result<(), Failure> {
        if input.len() > self.room_left() {
            return Err(self.over());
        }
        self.out.extend_from_slice(input);
        Ok(())
    }
}

// The cases cover every encoding at once.
#[cfg(all(test, feature = "gzip", feature = "deflate", feature = "zstd"))]
mod tests {
    use std::io::{Read, Write};

    use super::*;
    use crate::compression::CompressionLevel;

    const COMPRESSING: [CompressionEncoding; 3] = [
        CompressionEncoding::Gzip,
        CompressionEncoding::Deflate,
        CompressionEncoding::Zstd,
    ];

    fn sample(len: usize, seed: usize) -> Vec<u8> {
        (0..len)
            .map(|i| ((i * 31 + seed) % 251 / 3) as u8)
            .collect()
    }

    fn compress_with(compressor: &mut Compressor, input: &[u8]) -> BytesMut {
        let mut out = BytesMut::new();
        compressor.compress(&mut &input[..], &mut out).unwrap();
        out
    }

    /// What an independent reader (flate2's and zstd's stream decoders)
    /// makes of a payload.
    fn reference_decode(encoding: CompressionEncoding, wire: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        match encoding {
            CompressionEncoding::Gzip => flate2::read::GzDecoder::new(wire).read_to_end(&mut out),
            CompressionEncoding::Deflate => {
                flate2::read::ZlibDecoder::new(wire).read_to_end(&mut out)
            }
            CompressionEncoding::Zstd => zstd::stream::read::Decoder::new(wire)
                .unwrap()
                .read_to_end(&mut out),
            CompressionEncoding::Identity => unreachable!(),
        }
        .unwrap();
        out
    }

    #[test]
    fn reused_contexts_round_trip_many_messages_and_stay_standard() {
        for encoding in COMPRESSING {
            let mut compressor = Compressor::new(Compression::new(encoding));
            let mut decompressor = Decompressor::new(encoding);
            for (index, len) in [0, 1, 256, 4096, 70_000, 3, 256, 100_000, 17]
                .into_iter()
                .enumerate()
            {
                let input = sample(len, index);
                let wire = compress_with(&mut compressor, &input);
                // Each message is a complete, standard stream on its own.
                assert_eq!(reference_decode(encoding, &wire), input, "{encoding} {len}");
                let mut out = vec![9];
                decompressor.decompress(&wire, &mut out, 1 << 20).unwrap();
                assert_eq!(out[0], 9, "appends");
                assert_eq!(&out[1..], &input[..], "{encoding} {len}");
            }
        }
    }

    #[test]
    fn a_multi_chunk_input_compresses_as_one_stream() {
        for encoding in COMPRESSING {
            let input = sample(50_000, 1);
            let chunks = bytes::Buf::chain(&input[..20_000], &input[20_000..]);
            let mut chained = chunks;
            let mut wire = BytesMut::new();
            Compressor::new(Compression::new(encoding))
                .compress(&mut chained, &mut wire)
                .unwrap();
            assert_eq!(reference_decode(encoding, &wire), input, "{encoding}");
        }
    }

    #[test]
    fn gzip_headers_with_optional_fields_are_read() {
        let input = sample(5000, 2);
        let mut encoder = flate2::GzBuilder::new()
            .filename("name.bin")
            .comment("a comment")
            .extra(vec![1, 2, 3, 4])
            .mtime(12345)
            .write(Vec::new(), flate2::Compression::fast());
        encoder.write_all(&input).unwrap();
        let wire = encoder.finish().unwrap();
        let mut out = Vec::new();
        Decompressor::new(CompressionEncoding::Gzip)
            .decompress(&wire, &mut out, 1 << 20)
            .unwrap();
        assert_eq!(out, input);
    }

    #[test]
    fn gzip_header_crc_is_checked() {
        // FHCRC set: the header's CRC-16 follows the fixed 10 bytes.
        let mut wire = GZIP_HEADER.to_vec();
        wire[3] = 0x02;
        let mut crc = flate2::Crc::new();
        crc.update(&wire);
        wire.extend_from_slice(&(crc.sum() as u16).to_le_bytes());
        let body = compress_with(
            &mut Compressor::new(Compression::new(CompressionEncoding::Gzip)),
            b"hello",
        );
        wire.extend_from_slice(&body[10..]);
        let mut decompressor = Decompressor::new(CompressionEncoding::Gzip);
        let mut out = Vec::new();
        decompressor.decompress(&wire, &mut out, 100).unwrap();
        assert_eq!(out, b"hello");
        wire[10] ^= 1;
        let err = decompressor
            .decompress(&wire, &mut Vec::new(), 100)
            .unwrap_err();
        assert!(err.message().contains("header CRC"), "{err}");
    }

    #[test]
    fn gzip_trailer_and_header_are_checked() {
        let mut compressor = Compressor::new(Compression::new(CompressionEncoding::Gzip));
        let good = compress_with(&mut compressor, &sample(1000, 3)).to_vec();
        let len = good.len();
        let mut decompressor = Decompressor::new(CompressionEncoding::Gzip);
        type Damage = fn(&mut Vec<u8>, usize);
        let cases: [(&str, Damage); 5] = [
            ("crc", |w, len| w[len - 8] ^= 1),
            ("size", |w, len| w[len - 1] ^= 1),
            ("trailer cut", |w, len| w.truncate(len - 3)),
            ("reserved flag", |w, _| w[3] = 0x20),
            ("magic", |w, _| w[1] = 0),
        ];
        for (name, damage) in cases {
            let mut wire = good.clone();
            damage(&mut wire, len);
            let mut out = vec![1, 2];
            let err = decompressor
                .decompress(&wire, &mut out, 1 << 20)
                .unwrap_err();
            assert_eq!(err.code(), Code::Internal, "{name}: {err}");
            assert_eq!(out, [1, 2], "{name}: output left as it was");
            // The stream's next message still decodes.
            let mut out = Vec::new();
            decompressor.decompress(&good, &mut out, 1 << 20).unwrap();
            assert_eq!(out, sample(1000, 3));
        }
    }

    #[test]
    fn truncated_trailing_and_bombs_fail_on_a_reused_context() {
        let zeros = vec![0u8; 4 << 20];
        for encoding in COMPRESSING {
            let mut compressor = Compressor::new(Compression::new(encoding));
            let mut decompressor = Decompressor::new(encoding);
            let good = compress_with(&mut compressor, &sample(3000, 4));
            let bomb = compress_with(&mut compressor, &zeros);
            let mut decode = |wire: &[u8], limit| {
                let mut out = Vec::new();
                let result = decompressor.decompress(wire, &mut out, limit);
                assert!(
                    out.capacity() <= limit,
                    "{encoding}: capacity {}",
                    out.capacity()
                );
                result.map(|()| out)
            };
            assert_eq!(decode(&good, 1 << 20).unwrap(), sample(3000, 4));
            let truncated = decode(&good[..good.len() - 1], 1 << 20).unwrap_err();
            assert_eq!(truncated.code(), Code::Internal, "{encoding}: {truncated}");
            let mut trailing = good.to_vec();
            trailing.push(0);
            let err = decode(&trailing, 1 << 20).unwrap_err();
            assert_eq!(err.code(), Code::Internal, "{encoding}: {err}");
            assert!(err.message().contains("1 bytes after the end"), "{err}");
            let err = decode(&bomb, 1 << 20).unwrap_err();
            assert_eq!(err.code(), Code::ResourceExhausted, "{encoding}: {err}");
            assert!(err.message().ends_with("exceeds limit 1048576"), "{err}");
            // Exactly at the limit is fine, one byte under is not.
            assert_eq!(decode(&good, 3000).unwrap().len(), 3000);
            assert_eq!(
                decode(&good, 2999).unwrap_err().code(),
                Code::ResourceExhausted
            );
            assert_eq!(decode(&good, 1 << 20).unwrap(), sample(3000, 4));
        }
    }

    #[test]
    fn a_callers_spare_capacity_does_not_lift_the_limit() {
        for encoding in COMPRESSING {
            let wire = compress_with(
                &mut Compressor::new(Compression::new(encoding)),
                &sample(10_000, 5),
            );
            let mut out = Vec::with_capacity(1 << 20);
            let err = Decompressor::new(encoding)
                .decompress(&wire, &mut out, 9_999)
                .unwrap_err();
            assert_eq!(err.code(), Code::ResourceExhausted, "{encoding}");
            assert!(out.is_empty());
        }
    }

    /// The pools are process-wide and tests run in parallel, so each
    /// check uses a setting (level, window cap) no other test uses.
    #[test]
    fn contexts_go_back_to_the_pool_except_after_large_messages_and_errors() {
        let zstd =
            Compression::new(CompressionEncoding::Zstd).with_level(CompressionLevel::Precise(7));
        let mut compressor = Compressor::new(zstd);
        let mut decompressor = Decompressor::new(CompressionEncoding::Zstd);
        // A 32 MiB limit caps the window at 2^25, a tag no other test uses.
        let (limit, window) = (32 << 20, 25);
        assert_eq!(zstd_window_log_max(limit), window);
        let small = compress_with(&mut compressor, &sample(100, 6));
        assert_eq!(ZSTD_COMPRESSORS.idle_with(7), 1, "given back, not held");
        decompressor
            .decompress(&small, &mut Vec::new(), limit)
            .unwrap();
        assert_eq!(ZSTD_DECOMPRESSORS.idle_with(window as i32), 1);
        // Reused: the next small message takes the same one.
        let again = compress_with(&mut compressor, &sample(100, 7));
        decompressor
            .decompress(&again, &mut Vec::new(), limit)
            .unwrap();
        assert_eq!(ZSTD_COMPRESSORS.idle_with(7), 1);
        assert_eq!(ZSTD_DECOMPRESSORS.idle_with(window as i32), 1);
        let large = compress_with(&mut compressor, &sample(KEEP_CONTEXT_MAX + 1, 6));
        assert_eq!(ZSTD_COMPRESSORS.idle_with(7), 0, "grew with the message");
        decompressor
            .decompress(&large, &mut Vec::new(), limit)
            .unwrap();
        assert_eq!(ZSTD_DECOMPRESSORS.idle_with(window as i32), 0);
        decompressor
            .decompress(&small, &mut Vec::new(), limit)
            .unwrap();
        assert_eq!(ZSTD_DECOMPRESSORS.idle_with(window as i32), 1);
        let mut corrupt = small.to_vec();
        corrupt.truncate(corrupt.len() - 2);
        decompressor
            .decompress(&corrupt, &mut Vec::new(), limit)
            .unwrap_err();
        assert_eq!(
            ZSTD_DECOMPRESSORS.idle_with(window as i32),
            0,
            "failed: dropped"
        );

        // libdeflate's compressor does not grow with the message: kept.
        let gzip =
            Compression::new(CompressionEncoding::Gzip).with_level(CompressionLevel::Precise(3));
        let mut compressor = Compressor::new(gzip);
        compress_with(&mut compressor, &sample(KEEP_CONTEXT_MAX + 1, 6));
        compress_with(&mut compressor, &sample(100, 6));
        assert_eq!(DEFLATERS.idle_with(3), 1);
    }

    /// Found by the decompress fuzz target: a zstd frame declaring 353
    /// bytes, then an RLE block of 16,460. How much zstd decoded before
    /// noticing depended on the buffers a pooled context had grown for
    /// earlier frames, so the same payload was `resource_exhausted` on one
    /// context and `internal` on another.
    #[test]
    fn a_zstd_frame_is_judged_on_its_declared_size_whatever_the_context_did_before() {
        let lying = [
            0x28, 0xb5, 0x2f, 0xfd, 0x50, 0x53, 0x61, 0x00, 0x62, 0x02, 0x02, 0x63, 0x01, 0x00,
            0x00,
        ];
        let large = compress_with(
            &mut Compressor::new(Compression::new(CompressionEncoding::Zstd)),
            &sample(200_000, 8),
        );
        for (limit, code) in [(64, Code::ResourceExhausted), (1024, Code::Internal)] {
            let mut seen = Vec::new();
            for history in [false, true] {
                let mut decompressor = Decompressor::new(CompressionEncoding::Zstd);
                if history {
                    // Grows the context's buffers (same window cap, so the
                    // same pooled context when tests do not interleave).
                    decompressor
                        .decompress(&large, &mut Vec::new(), 1 << 20)
                        .unwrap();
                }
                let err = decompressor
                    .decompress(&lying, &mut Vec::new(), limit)
                    .unwrap_err();
                seen.push(err.code());
            }
            assert_eq!(seen, [code, code], "limit {limit}");
        }
    }

    #[test]
    fn levels_map_to_libdeflate_and_every_level_round_trips() {
        let input = sample(20_000, 9);
        let mut sizes = Vec::new();
        for level in [0, 1, 6, 9] {
            for encoding in [CompressionEncoding::Gzip, CompressionEncoding::Deflate] {
                let compression =
                    Compression::new(encoding).with_level(CompressionLevel::Precise(level));
                let wire = compress_with(&mut Compressor::new(compression), &input);
                assert_eq!(
                    reference_decode(encoding, &wire),
                    input,
                    "{encoding} {level}"
                );
                if encoding == CompressionEncoding::Gzip {
                    sizes.push(wire.len());
                }
            }
        }
        // Level 0 stores, 1 and up compress.
        assert!(sizes[0] > input.len(), "{sizes:?}");
        assert!(sizes[1] < input.len() / 2, "{sizes:?}");
    }

    #[test]
    fn a_declared_size_is_believed_only_as_far_as_the_input_allows() {
        // A 40-byte gzip payload claiming 4 MiB in its trailer: the first
        // reservation follows the input, not the claim.
        let mut wire = compress_with(
            &mut Compressor::new(Compression::new(CompressionEncoding::Gzip)),
            b"tiny",
        )
        .to_vec();
        let len = wire.len();
        wire[len - 4..].copy_from_slice(&(4u32 << 20).to_le_bytes());
        let mut out = Vec::new();
        let err = Decompressor::new(CompressionEncoding::Gzip)
            .decompress(&wire, &mut out, 8 << 20)
            .unwrap_err();
        assert_eq!(err.code(), Code::Internal);
        assert!(out.capacity() <= len * MAX_DEFLATE_RATIO + MIN_OUTPUT);
    }

    #[test]
    fn bounded_room_stops_for_more_without_writing_past_it() {
        let input = sample(300_000, 3);
        let limit = 1 << 20;
        for encoding in COMPRESSING {
            let wire = compress_with(&mut Compressor::new(Compression::new(encoding)), &input);
            let mut decompressor = Decompressor::new(encoding);
            // Too little room, well within the limit: stop, keep nothing,
            // never allocate past the room.
            for room in [1, 4096, 100_000, input.len() - 1] {
                let mut out = Vec::new();
                let outcome = decompressor
                    .decompress_within(&wire, &mut out, limit, room)
                    .unwrap();
                assert_eq!(outcome, Inflated::NeedsRoom, "{encoding} room {room}");
                assert!(out.is_empty(), "{encoding} room {room}");
                assert!(
                    out.capacity() <= room,
                    "{encoding} room {room}: {}",
                    out.capacity()
                );
            }
            // Exactly enough room: done, within it.
            let mut out = Vec::new();
            let outcome = decompressor
                .decompress_within(&wire, &mut out, limit, input.len())
                .unwrap();
            assert_eq!(outcome, Inflated::Done, "{encoding}");
            assert_eq!(out, input, "{encoding}");
            assert!(out.capacity() <= input.len(), "{encoding}");
            // Room at the limit and a larger message: too large, as ever.
            let small_limit = input.len() - 1;
            let err = decompressor
                .decompress_within(&wire, &mut Vec::new(), small_limit, small_limit)
                .unwrap_err();
            assert_eq!(err.code(), Code::ResourceExhausted, "{encoding}: {err}");
            // The declared size is what a stream asks room for (zlib
            // declares none).
            let hint = decompressor.output_hint(&wire);
            match encoding {
                CompressionEncoding::Deflate => assert_eq!(hint, None),
                _ => assert_eq!(hint, Some(input.len()), "{encoding}"),
            }
        }
    }
}
