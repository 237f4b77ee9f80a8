//! [`Decompressor`]: the receiving side's compression, bounded by the
//! receive limit, with contexts reused from the process-wide pool.
//!
//! gzip and zlib are decompressed by zlib-rs (flate2), which measured faster
//! than libdeflate for small messages and reads a stream incrementally, so
//! the output limit is enforced as it is written. gzip is read as raw
//! deflate between a header ([`gzip`](super::gzip)) and trailer checked
//! here: a zlib-rs inflate state in gzip mode is rebuilt on every reset, a
//! raw one is reset in place. A zstd context that grew with a large message
//! or failed is dropped instead of pooled.

#[cfg(any(feature = "gzip", feature = "deflate", feature = "zstd"))]
use super::error::CodecError;
use super::error::Failure;
#[cfg(feature = "gzip")]
use super::gzip::gzip_header_len;
#[cfg(any(feature = "gzip", feature = "deflate", feature = "zstd"))]
use super::pool;
#[cfg(feature = "zstd")]
use super::pool::{KEEP_CONTEXT_MAX, ZSTD_DECOMPRESSORS};
#[cfg(feature = "zstd")]
use super::zstd_window_log_max;
use super::{CompressionEncoding, unsupported};
use crate::envelope::too_large;
use crate::status::Status;

#[cfg(any(feature = "gzip", feature = "deflate", feature = "zstd"))]
/// First output reservation of a decompression whose size is not declared.
pub(super) const MIN_OUTPUT: usize = 256;

/// deflate cannot expand data by more than about 1032:1, so a declared
/// decompressed size above that many times the input is a lie; it is
/// believed (for an exact first allocation) only up to this ratio.
#[cfg(feature = "gzip")]
pub(super) const MAX_DEFLATE_RATIO: usize = 1032;

/// zstd's largest expansion: a 3-byte block header and one byte of an RLE
/// block make 128 KiB. A declared size is believed up to this ratio, so a
/// highly compressible message gets its exact allocation at once instead of
/// growing by doubling, whose copies and page faults dominate large
/// messages.
#[cfg(feature = "zstd")]
pub(super) const MAX_ZSTD_RATIO: usize = 32 * 1024;

/// How a decompression with bounded room ended
/// ([`Decompressor::decompress_within`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Bounded {
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
/// compressed data are `internal`. See [`Compressor`](super::Compressor) for an example.
pub struct Decompressor {
    encoding: CompressionEncoding,
}

