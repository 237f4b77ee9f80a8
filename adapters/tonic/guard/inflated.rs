//! The decompressed size of compressed messages, checked by a guard as their
//! bytes go by.
//!
//! tonic checks a compressed message's *wire* length against its limit and
//! only then decompresses it into a buffer bounded by the same limit. A guard
//! that looked at wire lengths alone would let a compressed message through
//! that is far over its limit once decompressed, and tonic (whose limit may be
//! higher) would accept it: the same message refused plain and accepted
//! gzip-compressed. So the guard decompresses every compressed message that
//! could be over its limit into a small scratch buffer it throws away,
//! counting, and stops the body with the same `resource_exhausted` /
//! `message size N exceeds limit M` as an oversized plain message, before the
//! message's last byte reaches tonic. For such a message N is how far
//! decompression had got when it passed the limit: a lower bound of its size.
//!
//! Decompression it cannot do (corrupt data, an encoding this build lacks)
//! ends the check for that message and leaves the error to tonic, which
//! decodes the same bytes.

use crate::compression::CompressionEncoding;
use crate::envelope::{FLAG_COMPRESSED, FLAG_TRAILERS, HEADER_LEN, too_large};
use crate::status::Status;

/// Size of the buffer decompressed output is written to and dropped from.
const SCRATCH_LEN: usize = 8 * 1024;

/// What the scratch grows to for a zstd message that fills it: zstd hands
/// out at most a block (128 KiB) per call without an extra internal copy,
/// and measured twice as fast at 1 MiB messages with this size.
#[cfg(feature = "zstd")]
const ZSTD_SCRATCH_LEN: usize = 128 * 1024;

/// The most output one input byte can give: deflate's longest match (258
/// bytes) in two one-bit codes is 1032:1.
#[cfg(any(feature = "gzip", feature = "deflate"))]
const DEFLATE_MAX_RATIO: usize = 1032;

/// The same for zstd: a 4-byte RLE block (3 bytes of block header, 1 byte of
/// content) expands to at most 128 KiB, so 32 KiB per input byte.
#[cfg(feature = "zstd")]
const ZSTD_MAX_RATIO: usize = 32 * 1024;

/// What a guard needs to check a stream's compressed messages.
#[derive(Clone, Copy, Debug)]
pub(super) struct InflatedLimit {
    encoding: CompressionEncoding,
    limit: usize,
}

impl InflatedLimit {
    /// The check for a stream whose messages are compressed with `encoding`;
    /// `None` when nothing needs checking (no encoding, `identity`, or one
    /// this build cannot decompress, which tonic refuses itself).
    pub(super) fn new(encoding: Option<CompressionEncoding>, limit: usize) -> Option<Self> {
        let encoding = encoding.filter(|e| !e.is_identity() && e.is_supported())?;
        Some(Self { encoding, limit })
    }

    /// Checks one whole envelope (header included).
    pub(super) fn check_envelope(&self, envelope: &[u8]) -> Result<(), Status> {
        let Some((&flags, rest)) = envelope.split_first() else {
            return Ok(());
        };
        let Some(payload) = rest.get(HEADER_LEN - 1..) else {
            return Ok(());
        };
        match self.start(flags, payload.len()) {
            Some(mut check) => check.feed(payload),
            None => Ok(()),
        }
    }

    /// A check for a message with these flags and this wire length, or
    /// `None` when it cannot be over the limit (or is not compressed).
    fn start(&self, flags: u8, wire_len: usize) -> Option<MessageCheck> {
        if flags & FLAG_COMPRESSED == 0 || flags & FLAG_TRAILERS != 0 {
            return None;
        }
        let max_ratio = match self.encoding {
            #[cfg(any(feature = "gzip", feature = "deflate"))]
            CompressionEncoding::Gzip | CompressionEncoding::Deflate => DEFLATE_MAX_RATIO,
            #[cfg(feature = "zstd")]
            CompressionEncoding::Zstd => ZSTD_MAX_RATIO,
            _ => return None,
        };
        // Small messages cannot expand past the limit: no context to set up.
        if wire_len.saturating_mul(max_ratio) <= self.limit {
            return None;
        }
        MessageCheck::new(self.encoding, self.limit)
    }

