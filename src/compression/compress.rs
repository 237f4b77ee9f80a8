//! [`Compressor`]: the sending side's compression, with contexts reused
//! from a process-wide pool (`pool.rs`) rather than one pinned per stream.
//!
//! Setting a context up costs more than compressing a small message with it
//! (a libdeflate compressor is about 660 KB of tables, zstd's contexts a few
//! hundred KB), so each message takes a context from the pool and gives it
//! back when done, as grpc-go pools its compressors: a process holds about
//! as many contexts as it compresses messages at once, and an idle stream
//! none. gzip and zlib are compressed whole by libdeflate: the encoder has
//! the whole message, and libdeflate keeps no stream state to reset. A
//! stream whose last message compressed past [`LONG_MATCH_RATIO`] (long
//! repeats) sends the next one through a pooled zlib-rs state instead:
//! libdeflate hashes every byte of a match into its chains, zlib-rs's levels
//! 1-6 skip the bytes of maximal matches, so on such data zlib-rs is faster,
//! and a reset state is never slower than the fresh one stock tonic and
//! volo-grpc make per message. A stream's first message goes the way the
//! process's last one went.

#[cfg(any(feature = "gzip", feature = "deflate"))]
use std::sync::atomic::Ordering;

use bytes::{Buf, BytesMut};

use super::error::CodecError;
#[cfg(any(feature = "gzip", feature = "deflate", feature = "zstd"))]
use super::pool;
#[cfg(any(feature = "gzip", feature = "deflate"))]
use super::pool::Deflater;
#[cfg(feature = "zstd")]
use super::pool::{KEEP_CONTEXT_MAX, ZSTD_COMPRESSORS};
use super::{Compression, CompressionEncoding, unsupported};
use crate::status::Status;

/// Compresses the messages of one stream with pooled, reused contexts.
///
/// ```
/// use bytes::BytesMut;
/// use grpc_stream_codec::compression::{Compressor, Decompressor};
/// use grpc_stream_codec::compression::{Compression, CompressionEncoding};
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
/// # Ok::<(), grpc_stream_codec::status::Status>(())
/// ```
pub struct Compressor {
    compression: Compression,
    /// The last gzip/zlib message of the stream compressed past
    /// [`LONG_MATCH_RATIO`]: the next goes through zlib-rs. `None` before
    /// the stream's first, which follows the process's last message
    /// ([`LONG_MATCHES_SEEN`]).
    #[cfg(any(feature = "gzip", feature = "deflate"))]
    long_matches: Option<bool>,
}

/// The last gzip/zlib message the process compressed was long matches: a
/// new stream's first message goes the way it went.
#[cfg(any(feature = "gzip", feature = "deflate"))]
static LONG_MATCHES_SEEN: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// A gzip/zlib message compressed to under 1/32 of its size is mostly long
/// matches, where zlib-rs outruns libdeflate (see the module docs); below
/// it libdeflate is the faster one.
#[cfg(any(feature = "gzip", feature = "deflate"))]
const LONG_MATCH_RATIO: usize = 32;

/// The largest joined buffer a pooled [`Deflater`] keeps.
#[cfg(any(feature = "gzip", feature = "deflate"))]
const KEEP_JOINED_MAX: usize = 64 * 1024;

impl Compressor {
    /// A compressor for `compression`. It holds no context of its own: one
    /// is taken from a process-wide pool for each message and given back
    /// after it, so an idle stream pins no compression memory.
    pub fn new(compression: Compression) -> Self {
        Self {
            compression,
            #[cfg(any(feature = "gzip", feature = "deflate"))]
            long_matches: None,
        }
    }

    /// The encoding and level this compressor applies.
    pub fn compression(&self) -> Compression {
        self.compression
    }