impl Decompressor {
    /// A decompressor for `encoding`. Like [`Compressor`](super::Compressor) it holds no
    /// context between messages: each message takes one from a
    /// process-wide pool and gives it back.
    pub fn new(encoding: CompressionEncoding) -> Self {
        Self { encoding }
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
            Bounded::Done => Ok(()),
            // With all of the limit as room, more output is too large.
            Bounded::NeedsRoom => Err(too_large(limit.saturating_add(1), limit)),
        }
    }

    /// [`decompress`](Self::decompress) with at most `room` (≤ `limit`)
    /// bytes of output allowed for now: output that would need more, while
    /// the limit allows more, stops with [`Bounded::NeedsRoom`] and `out`
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
    ) -> Result<Bounded, Status> {
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
        let Err(failure) = result else {
            return Ok(Bounded::Done);
        };
        out.truncate(start);
        Err(match failure {
            Failure::OutOfRoom => return Ok(Bounded::NeedsRoom),
            // Report a size past the limit, not what was written.
            Failure::TooLarge => too_large(written.saturating_add(1).max(limit + 1), limit),
            #[cfg(any(feature = "gzip", feature = "deflate", feature = "zstd"))]
            Failure::Corrupt(error) => error.into_status(self.encoding, "decompression"),
            #[cfg(any(feature = "gzip", feature = "deflate", feature = "zstd"))]
            Failure::Trailing(left) => {
                CodecError::new(format!("{left} bytes after the end of the compressed data"))
                    .into_status(self.encoding, "decompression")
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
            sink.reserve_declared(declared, body.len(), MAX_DEFLATE_RATIO);
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
        let mut state = pool::inflater(zlib);
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

        let zstd_error = |code| Failure::Corrupt(CodecError::zstd(code));
        let window_log_max = zstd_window_log_max(sink.limit);
        let window = [DParameter::WindowLogMax(window_log_max)];
        let (create, set) = (DCtx::try_create, DCtx::set_parameter);
        let setting = i32::try_from(window_log_max).unwrap_or(i32::MAX);
        let mut ctx = pool::zstd_context(&ZSTD_DECOMPRESSORS, setting, create, set, window)
            .map_err(Failure::Corrupt)?;
        let result = ctx
            .reset(ResetDirective::SessionOnly)
            .map_err(zstd_error)
            .and_then(|_| judge_declared_size(input, sink))
            .and_then(|declared| {
                let decoded = unzstd_frame(&mut ctx, input, sink);
                if declared {
                    decoded.map_err(past_declared_size)
                } else {
                    decoded
                }
            });
        // A context that failed mid-frame is not kept; one that grew its
        // buffers to a large frame is kept within the pool's cap.
        let failed = matches!(
            result,
            Err(Failure::Corrupt(_) | Failure::TooLarge | Failure::Trailing(_))
        );
        if failed {
            ctx.discard();
        } else if sink.written() > KEEP_CONTEXT_MAX {
            let size = ctx.sizeof();
            ctx.keep_grown(size);
        }
        result
    }
}

/// Judges a zstd frame on the content size it declares, before anything is
/// decoded, and reserves room for it; `Ok(true)` when it declares one.
///
/// A declared size is what the frame is judged on, so the outcome does not
/// depend on how much zstd buffers before it notices a lie (which depends
/// on the buffers a pooled context grew for earlier messages): a declared
/// size over the limit is `TooLarge` before anything is decoded, and
/// output past a declared size within the limit is corrupt
/// ([`past_declared_size`]), whether or not it also passed the limit.
#[cfg(feature = "zstd")]
fn judge_declared_size(input: &[u8], sink: &mut Sink<'_>) -> Result<bool, Failure> {
    let Ok(Some(declared)) = zstd::zstd_safe::get_frame_content_size(input) else {
        return Ok(false);
    };
    let declared = usize::try_from(declared).unwrap_or(usize::MAX);
    if declared > sink.limit_left() {
        return Err(Failure::TooLarge);
    }
    if declared > sink.room_left() {
        return Err(Failure::OutOfRoom);
    }
    sink.reserve_declared(declared, input.len(), MAX_ZSTD_RATIO);
    Ok(true)
}

/// What decoding a frame that declared its size within the room ended in:
/// output that needs more room than the declared size is past it.
#[cfg(feature = "zstd")]
fn past_declared_size(failure: Failure) -> Failure {
    match failure {
        Failure::TooLarge | Failure::OutOfRoom => {
            Failure::corrupt("zstd frame holds more than its declared content size")
        }
        other => other,
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

    let zstd_error = |code| Failure::Corrupt(CodecError::zstd(code));
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
        .map_err(|error| Failure::Corrupt(CodecError::from_library(error)))?;
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
            Failure::OutOfRoom
        }
    }

    /// Reserves for a declared output size, as far as `input_len` bytes of
    /// compressed data can expand to (`max_ratio`) and the limit allows.
    #[cfg(any(feature = "gzip", feature = "zstd"))]
    fn reserve_declared(&mut self, declared: usize, input_len: usize, max_ratio: usize) {
        let believable = input_len
            .saturating_mul(max_ratio)
            .saturating_add(MIN_OUTPUT);
        let want = declared.min(believable).min(self.room_left());
        if want > self.out.capacity() - self.out.len() {
            self.out.reserve_exact(want);
        }
    }

    #[cfg(any(feature = "gzip", feature = "deflate", feature = "zstd"))]
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

    #[cfg(any(feature = "gzip", feature = "deflate", feature = "zstd"))]
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