    /// A follower of a body's envelopes frame by frame, for the pass-through
    /// mode, which never holds a whole message.
    pub(super) fn follower(self) -> PayloadFollower {
        PayloadFollower {
            limit: self,
            state: Follow::Header {
                bytes: [0; HEADER_LEN],
                filled: 0,
            },
        }
    }
}

/// Finds the payload bytes of compressed messages in the frames of a body
/// whose headers an `EnvelopeTracker` has already validated, and feeds them
/// to a [`MessageCheck`].
pub(super) struct PayloadFollower {
    limit: InflatedLimit,
    state: Follow,
}

enum Follow {
    Header {
        bytes: [u8; HEADER_LEN],
        filled: usize,
    },
    Payload {
        remaining: usize,
        check: Option<MessageCheck>,
    },
}

impl PayloadFollower {
    /// Looks at the next frame of the body.
    pub(super) fn observe(&mut self, mut frame: &[u8]) -> Result<(), Status> {
        while !frame.is_empty() {
            match &mut self.state {
                Follow::Header { bytes, filled } => {
                    let take = (HEADER_LEN - *filled).min(frame.len());
                    bytes[*filled..*filled + take].copy_from_slice(&frame[..take]);
                    *filled += take;
                    frame = &frame[take..];
                    if *filled == HEADER_LEN {
                        let len = u32::from_be_bytes([bytes[1], bytes[2], bytes[3], bytes[4]]);
                        let remaining = len as usize;
                        let check = self.limit.start(bytes[0], remaining);
                        self.state = Follow::Payload { remaining, check };
                    }
                }
                Follow::Payload { remaining, check } => {
                    let take = (*remaining).min(frame.len());
                    if let Some(check) = check {
                        check.feed(&frame[..take])?;
                    }
                    *remaining -= take;
                    frame = &frame[take..];
                }
            }
            if let Follow::Payload { remaining: 0, .. } = self.state {
                // Dropping the check frees its context: an idle stream keeps none.
                self.state = Follow::Header {
                    bytes: [0; HEADER_LEN],
                    filled: 0,
                };
            }
        }
        Ok(())
    }
}

/// Decompresses one message into a scratch buffer, counting the output.
struct MessageCheck {
    inflater: Inflater,
    scratch: Box<[u8]>,
    produced: usize,
    limit: usize,
}

enum Inflater {
    #[cfg(any(feature = "gzip", feature = "deflate"))]
    Deflate(Box<flate2::Decompress>),
    #[cfg(feature = "zstd")]
    Zstd(zstd::zstd_safe::DCtx<'static>),
    /// The data could not be decompressed (or the frame ended): tonic will
    /// see the same bytes and report on them.
    Done,
}

impl MessageCheck {
    fn new(encoding: CompressionEncoding, limit: usize) -> Option<Self> {
        let inflater = match encoding {
            #[cfg(feature = "gzip")]
            CompressionEncoding::Gzip => {
                Inflater::Deflate(Box::new(flate2::Decompress::new_gzip(15)))
            }
            #[cfg(feature = "deflate")]
            CompressionEncoding::Deflate => {
                Inflater::Deflate(Box::new(flate2::Decompress::new(true)))
            }
            #[cfg(feature = "zstd")]
            CompressionEncoding::Zstd => Inflater::Zstd(zstd_pool::take(limit)?),
            _ => return None,
        };
        Some(Self {
            inflater,
            scratch: vec![0; SCRATCH_LEN].into_boxed_slice(),
            produced: 0,
            limit,
        })
    }

