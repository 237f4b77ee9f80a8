//! Turning transport frames into messages, one frame at a time.

use std::collections::VecDeque;
use std::mem;
use std::task::{Context, Poll};

use bytes::{Buf, Bytes};
use http::HeaderMap;

use super::buffers::{MessageBuffers, MessageBuilder, SMALL_MESSAGE_MAX};
use super::trailers::{MAX_TRAILERS_SIZE, parse_trailers};
use crate::budget::{Budget, Counted, StreamBudget};
use crate::compression::{CompressionEncoding, Decompressor, Inflated};
use crate::envelope::{EnvelopeHeader, HEADER_LEN, Limits};
use crate::status::Status;

/// What an [`EnvelopeAssembler`] yields.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decoded {
    /// One message's payload, decompressed.
    Message(Bytes),
    /// A gRPC-Web trailers frame (flag `0x80`) with its parsed trailers. No
    /// data may follow it.
    ///
    /// Boxed for speed: an inline `HeaderMap` (96 bytes) made every
    /// `Result<Option<Decoded>, Status>` about 100 bytes, and moving that on
    /// each message cost more than the rare trailers' extra allocation.
    EndStream(Box<HeaderMap>),
}

/// Assembles gRPC messages from the frames of a body, fed one frame at a time.
///
/// Between frames it carries at most the 5 bytes of an incomplete envelope
/// header: a message's payload goes straight from the frame into the memory
/// the message will keep ([`MessageBuffers`]), and a frame is never copied
/// into an intermediate buffer. No message refers to a transport frame, so
/// holding a message never pins the frame it came in.
///
/// Checks, all made on the 5-byte header before anything is allocated for
/// the payload:
/// - reserved flag bits are `internal`;
/// - a length above the receive limit is `resource_exhausted`,
///   `message size N exceeds limit M` (gRPC-Web trailers: 1 MiB);
/// - a compressed message on a stream without a `grpc-encoding` is `internal`.
///
/// Compressed payloads are decompressed with the receive limit as a bound.
/// After an error the assembler is finished: every later call returns the
/// same error and no further byte is parsed.
///
/// ```
/// use bytes::{Buf, Bytes};
/// use grpc_stream_codec::decode::{Decoded, EnvelopeAssembler};
/// use grpc_stream_codec::Limits;
///
/// let mut assembler = EnvelopeAssembler::new(Limits::default(), None);
/// // Two messages, "hi" and "there", split across frames at odd places.
/// let wire = b"\0\0\0\0\x02hi\0\0\0\0\x05there";
/// let mut messages = Vec::new();
/// for frame in [&wire[..3], &wire[3..9], &wire[9..]] {
///     assembler.push(Bytes::copy_from_slice(frame));
///     while let Some(decoded) = assembler.next()? {
///         if let Decoded::Message(message) = decoded {
///             messages.push(message);
///         }
///     }
/// }
/// // The body has ended: an envelope cut short would be an error here.
/// assembler.finish()?;
/// assert_eq!(messages, ["hi", "there"]);
/// # Ok::<(), grpc_stream_codec::Status>(())
/// ```
#[derive(Debug)]
pub struct EnvelopeAssembler {
    buffers: MessageBuffers,
    max_receive: usize,
    /// The largest message the fast path takes: `max_receive`, or with a
    /// budget only small ones (large ones are granted on the slow path).
    fast_max: usize,
    /// The receive budget, if any (see [`crate::budget`]).
    budget: Option<Box<StreamBudget>>,
    /// The stream's `grpc-encoding`; `None` or `Identity`: none.
    encoding: Option<CompressionEncoding>,
    /// The unread rest of the frame being parsed.
    frame: Bytes,
    /// Frames pushed before `frame` was used up (stays unallocated when the
    /// caller drains with `next` before each `push`, as it should).
    queued: VecDeque<Bytes>,
    state: State,
    /// Boxed so the assembler stays small; created on first use, so a
    /// stream that never compresses pays nothing.
    inflate: Option<Box<Inflate>>,
}