    /// Compresses all of `input` (consuming it) as one complete stream of
    /// the encoding and appends it to `out`. `Identity` copies.
    pub fn compress(&mut self, input: &mut impl Buf, out: &mut BytesMut) -> Result<(), Status> {
        let start = out.len();
        let result: Result<(), CodecError> = match self.compression.encoding {
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
            error.into_status(self.compression.encoding, "compression")
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
    ) -> Result<(), CodecError> {
        let level = self.compression.deflate_level();
        let len = input.remaining();
        let long_matches = self
            .long_matches
            .unwrap_or_else(|| LONG_MATCHES_SEEN.load(Ordering::Relaxed));
        if long_matches {
            let start = out.len();
            let result = zlib_rs(level, input, out, gzip);
            self.saw_long_matches((out.len() - start).saturating_mul(LONG_MATCH_RATIO) <= len);
            return result;
        }
        let mut lease = pool::deflater(level)?;
        let Deflater { compressor, joined } = &mut *lease;
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
        let (result, written) = with_room(out, room, |dst| {
            let result = if gzip {
                compressor.gzip_compress(data, dst)
            } else {
                compressor.zlib_compress(data, dst)
            };
            let written = *result.as_ref().unwrap_or(&0);
            (result, written)
        });
        self.saw_long_matches(written.saturating_mul(LONG_MATCH_RATIO) <= len);
        if contiguous {
            input.advance(len);
        }
        if joined.capacity() > KEEP_JOINED_MAX {
            *joined = Vec::new();
        }
        result.map(drop).map_err(CodecError::from_library)
    }

    /// Records how the message just compressed went, for the stream's next
    /// and for new streams.
    #[cfg(any(feature = "gzip", feature = "deflate"))]
    fn saw_long_matches(&mut self, long_matches: bool) {
        self.long_matches = Some(long_matches);
        if LONG_MATCHES_SEEN.load(Ordering::Relaxed) != long_matches {
            LONG_MATCHES_SEEN.store(long_matches, Ordering::Relaxed);
        }
    }

    #[cfg(feature = "zstd")]
    fn zstd(&mut self, input: &mut impl Buf, out: &mut BytesMut) -> Result<(), CodecError> {
        use zstd::zstd_safe::zstd_sys::ZSTD_EndDirective as EndDirective;
        use zstd::zstd_safe::{CCtx, CParameter, InBuffer, OutBuffer, ResetDirective};

        let zstd_error = CodecError::zstd;
        let level = self.compression.zstd_level();
        let len = input.remaining();
        // With the size in each frame's header, receivers know the output
        // size, and zstd picks a window no larger than the message.
        let parameters = [
            CParameter::CompressionLevel(level),
            CParameter::ContentSizeFlag(true),
        ];
        let (create, set) = (CCtx::try_create, CCtx::set_parameter);
        let mut ctx = pool::zstd_context(&ZSTD_COMPRESSORS, level, create, set, parameters)?;
        let result = ctx
            .reset(ResetDirective::SessionOnly)
            .and_then(|_| ctx.set_pledged_src_size(Some(len as u64)))
            .map_err(zstd_error)
            .and_then(|_| {
                let room = zstd::zstd_safe::compress_bound;
                feed_chunks(input, out, "zstd", room, |chunk, last, dst| {
                    let directive = if last {
                        EndDirective::ZSTD_e_end
                    } else {
                        EndDirective::ZSTD_e_continue
                    };
                    let mut source = InBuffer::around(chunk);
                    let mut sink = OutBuffer::around(dst);
                    let left = ctx
                        .compress_stream2(&mut sink, &mut source, directive)
                        .map_err(zstd_error)?;
                    let consumed = source.pos();
                    Ok(Step {
                        consumed,
                        written: sink.pos(),
                        finished: last && consumed == chunk.len() && left == 0,
                    })
                })
            });
        // zstd sizes its tables and window to the message: a context that
        // failed mid-frame is not kept, one that grew with a large message
        // is kept within the pool's cap.
        if result.is_err() {
            ctx.discard();
        } else if len > KEEP_CONTEXT_MAX {
            let size = ctx.sizeof();
            ctx.keep_grown(size);
        }
        result
    }
}

/// gzip or zlib through a pooled zlib-rs state, reset for the message and
/// fed `input` chunk by chunk (no joining).
#[cfg(any(feature = "gzip", feature = "deflate"))]
fn zlib_rs(
    level: i32,
    input: &mut impl Buf,
    out: &mut BytesMut,
    gzip: bool,
) -> Result<(), CodecError> {
    use flate2::{FlushCompress, Status};

    let mut lease = pool::zlib_compressor(level, gzip);
    let state = &mut *lease;
    state.reset();
    // Long-match messages compress far below 1/16; more room is asked for
    // in turn if not.
    let room = |len: usize| len / 16 + 64;
    let result = feed_chunks(input, out, "zlib-rs", room, |chunk, last, dst| {
        let flush = if last {
            FlushCompress::Finish
        } else {
            FlushCompress::None
        };
        let (before_in, before_out) = (state.total_in(), state.total_out());
        let status = state
            .compress(chunk, dst, flush)
            .map_err(CodecError::from_library)?;
        Ok(Step {
            consumed: (state.total_in() - before_in) as usize,
            written: (state.total_out() - before_out) as usize,
            finished: status == Status::StreamEnd,
        })
    });
    if result.is_err() {
        lease.discard();
    }
    result
}

/// What one call of a streaming compressor did with one chunk.
#[cfg(any(feature = "gzip", feature = "deflate", feature = "zstd"))]
struct Step {
    consumed: usize,
    written: usize,
    /// The frame is complete: all input taken and all output flushed.
    finished: bool,
}

/// Feeds `input` to a streaming compressor chunk by chunk (no joining),
/// each call writing into `room(chunk length)` bytes at the end of `out`
/// and told whether its chunk is the message's last, until the compressor
/// says the frame is finished.
#[cfg(any(feature = "gzip", feature = "deflate", feature = "zstd"))]
fn feed_chunks(
    input: &mut impl Buf,
    out: &mut BytesMut,
    name: &str,
    room: impl Fn(usize) -> usize,
    mut compress: impl FnMut(&[u8], bool, &mut [u8]) -> Result<Step, CodecError>,
) -> Result<(), CodecError> {
    loop {
        let chunk = input.chunk();
        let last = chunk.len() == input.remaining();
        let (step, _) = with_room(out, room(chunk.len()), |dst| {
            match compress(chunk, last, dst) {
                Ok(step) => {
                    let written = step.written;
                    (Ok(step), written)
                }
                Err(error) => (Err(error), 0),
            }
        });
        let step = step?;
        input.advance(step.consumed);
        if step.finished {
            return Ok(());
        }
        if step.consumed == 0 && step.written == 0 {
            return Err(CodecError::new(format!("{name} made no progress")));
        }
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

#[cfg(any(feature = "gzip", feature = "deflate", feature = "zstd"))]
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