    /// Decompresses the next piece of the payload; fails once the output
    /// passes the limit.
    fn feed(&mut self, input: &[u8]) -> Result<(), Status> {
        #[cfg(feature = "zstd")]
        if matches!(self.inflater, Inflater::Zstd(_))
            && self.produced >= SCRATCH_LEN
            && self.scratch.len() < ZSTD_SCRATCH_LEN
        {
            self.scratch = vec![0; ZSTD_SCRATCH_LEN].into_boxed_slice();
        }
        let produced = match &mut self.inflater {
            #[cfg(any(feature = "gzip", feature = "deflate"))]
            Inflater::Deflate(state) => {
                inflate(state, input, &mut self.scratch, self.limit, self.produced)
            }
            #[cfg(feature = "zstd")]
            Inflater::Zstd(ctx) => unzstd(ctx, input, &mut self.scratch, self.limit, self.produced),
            Inflater::Done => return Ok(()),
        };
        match produced {
            Step::More(total) => {
                self.produced = total;
                Ok(())
            }
            Step::Over(total) => {
                self.inflater = Inflater::Done;
                Err(too_large(total, self.limit))
            }
            Step::Stop => {
                self.finish();
                Ok(())
            }
        }
    }

    /// The frame ended or failed: nothing more to check, and a zstd
    /// context goes back to the pool if it stayed small.
    fn finish(&mut self) {
        match std::mem::replace(&mut self.inflater, Inflater::Done) {
            #[cfg(feature = "zstd")]
            Inflater::Zstd(ctx) => zstd_pool::give(ctx),
            _ => {}
        }
    }
}

impl Drop for MessageCheck {
    fn drop(&mut self) {
        self.finish();
    }
}

/// How a piece of input went.
enum Step {
    /// All consumed; this much output so far, within the limit.
    More(usize),
    /// The output passed the limit at this many bytes.
    Over(usize),
    /// The stream ended or is corrupt: nothing more to check.
    Stop,
}

#[cfg(any(feature = "gzip", feature = "deflate"))]
fn inflate(
    state: &mut flate2::Decompress,
    mut input: &[u8],
    scratch: &mut [u8],
    limit: usize,
    mut total: usize,
) -> Step {
    use flate2::{FlushDecompress, Status as FlateStatus};
    loop {
        let (in_before, out_before) = (state.total_in(), state.total_out());
        let status = state.decompress(input, scratch, FlushDecompress::None);
        let consumed = (state.total_in() - in_before) as usize;
        let out = (state.total_out() - out_before) as usize;
        input = &input[consumed..];
        total = total.saturating_add(out);
        if total > limit {
            return Step::Over(total);
        }
        match status {
            Ok(FlateStatus::StreamEnd) | Err(_) => return Step::Stop,
            Ok(_) if out == scratch.len() => continue,
            Ok(_) if input.is_empty() || consumed == 0 => return Step::More(total),
            Ok(_) => continue,
        }
    }
}

#[cfg(feature = "zstd")]
fn unzstd(
    ctx: &mut zstd::zstd_safe::DCtx<'static>,
    input: &[u8],
    scratch: &mut [u8],
    limit: usize,
    mut total: usize,
) -> Step {
    use zstd::zstd_safe::{InBuffer, OutBuffer};
    let mut source = InBuffer::around(input);
    loop {
        let mut sink = OutBuffer::around(&mut *scratch);
        let before = source.pos();
        if ctx.decompress_stream(&mut sink, &mut source).is_err() {
            return Step::Stop;
        }
        let out = sink.pos();
        total = total.saturating_add(out);
        if total > limit {
            return Step::Over(total);
        }
        let full = out == scratch.len();
        if !full && (source.pos() == input.len() || source.pos() == before) {
            return Step::More(total);
        }
    }
}

/// Idle zstd contexts, shared by every guarded stream: setting one up costs
/// about as much as decompressing a small message (the 1 KiB rows of
/// `benches/tonic_guard.rs` doubled without reuse), and one kept per stream
/// would pin its memory on idle streams.
#[cfg(feature = "zstd")]
mod zstd_pool {
    use std::sync::Mutex;

    use zstd::zstd_safe::{DCtx, DParameter, ResetDirective};

    /// Idle contexts kept; more given back at once are dropped.
    const MAX_IDLE: usize = 16;

    /// A context above this size has grown: zstd keeps the window buffer of
    /// the largest frame it decoded (the message's size for a frame that
    /// declares it, else the frame's window: 2 MiB at zstd's default level;
    /// never above the window cap).
    const GROWN_ABOVE: usize = 512 * 1024;