/// The first output room of a compressed message that declares no size,
/// in multiples of its compressed size.
const UNDECLARED_RATIO: usize = 4;

#[cold]
fn decompressed_too_large(capacity: usize) -> Status {
    Status::new(
        crate::status::Code::ResourceExhausted,
        format!("decompressed message exceeds the receive budget of {capacity} bytes"),
    )
}

#[cold]
fn ended_inside(header: EnvelopeHeader, remaining: usize) -> Status {
    let expected = header.len() as usize;
    Status::internal(format!(
        "protocol error: body ended inside a message ({} of {expected} bytes)",
        expected - remaining
    ))
}

/// The stream's decompression: a decompressor (which takes a pooled context
/// per message) and one output buffer, both created on the first compressed
/// message and reused for the next ones.
#[derive(Debug, Default)]
struct Inflate {
    decompressor: Option<Decompressor>,
    /// Where a message is decompressed before it is placed: small output is
    /// copied into the slab and this buffer kept; large output is handed
    /// over whole and this buffer starts again empty.
    output: Vec<u8>,
    /// Where a compressed payload (or trailers frame) that arrives in several
    /// frames is gathered; grows with the bytes received.
    input: Vec<u8>,
}

/// Largest gathering buffer kept between messages: enough for the
/// compressed form of messages that fit the slab.
const KEPT_INPUT_MAX: usize = 2 * SMALL_MESSAGE_MAX;

/// Largest decompression buffer kept between messages: it only ever holds
/// a message of up to [`SMALL_MESSAGE_MAX`], plus the growth step that found
/// its end.
const KEPT_OUTPUT_MAX: usize = 2 * SMALL_MESSAGE_MAX;

impl Inflate {
    /// Decompresses one payload, bounded by `limit`, into the reused buffer.
    fn run(
        &mut self,
        encoding: CompressionEncoding,
        payload: &[u8],
        limit: usize,
    ) -> Result<&[u8], Status> {
        let decompressor = self
            .decompressor
            .get_or_insert_with(|| Decompressor::new(encoding));
        self.output.clear();
        if self.output.capacity() > KEPT_OUTPUT_MAX {
            self.output = Vec::new();
        }
        decompressor.decompress(payload, &mut self.output, limit)?;
        Ok(&self.output)
    }

    /// Takes a gathering buffer back after use, unless it grew too large to
    /// keep for the stream's life.
    fn recycle_input(&mut self, mut input: Vec<u8>) {
        if input.capacity() <= KEPT_INPUT_MAX {
            input.clear();
            self.input = input;
        }
    }

    /// Hands the last output over, for a message that keeps it as its own
    /// allocation.
    fn take_output(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.output)
    }
}

#[derive(Debug)]
enum State {
    /// Between envelopes, holding the first `filled` bytes of the next header.
    Header {
        bytes: [u8; HEADER_LEN],
        filled: usize,
    },
    /// Inside an envelope whose payload has partly arrived.
    Payload {
        header: EnvelopeHeader,
        builder: MessageBuilder,
    },
    /// Inside a compressed message or a trailers frame whose payload has
    /// partly arrived: it is gathered in the stream's reused input buffer
    /// (it only passes through on its way to the decompressor or the
    /// trailers parser), `remaining` bytes still to come.
    Gather {
        header: EnvelopeHeader,
        remaining: usize,
    },
    /// A compressed message whose payload is complete, on a stream with a
    /// budget, waiting for (or in) its decompression: its output room is
    /// granted before it is used. `input` holds the payload, or `None`
    /// when it is the first bytes of the current frame.
    Inflate {
        header: EnvelopeHeader,
        input: Option<MessageBuilder>,
        /// The output the next attempt may write (0 until estimated).
        room: usize,
        /// The output room granted by the budget so far.
        granted: usize,
    },
    /// After a gRPC-Web trailers frame.
    Ended,
    Failed(Status),
}

