//! Decompressing what a stream receives: the buffers a stream reuses across
//! its compressed messages, and the budget-gated attempts of a stream with
//! a receive budget.

use crate::budget::StreamBudget;
use crate::compression::{Bounded, CompressionEncoding, Decompressor};
use crate::status::{Code, Status};

use bytes::Bytes;

use super::buffers::{MessageBuffers, SMALL_MESSAGE_MAX};

/// Largest gathering buffer kept between messages: enough for the
/// compressed form of messages that fit the slab.
const KEPT_GATHERED_MAX: usize = 2 * SMALL_MESSAGE_MAX;

/// Largest output buffer kept between messages: it only ever holds a
/// message of up to [`SMALL_MESSAGE_MAX`], plus the growth step that found
/// its end.
const KEPT_OUTPUT_MAX: usize = 2 * SMALL_MESSAGE_MAX;

/// The first output room of a compressed message that declares no size,
/// in multiples of its compressed size.
const UNDECLARED_RATIO: usize = 4;

/// The buffers a stream reuses for its compressed payloads (messages and
/// trailers): created on its first compressed message, so a stream that
/// never compresses pays nothing.
#[derive(Debug, Default)]
pub(super) struct Scratch {
    /// Where a payload is decompressed before it is placed: small output is
    /// copied into the slab and this buffer kept; large output is handed
    /// over whole ([`message`](Self::message)).
    output: Vec<u8>,
    /// Where a compressed payload that arrives in several frames is
    /// gathered; grows with the bytes received.
    gathered: Vec<u8>,
}

impl Scratch {
    /// Decompresses one payload, bounded by `limit`, into the reused output
    /// buffer.
    pub(super) fn decompress(
        &mut self,
        encoding: CompressionEncoding,
        payload: &[u8],
        limit: usize,
    ) -> Result<&[u8], Status> {
        self.output.clear();
        if self.output.capacity() > KEPT_OUTPUT_MAX {
            self.output = Vec::new();
        }
        Decompressor::new(encoding).decompress(payload, &mut self.output, limit)?;
        Ok(&self.output)
    }

    /// Decompresses one message, bounded by `limit`, into memory the message
    /// owns alone: a slab region for a small one, the output buffer itself
    /// (exactly sized) for a large one.
    pub(super) fn message(
        &mut self,
        encoding: CompressionEncoding,
        payload: &[u8],
        limit: usize,
        buffers: &mut MessageBuffers,
    ) -> Result<Bytes, Status> {
        let output = self.decompress(encoding, payload, limit)?;
        if output.len() <= SMALL_MESSAGE_MAX {
            return Ok(buffers.copy_slice(output));
        }
        Ok(buffers.place(std::mem::take(&mut self.output)))
    }

    /// Starts gathering a payload that arrives in pieces.
    pub(super) fn start_gathering(&mut self) {
        self.gathered.clear();
    }

    /// Appends the next piece of the payload being gathered.
    pub(super) fn gather(&mut self, piece: &[u8]) {
        self.gathered.extend_from_slice(piece);
    }

    /// The whole gathered payload; give it back with
    /// [`recycle_gathered`](Self::recycle_gathered).
    pub(super) fn take_gathered(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.gathered)
    }

    /// Takes a gathering buffer back after use, unless it grew too large to
    /// keep for the stream's life.
    pub(super) fn recycle_gathered(&mut self, mut gathered: Vec<u8>) {
        if gathered.capacity() <= KEPT_GATHERED_MAX {
            gathered.clear();
            self.gathered = gathered;
        }
    }
}

/// One compressed message's decompression on a stream with a receive
/// budget: its output is gated like received bytes, each attempt writing at
/// most the room the budget granted before it ran.
///
/// The first room is what the compressed data declares (zstd content size,
/// gzip ISIZE) or, when it declares nothing, [`UNDECLARED_RATIO`] times its
/// size. A declared size past the whole budget (within the limit) fails at
/// once, as a message that large fails on its header; one past the limit
/// gets no grant and the decompressor refuses it with the limit's text.
/// Output that needs more room doubles it (at least to the declared size)
/// and decompresses again from the start, the whole payload being at hand.
/// Output up to [`SMALL_MESSAGE_MAX`] needs no grant: it ends up in the
/// slab, which the budget counts already.
#[derive(Debug, Default)]
pub(super) struct GatedDecompression {
    /// The output the next attempt may write (0 until estimated).
    room: usize,
    /// The output room the budget has granted so far.
    granted: usize,
}

impl GatedDecompression {
    /// Decompresses `payload` once the budget grants its output: the
    /// output, or `None` while the budget makes it wait (nothing is held
    /// meanwhile but the grants: no context, no output).
    pub(super) fn poll(
        &mut self,
        encoding: CompressionEncoding,
        payload: &[u8],
        limit: usize,
        budget: &mut StreamBudget,
    ) -> Result<Option<Vec<u8>>, Status> {
        let mut decompressor = Decompressor::new(encoding);
        let ceiling = budget.capacity().min(limit);
        let declared = decompressor.output_hint(payload);
        if self.room == 0 {
            self.room = first_room(declared, payload.len(), limit, ceiling)?;
        }
        loop {
            if self.room > SMALL_MESSAGE_MAX && self.granted < self.room {
                let more = self.room - self.granted;
                if !budget.take(more, more) {
                    return Ok(None);
                }
                self.granted = self.room;
            }
            // A fresh buffer, so its capacity stays within the granted room.
            let mut output = Vec::new();
            let attempt = self.room.max(SMALL_MESSAGE_MAX.min(limit));
            match decompressor.decompress_within(payload, &mut output, limit, attempt)? {
                Bounded::Done => return Ok(Some(output)),
                Bounded::NeedsRoom if attempt >= ceiling => {
                    // The limit allows more, the whole budget does not.
                    return Err(decompressed_too_large(ceiling));
                }
                Bounded::NeedsRoom => {
                    let doubled = attempt.saturating_mul(2).max(declared.unwrap_or(0));
                    self.room = doubled.min(ceiling);
                }
            }
        }
    }
}

/// The room of a gated decompression's first attempt.
fn first_room(
    declared: Option<usize>,
    compressed: usize,
    limit: usize,
    ceiling: usize,
) -> Result<usize, Status> {
    Ok(match declared {
        // Past the limit: no grant; the decompressor refuses the output
        // with the limit's standard text (zstd before decoding).
        Some(declared) if declared > limit => SMALL_MESSAGE_MAX,
        Some(declared) if declared > ceiling => return Err(decompressed_too_large(ceiling)),
        Some(declared) => declared.max(1),
        None => compressed
            .saturating_mul(UNDECLARED_RATIO)
            .clamp(1, ceiling.max(1)),
    })
}

#[cold]
fn decompressed_too_large(capacity: usize) -> Status {
    Status::new(
        Code::ResourceExhausted,
        format!("decompressed message exceeds the receive budget of {capacity} bytes"),
    )
}