    /// Most bytes of grown contexts kept idle, for the whole process.
    ///
    /// Dropping a grown context after every large message made the check
    /// cost twice what decompressing costs: glibc returned the freed window
    /// buffer to the system, and the next large message, the guard's and
    /// tonic's buffers alike, faulted the pages in again (2 x 1 MiB zstd
    /// behind a checking guard: 8.0 ms dropped, 5.0 ms kept, tonic alone
    /// 2.1 ms). Kept under this cap, a steady stream of large messages
    /// reuses a few windows, while what idle streams can hold stays a
    /// fixed amount however many there are.
    const MAX_GROWN_IDLE_BYTES: usize = 8 * 1024 * 1024;

    static IDLE: Mutex<Idle<DCtx<'static>>> = Mutex::new(Idle::new());

    /// Idle contexts with their sizes, newest last.
    pub(super) struct Idle<T> {
        contexts: Vec<(T, usize)>,
    }

    impl<T> Idle<T> {
        pub(super) const fn new() -> Self {
            Self {
                contexts: Vec::new(),
            }
        }

        /// The newest idle context.
        pub(super) fn pop(&mut self) -> Option<T> {
            self.contexts.pop().map(|(context, _)| context)
        }

        /// Keeps `context` of `size` bytes if the caps allow; hands it back
        /// otherwise, for the caller to drop.
        pub(super) fn push(&mut self, context: T, size: usize) -> Result<(), T> {
            if self.contexts.len() >= MAX_IDLE
                || (size > GROWN_ABOVE
                    && self.grown_bytes().saturating_add(size) > MAX_GROWN_IDLE_BYTES)
            {
                return Err(context);
            }
            self.contexts.push((context, size));
            Ok(())
        }

        /// Bytes of grown contexts held (at most 16 entries to add up).
        fn grown_bytes(&self) -> usize {
            let sizes = self.contexts.iter().map(|(_, size)| *size);
            sizes.filter(|size| *size > GROWN_ABOVE).sum()
        }

        #[cfg(test)]
        pub(super) fn len(&self) -> usize {
            self.contexts.len()
        }
    }

    /// An idle context or a new one, ready for a frame whose output may be
    /// at most `limit` bytes.
    pub(super) fn take(limit: usize) -> Option<DCtx<'static>> {
        let idle = IDLE.lock().ok().and_then(|mut idle| idle.pop());
        let mut ctx = match idle {
            Some(mut ctx) => {
                ctx.reset(ResetDirective::SessionOnly).ok()?;
                ctx
            }
            None => DCtx::try_create()?,
        };
        // zstd allocates the window a frame declares; a window larger than
        // the permitted output buys the sender nothing.
        ctx.set_parameter(DParameter::WindowLogMax(super::zstd_window_log_max(limit)))
            .ok()?;
        Some(ctx)
    }

    /// Gives `ctx` back for the next message, within the pool's caps.
    pub(super) fn give(ctx: DCtx<'static>) {
        let size = ctx.sizeof();
        // The guard is released at the end of the closure, so a refused
        // context's window is freed outside the lock.
        let refused = IDLE.lock().ok().map(|mut idle| idle.push(ctx, size));
        drop(refused);
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        const MIB: usize = 1024 * 1024;

        #[test]
        fn small_contexts_are_kept_up_to_the_count_cap() {
            let mut idle = Idle::new();
            for n in 0..MAX_IDLE {
                assert!(idle.push(n, 100 * 1024).is_ok());
            }
            assert_eq!(idle.push(99, 1024), Err(99));
            assert_eq!(idle.len(), MAX_IDLE);
            assert_eq!(idle.grown_bytes(), 0);
            assert_eq!(idle.pop(), Some(MAX_IDLE - 1));
        }

        #[test]
        fn grown_contexts_are_kept_up_to_the_byte_cap() {
            let mut idle = Idle::new();
            // Contexts of about 1.2 MiB: six fit.
            let size = 1_250_000;
            let kept = (0..10).filter(|n| idle.push(*n, size).is_ok()).count();
            assert_eq!(kept, MAX_GROWN_IDLE_BYTES / size);
            assert!(idle.grown_bytes() <= MAX_GROWN_IDLE_BYTES);
            // Small ones still fit beside them.
            assert!(idle.push(100, 64 * 1024).is_ok());
            // A context bigger than the whole cap is never kept.
            let mut empty = Idle::new();
            assert_eq!(empty.push(7, MAX_GROWN_IDLE_BYTES + 1), Err(7));
            // Taking one gives its bytes back to the cap.
            assert_eq!(idle.pop(), Some(100));
            assert_eq!(idle.pop(), Some(kept - 1));
            assert_eq!(idle.grown_bytes(), (kept - 1) * size);
            assert!(idle.push(42, 8 * MIB - (kept - 1) * size).is_ok());
            assert_eq!(idle.grown_bytes(), MAX_GROWN_IDLE_BYTES);
        }
    }
}