const IDLE: State = State::Header {
    bytes: [0; HEADER_LEN],
    filled: 0,
};

impl EnvelopeAssembler {
    /// An assembler that yields decoded (decompressed) messages.
    ///
    /// `encoding` is the stream's `grpc-encoding`: `None` (or `Identity`)
    /// means a compressed flag is a protocol error.
    pub fn new(limits: Limits, encoding: Option<CompressionEncoding>) -> Self {
        EnvelopeAssembler {
            buffers: MessageBuffers::new(),
            max_receive: limits.max_receive(),
            fast_max: limits.max_receive(),
            budget: None,
            encoding,
            frame: Bytes::new(),
            queued: VecDeque::new(),
            state: IDLE,
            inflate: None,
        }
    }

    /// Changes the receive limit for envelopes whose header has not been read yet.
    pub fn set_limits(&mut self, limits: Limits) {
        self.max_receive = limits.max_receive();
        self.fast_max = self.fast_path_max();
    }

    /// Counts what this stream allocates for received messages against
    /// `budget` (see [`crate::budget`]). Set it before the first frame.
    ///
    /// When the budget cannot grant, [`next`](Self::next) returns
    /// `Ok(None)` with [`is_blocked`](Self::is_blocked) true: do not push
    /// frames (stop reading the body) and wait with
    /// [`poll_budget`](Self::poll_budget), then call `next` again.
    pub fn set_budget(&mut self, budget: impl Into<Budget>) {
        let budget = budget.into();
        self.buffers.set_budget(budget.clone());
        self.budget = Some(Box::new(StreamBudget::new(budget)));
        self.fast_max = self.fast_path_max();
    }

    fn fast_path_max(&self) -> usize {
        match self.budget {
            None => self.max_receive,
            // The fast path cannot wait: large messages take the slow one.
            Some(_) => self.max_receive.min(SMALL_MESSAGE_MAX - HEADER_LEN),
        }
    }

    /// Whether the assembler waits for its budget (see
    /// [`set_budget`](Self::set_budget)). Always false without one.
    pub fn is_blocked(&self) -> bool {
        matches!(&self.budget, Some(budget) if budget.blocked())
    }