/// The largest zstd window log accepted when at most `limit` bytes may come
/// out: the core decoder's rule (never below 2^23, the window common encoders
/// use at their default levels, never above zstd's default cap 2^27), so the
/// guard and the decoder it stands in front of accept the same frames.
#[cfg(feature = "zstd")]
fn zstd_window_log_max(limit: usize) -> u32 {
    let needed = usize::BITS - limit.saturating_sub(1).leading_zeros();
    needed.clamp(23, 27)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compression::Compression;
    use crate::status::Code;

    fn compressed(encoding: CompressionEncoding, plain: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        Compression::new(encoding)
            .compress(&mut &plain[..], &mut out)
            .unwrap();
        out
    }

    fn envelope(flags: u8, payload: &[u8]) -> Vec<u8> {
        let mut out = vec![flags];
        out.extend_from_slice(&(payload.len() as u32).to_be_bytes());
        out.extend_from_slice(payload);
        out
    }

    fn encodings() -> Vec<CompressionEncoding> {
        [
            CompressionEncoding::Gzip,
            CompressionEncoding::Deflate,
            CompressionEncoding::Zstd,
        ]
        .into_iter()
        .filter(|e| e.is_supported())
        .collect()
    }

    #[test]
    fn over_the_limit_once_decompressed_fails_in_any_split() {
        let limit = 64 * 1024;
        for encoding in encodings() {
            let wire = envelope(1, &compressed(encoding, &vec![7; limit + 1]));
            let whole = InflatedLimit::new(Some(encoding), limit).unwrap();
            let err = whole.check_envelope(&wire).unwrap_err();
            assert_eq!(err.code(), Code::ResourceExhausted, "{encoding}");
            assert!(
                err.message().starts_with("message size ")
                    && err.message().ends_with(&format!(" exceeds limit {limit}")),
                "{encoding}: {err}"
            );
            for chunk in [1, 7, 100, wire.len()] {
                let mut follower = whole.follower();
                let failed = wire
                    .chunks(chunk)
                    .map(|c| follower.observe(c))
                    .find_map(Result::err);
                let err = failed.unwrap_or_else(|| panic!("{encoding} chunk {chunk}: accepted"));
                assert_eq!(
                    err.code(),
                    Code::ResourceExhausted,
                    "{encoding} chunk {chunk}"
                );
            }
        }
    }

    #[test]
    fn exactly_at_the_limit_and_plain_messages_pass() {
        let limit = 64 * 1024;
        for encoding in encodings() {
            let mut wire = envelope(1, &compressed(encoding, &vec![7; limit]));
            // A plain message and a second compressed one after it.
            wire.extend(envelope(0, &[1; 300]));
            wire.extend(envelope(1, &compressed(encoding, &vec![3; limit])));
            let check = InflatedLimit::new(Some(encoding), limit).unwrap();
            for chunk in [1, 5, 333, wire.len()] {
                let mut follower = check.follower();
                for piece in wire.chunks(chunk) {
                    follower.observe(piece).unwrap();
                }
            }
        }
    }

    #[test]
    fn corrupt_data_is_left_to_tonic() {
        for encoding in encodings() {
            let check = InflatedLimit::new(Some(encoding), 1024).unwrap();
            check.check_envelope(&envelope(1, &[0xAB; 5000])).unwrap();
        }
    }

    #[test]
    fn identity_and_no_encoding_check_nothing() {
        assert!(InflatedLimit::new(None, 1).is_none());
        assert!(InflatedLimit::new(Some(CompressionEncoding::Identity), 1).is_none());
    }
}