    /// Waits for the memory the budget could not grant at once: `Ready(Ok)`
    /// when [`next`](Self::next) can go on, `Ready(Err)` if the wait timed
    /// out (`resource_exhausted`; the assembler has then failed).
    pub fn poll_budget(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Status>> {
        let Some(budget) = self.budget.as_deref_mut() else {
            return Poll::Ready(Ok(()));
        };
        match budget.poll(cx) {
            Poll::Ready(Err(status)) => Poll::Ready(Err(self.fail(status))),
            other => other,
        }
    }

    /// Hands the assembler the next frame of the body.
    ///
    /// Call [`next`](Self::next) until it returns `Ok(None)` before pushing
    /// the next frame; frames pushed earlier are queued in order.
    pub fn push(&mut self, frame: Bytes) {
        if matches!(self.state, State::Failed(_)) || frame.is_empty() {
            return;
        }
        if self.frame.is_empty() {
            self.frame = frame;
        } else {
            self.queued.push_back(frame);
        }
    }

    /// The next complete message or trailers, or `Ok(None)` when the pushed
    /// frames are used up.
    #[allow(clippy::should_implement_trait)]
    #[inline]
    pub fn next(&mut self) -> Result<Option<Decoded>, Status> {
        if let Some(message) = self.whole_message() {
            return Ok(Some(Decoded::Message(message)));
        }
        if self.frame.is_empty()
            && self.queued.is_empty()
            && !matches!(self.state, State::Failed(_) | State::Inflate { .. })
        {
            // Drained: answered here rather than in `step`, whose `Result`
            // would be built and moved only to say so. Replace even an empty
            // remnant of the frame: it still pins the frame's memory.
            self.frame = Bytes::new();
            return Ok(None);
        }
        match self.step() {
            Ok(decoded) => Ok(decoded),
            Err(status) => Err(self.fail(status)),
        }
    }

    /// Declares the end of the body.
    ///
    /// A body that ends inside an envelope (in its header or its payload) is
    /// an `internal` error, never a clean end. Call it after
    /// [`next`](Self::next) has returned `Ok(None)`.
    pub fn finish(&mut self) -> Result<(), Status> {
        let unread = self.frame.len() + self.queued.iter().map(Bytes::len).sum::<usize>();
        let outcome = match &self.state {
            State::Failed(status) => Err(status.clone()),
            _ if unread > 0 => Err(Status::internal(format!(
                "body ended with {unread} bytes not yet decoded"
            ))),
            State::Ended | State::Header { filled: 0, .. } => Ok(()),
            State::Header { filled, .. } => Err(Status::internal(format!(
                "protocol error: body ended inside a message header ({filled} of {HEADER_LEN} bytes)"
            ))),
            State::Payload { header, builder } => Err(ended_inside(*header, builder.remaining())),
            State::Gather { header, remaining } => Err(ended_inside(*header, *remaining)),
            State::Inflate { .. } => Err(Status::internal(
                "body ended while a message waited for the receive budget",
            )),
        };
        outcome.map_err(|status| self.fail(status))
    }

    /// Whether the assembler is between envelopes with no unread bytes: the
    /// body could end here cleanly.
    pub fn is_idle(&self) -> bool {
        self.frame.is_empty()
            && self.queued.is_empty()
            && matches!(self.state, State::Header { filled: 0, .. } | State::Ended)
    }

    #[cold]
    #[inline(never)]
    fn fail(&mut self, status: Status) -> Status {
        // Release the peer's bytes now: nothing after an error is parsed.
        self.frame = Bytes::new();
        self.queued = VecDeque::new();
        self.inflate = None;
        self.state = State::Failed(status.clone());
        if let Some(budget) = self.budget.as_deref_mut() {
            budget.release_message();
        }
        status
    }

    #[inline(never)]
    fn step(&mut self) -> Result<Option<Decoded>, Status> {
        loop {
            match &self.state {
                State::Failed(status) => return Err(status.clone()),
                State::Inflate { .. } => return self.inflate_step(),
                _ => {}
            }
            if self.frame.is_empty() {
                // Replace even an empty remnant: it still pins the frame's memory.
                self.frame = self.queued.pop_front().unwrap_or_default();
                if self.frame.is_empty() {
                    return Ok(None);
                }
            }
            match &mut self.state {
                State::Header { bytes, filled } => {
                    let wanted = HEADER_LEN - *filled;
                    let taken = wanted.min(self.frame.len());
                    bytes[*filled..*filled + taken].copy_from_slice(&self.frame[..taken]);
                    *filled += taken;
                    self.frame.advance(taken);
                    if *filled < HEADER_LEN {
                        continue;
                    }
                    let header = EnvelopeHeader::parse(*bytes)?;
                    if let Some(decoded) = self.start(header)? {
                        return Ok(Some(decoded));
                    }
                }
                State::Payload { builder, .. } => {
                    if let Some(budget) = self.budget.as_deref_mut() {
                        let growth = builder.growth_for(self.frame.len());
                        if growth > 0 && !budget.take(growth, builder.growth_rest()) {
                            // Blocked: keep the frame, read nothing more.
                            return Ok(None);
                        }
                    }
                    builder.fill_from(&mut self.frame);
                    if builder.remaining() > 0 {
                        continue;
                    }
                    let State::Payload { header, builder } = mem::replace(&mut self.state, IDLE)
                    else {
                        unreachable!("matched above");
                    };
                    return self.complete(header, builder);
                }
                State::Gather { remaining, .. } => {
                    let taken = (*remaining).min(self.frame.len());
                    let inflate = self.inflate.get_or_insert_with(Box::default);
                    inflate.input.extend_from_slice(&self.frame[..taken]);
                    self.frame.advance(taken);
                    *remaining -= taken;
                    if *remaining > 0 {
                        continue;
                    }
                    let State::Gather { header, .. } = mem::replace(&mut self.state, IDLE) else {
                        unreachable!("matched above");
                    };
                    let input = self
                        .inflate
                        .as_mut()
                        .map(|inflate| mem::take(&mut inflate.input))
                        .unwrap_or_default();
                    let decoded = self.transform(header, &input);
                    if let Some(inflate) = self.inflate.as_mut() {
                        inflate.recycle_input(input);
                    }
                    return decoded.map(Some);
                }
                State::Ended => {
                    return Err(Status::internal(
                        "protocol error: data after the gRPC-Web trailers frame",
                    ));
                }
                State::Failed(_) | State::Inflate { .. } => unreachable!("handled above"),
            }
        }
    }

    /// The fast path: the next message when the current frame holds all of
    /// it, header and payload, and it is a plain message that passes every
    /// check; `None` (having consumed nothing) otherwise, and [`step`]
    /// (Self::step) takes over, errors included.
    ///
    /// This is the common case (one message per frame, or many small ones
    /// packed in a chunk). The payload is copied from the frame into its slab
    /// region or exact allocation in one `memcpy` ([`MessageBuffers::copy_slice`]),
    /// without the five-byte header staging array, a [`MessageBuilder`] or a
    /// trip through `State::Payload`. It is kept small, infallible and
    /// `#[inline]` so that the message is built where the caller wants it:
    /// going through `step` moved the `Result` several times per message and
    /// stalled on the stores.
    #[inline]
    fn whole_message(&mut self) -> Option<Bytes> {
        if !matches!(self.state, State::Header { filled: 0, .. }) {
            return None;
        }
        let head = self.frame.get(..HEADER_LEN)?;
        let flags = head[0];
        let len = u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize;
        let end = HEADER_LEN + len;
        // Uncompressed messages only: trailers, decompression, bad flags and
        // oversized lengths take the slow path, which also reports errors.
        if flags != 0 || len > self.fast_max || self.frame.len() < end {
            return None;
        }
        let message = self.buffers.copy_slice(&self.frame[HEADER_LEN..end]);
        self.frame.advance(end);
        Some(message)
    }

    /// Checks a complete header and starts its payload. Returns the result
    /// at once when the frame holds a payload that needs no copy of its own.
    fn start(&mut self, header: EnvelopeHeader) -> Result<Option<Decoded>, Status> {
        let len = header.len() as usize;
        self.check(header)?;
        self.state = IDLE;
        if self.is_transient(header) && self.frame.len() >= len {
            if self.budget.is_some() && !header.is_trailers() {
                // Decompressed from the frame, once its output is granted.
                self.state = State::Inflate {
                    header,
                    input: None,
                    room: 0,
                    granted: 0,
                };
                return self.inflate_step();
            }
            // Read in place: the payload only passes through on its way to a
            // parsed map or a decompressed buffer.
            let mut frame = mem::take(&mut self.frame);
            let decoded = self.transform(header, &frame[..len]);
            frame.advance(len);
            self.frame = frame;
            return decoded.map(Some);
        }
        if self.is_transient(header) && len > 0 && self.budget.is_none() {
            // Arrives in pieces: gather it where the next one will be too.
            // (With a budget the payload takes the counted, gated path
            // below instead: the gathering buffer is not counted.)
            self.inflate.get_or_insert_with(Box::default).input.clear();
            self.state = State::Gather {
                header,
                remaining: len,
            };
            return Ok(None);
        }
        let builder = self.buffers.builder(len);
        if builder.remaining() == 0 {
            return self.complete(header, builder);
        }
        self.state = State::Payload { header, builder };
        Ok(None)
    }

    /// Whether the payload is turned into something else (trailers, a
    /// decompressed message) rather than handed out as it is.
    fn is_transient(&self, header: EnvelopeHeader) -> bool {
        header.is_trailers() || header.is_compressed()
    }

    fn check(&self, header: EnvelopeHeader) -> Result<(), Status> {
        let len = header.len() as usize;
        if header.is_trailers() {
            crate::envelope::check_trailers_size(len)?;
        } else {
            crate::envelope::check_size(len, self.max_receive)?;
            if let Some(budget) = &self.budget
                && len > budget.capacity()
            {
                return Err(crate::budget::too_large(len, budget.capacity()));
            }
        }
        if header.is_compressed() {
            self.encoding()?;
        }
        Ok(())
    }

    fn encoding(&self) -> Result<CompressionEncoding, Status> {
        match self.encoding {
            Some(encoding) if !encoding.is_identity() => Ok(encoding),
            _ => Err(Status::internal(
                "protocol error: compressed message on a stream without a grpc-encoding",
            )),
        }
    }

    /// Turns a complete payload into what the caller receives: `Ok(None)`
    /// while a compressed message waits for its output to be granted.
    fn complete(
        &mut self,
        header: EnvelopeHeader,
        builder: MessageBuilder,
    ) -> Result<Option<Decoded>, Status> {
        if self.is_transient(header) {
            if self.budget.is_some() && !header.is_trailers() {
                self.state = State::Inflate {
                    header,
                    input: Some(builder),
                    room: 0,
                    granted: 0,
                };
                return self.inflate_step();
            }
            let decoded = self.transform(header, builder.as_slice());
            drop(builder);
            if let Some(budget) = self.budget.as_deref_mut() {
                // The trailers' bytes were just freed.
                budget.release_message();
            }
            decoded.map(Some)
        } else if let Some(budget) = self.budget.as_deref_mut() {
            Ok(Some(Decoded::Message(
                builder.finish_counted(budget.message_share()),
            )))
        } else {
            Ok(Some(Decoded::Message(builder.finish())))
        }
    }

    /// Decompresses the message of `State::Inflate` on a stream with a
    /// budget, its output gated like received bytes: each attempt may
    /// write at most `room` bytes, granted by the budget before it runs
    /// (the first [`SMALL_MESSAGE_MAX`] bytes excepted: output that small
    /// ends up in the ungated slab). The first room is what the compressed
    /// data declares (zstd content size, gzip ISIZE) or, when it declares
    /// nothing, four times its size. A declared size past the whole budget
    /// (within the limit) fails at once; one past the limit gets no grant,
    /// and the decompressor refuses the output with the limit's text.
    /// Output that needs more room doubles it (at least to the declared
    /// size) and decompresses again from the start, the whole payload
    /// being at hand. Returns `Ok(None)` while the budget makes it
    /// wait: the decompression context is given back meanwhile, so a
    /// waiting stream holds its compressed bytes and its grants only.
    ///
    /// The message's share is then its output's exact size (the rest of
    /// the room and the compressed bytes are released), and carries the
    /// overdraft if the message took it.
    fn inflate_step(&mut self) -> Result<Option<Decoded>, Status> {
        let encoding = self.encoding()?;
        let limit = self.max_receive;
        let EnvelopeAssembler {
            state,
            frame,
            inflate,
            budget,
            buffers,
            ..
        } = self;
        let State::Inflate {
            header,
            input,
            room,
            granted,
        } = state
        else {
            return Ok(None);
        };
        let mut budget = budget.as_deref_mut();
        let ceiling = budget.as_ref().map_or(limit, |b| b.capacity().min(limit));
        let len = header.len() as usize;
        let in_frame = input.is_none();
        let payload: &[u8] = match input {
            Some(builder) => builder.as_slice(),
            // `start` checked that the frame holds all of it.
            None => frame.get(..len).unwrap_or_default(),
        };
        let inflate = inflate.get_or_insert_with(Box::default);
        let decompressor = inflate
            .decompressor
            .get_or_insert_with(|| Decompressor::new(encoding));
        let hint = decompressor.output_hint(payload);
        if *room == 0 {
            *room = match hint {
                // Past the limit: no grant; the decompressor refuses it
                // with the limit's standard text (zstd before decoding).
                Some(declared) if declared > limit => SMALL_MESSAGE_MAX,
                // Within the limit, past the whole budget: refused at
                // once, as a message declaring that much is on its header.
                Some(declared) if declared > ceiling => {
                    return Err(decompressed_too_large(ceiling));
                }
                Some(declared) => declared.max(1),
                None => payload
                    .len()
                    .saturating_mul(UNDECLARED_RATIO)
                    .clamp(1, ceiling.max(1)),
            };
        }
        loop {
            if *room > SMALL_MESSAGE_MAX
                && *granted < *room
                && let Some(budget) = budget.as_deref_mut()
            {
                let more = *room - *granted;
                if !budget.take(more, more) {
                    // Blocked: keep the input, hold no context.
                    return Ok(None);
                }
                *granted = *room;
            }
            // Start empty, so the output's capacity stays within the room.
            inflate.output = Vec::new();
            let attempt = (*room).max(SMALL_MESSAGE_MAX.min(limit));
            match decompressor.decompress_within(payload, &mut inflate.output, limit, attempt)? {
                Inflated::Done => break,
                Inflated::NeedsRoom if attempt >= ceiling => {
                    // The limit allows more, the whole budget does not.
                    return Err(decompressed_too_large(ceiling));
                }
                Inflated::NeedsRoom => {
                    let doubled = attempt.saturating_mul(2).max(hint.unwrap_or(0));
                    *room = doubled.min(ceiling);
                }
            }
        }
        let mut output = mem::take(&mut inflate.output);
        // The compressed bytes go first: the share below no longer counts them.
        *state = IDLE;
        if in_frame {
            frame.advance(len);
        }
        let message = if output.len() <= SMALL_MESSAGE_MAX {
            let message = buffers.copy_slice(&output);
            drop(output);
            if let Some(budget) = budget {
                budget.release_message();
            }
            message
        } else {
            output.shrink_to_fit();
            match budget {
                Some(budget) => {
                    let share = budget.output_share(output.capacity());
                    Bytes::from_owner(Counted::new(output, share))
                }
                None => Bytes::from(output),
            }
        };
        Ok(Some(Decoded::Message(message)))
    }

    /// Parses trailers or decompresses a message.
    fn transform(&mut self, header: EnvelopeHeader, payload: &[u8]) -> Result<Decoded, Status> {
        if header.is_trailers() {
            let trailers = if header.is_compressed() {
                let encoding = self.encoding()?;
                let inflate = self.inflate.get_or_insert_with(Box::default);
                parse_trailers(inflate.run(encoding, payload, MAX_TRAILERS_SIZE)?)?
            } else {
                parse_trailers(payload)?
            };
            self.state = State::Ended;
            return Ok(Decoded::EndStream(Box::new(trailers)));
        }
        self.decompress_message(payload).map(Decoded::Message)
    }

    /// Decompresses one message payload with the stream's context, bounded
    /// by the receive limit, into memory the message owns alone: a slab
    /// region for a small message, the decompression buffer itself (exactly
    /// sized) for a large one.
    fn decompress_message(&mut self, payload: &[u8]) -> Result<Bytes, Status> {
        let encoding = self.encoding()?;
        let inflate = self.inflate.get_or_insert_with(Box::default);
        let output = inflate.run(encoding, payload, self.max_receive)?;
        if output.len() <= SMALL_MESSAGE_MAX {
            return Ok(self.buffers.copy_slice(output));
        }
        // With a budget, messages are decompressed by `inflate_step`.
        debug_assert!(self.budget.is_none());
        Ok(self.buffers.place(inflate.take_output()))
    }
}
