//! Turning transport frames into messages, one frame at a time.

use std::collections::VecDeque;
use std::task::{Context, Poll};

use bytes::{Buf, Bytes};
use http::HeaderMap;

use super::buffers::MessageBuilder;
use super::decompression::GatedDecompression;
use super::sink::PayloadSink;
use super::state::{IDLE, State};
use crate::budget::Budget;
use crate::compression::CompressionEncoding;
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
/// the message will keep ([`MessageBuffers`](super::MessageBuffers)), and a frame is never copied
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
/// use grpc_stream_codec::envelope::Limits;
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
/// # Ok::<(), grpc_stream_codec::status::Status>(())
/// ```
#[derive(Debug)]
pub struct EnvelopeAssembler {
    /// Where payloads go: checks, memory, decompression, the budget.
    sink: PayloadSink,
    /// The unread rest of the frame being parsed.
    frame: Bytes,
    /// Frames pushed before `frame` was used up (stays unallocated when the
    /// caller drains with `next` before each `push`, as it should).
    queued: VecDeque<Bytes>,
    state: State,
    /// The wire length of the envelope being read (its header accepted):
    /// what its message adds to `message_bytes` once it is whole.
    current_len: u32,
    /// The payload bytes, as on the wire (compressed when they were), of
    /// every whole message read so far; trailers excluded.
    message_bytes: u64,
}

impl EnvelopeAssembler {
    /// An assembler that yields decoded (decompressed) messages.
    ///
    /// `encoding` is the stream's `grpc-encoding`: `None` (or `Identity`)
    /// means a compressed flag is a protocol error.
    pub fn new(limits: Limits, encoding: Option<CompressionEncoding>) -> Self {
        EnvelopeAssembler {
            sink: PayloadSink::new(limits, encoding),
            frame: Bytes::new(),
            queued: VecDeque::new(),
            state: IDLE,
            current_len: 0,
            message_bytes: 0,
        }
    }

    /// The payload bytes, as on the wire (compressed when they were), of
    /// the whole messages read so far: gRPC-Web's trailers, a message cut
    /// short and a refused one are not counted (A66's received compressed
    /// size, counted as grpc-go does, one whole message at a time).
    pub(crate) fn message_bytes(&self) -> u64 {
        self.message_bytes
    }

    /// Changes the receive limit for envelopes whose header has not been read yet.
    pub fn set_limits(&mut self, limits: Limits) {
        self.sink.set_limits(limits);
    }

    /// Counts what this stream allocates for received messages against
    /// `budget` (see [`crate::budget`]). Set it before the first frame.
    ///
    /// When the budget cannot grant, [`next`](Self::next) returns
    /// `Ok(None)` with [`is_blocked`](Self::is_blocked) true: do not push
    /// frames (stop reading the body) and wait with
    /// [`poll_budget`](Self::poll_budget), then call `next` again.
    pub fn set_budget(&mut self, budget: impl Into<Budget>) {
        self.sink.set_budget(budget.into());
    }

    /// Whether the assembler waits for its budget (see
    /// [`set_budget`](Self::set_budget)). Always false without one.
    pub fn is_blocked(&self) -> bool {
        self.sink.is_blocked()
    }

    /// Waits for the memory the budget could not grant at once: `Ready(Ok)`
    /// when [`next`](Self::next) can go on, `Ready(Err)` if the wait timed
    /// out (`resource_exhausted`; the assembler has then failed).
    pub fn poll_budget(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Status>> {
        match self.sink.poll_budget(cx) {
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
            && !matches!(self.state, State::Failed(_) | State::Gated { .. })
        {
            // Drained: answered without building a `Result` in `step`.
            // Replace even an empty remnant of the frame: it still pins the
            // frame's memory.
            self.frame = Bytes::new();
            return Ok(None);
        }
        match self.step() {
            Ok(decoded) => {
                if let Some(Decoded::Message(_)) = decoded {
                    self.message_bytes += u64::from(self.current_len);
                }
                Ok(decoded)
            }
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
        let outcome = self.state.at_end(unread);
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
        self.state = State::Failed(status.clone());
        self.sink.release();
        status
    }

    /// The slow path: one parser state at a time, until a message is
    /// complete, the budget makes the stream wait, or the pushed frames are
    /// used up.
    #[inline(never)]
    fn step(&mut self) -> Result<Option<Decoded>, Status> {
        loop {
            match &self.state {
                State::Failed(status) => return Err(status.clone()),
                State::Gated { .. } => return self.gated_step(),
                State::Ended if !self.frame.is_empty() || !self.queued.is_empty() => {
                    return Err(Status::internal(
                        "protocol error: data after the gRPC-Web trailers frame",
                    ));
                }
                _ => {}
            }
            if self.frame.is_empty() {
                // Replace even an empty remnant: it still pins the frame's memory.
                self.frame = self.queued.pop_front().unwrap_or_default();
                if self.frame.is_empty() {
                    return Ok(None);
                }
            }
            let decoded = match &self.state {
                State::Header { .. } => self.read_header()?,
                State::Payload { .. } => self.read_payload()?,
                State::Gather { .. } => self.read_gathered()?,
                State::Ended | State::Failed(_) | State::Gated { .. } => None,
            };
            if decoded.is_some() || self.sink.is_blocked() {
                return Ok(decoded);
            }
        }
    }

    /// Reads the rest of an envelope header from the frame, then starts its
    /// payload.
    fn read_header(&mut self) -> Result<Option<Decoded>, Status> {
        let State::Header { bytes, filled } = &mut self.state else {
            debug_assert!(false, "read_header outside State::Header");
            return Ok(None);
        };
        let taken = (HEADER_LEN - *filled).min(self.frame.len());
        bytes[*filled..*filled + taken].copy_from_slice(&self.frame[..taken]);
        *filled += taken;
        self.frame.advance(taken);
        if *filled < HEADER_LEN {
            return Ok(None);
        }
        let header = EnvelopeHeader::parse(*bytes)?;
        self.start(header)
    }

    /// Copies what the frame holds of a payload into its message, as far as
    /// the budget (if any) grants.
    fn read_payload(&mut self) -> Result<Option<Decoded>, Status> {
        let State::Payload { builder, .. } = &mut self.state else {
            debug_assert!(false, "read_payload outside State::Payload");
            return Ok(None);
        };
        if !self.sink.may_grow(builder, self.frame.len()) {
            // Blocked: keep the frame, read nothing more.
            return Ok(None);
        }
        builder.fill_from(&mut self.frame);
        if builder.remaining() > 0 {
            return Ok(None);
        }
        let State::Payload { header, builder } = self.state.take() else {
            return Ok(None);
        };
        self.complete(header, builder)
    }

    /// Gathers what the frame holds of a compressed payload or trailers;
    /// transforms it once complete.
    fn read_gathered(&mut self) -> Result<Option<Decoded>, Status> {
        let State::Gather { remaining, .. } = &mut self.state else {
            debug_assert!(false, "read_gathered outside State::Gather");
            return Ok(None);
        };
        let taken = (*remaining).min(self.frame.len());
        self.sink.gather(&self.frame[..taken]);
        self.frame.advance(taken);
        *remaining -= taken;
        if *remaining > 0 {
            return Ok(None);
        }
        let State::Gather { header, .. } = self.state.take() else {
            return Ok(None);
        };
        let decoded = self.sink.finish_gathered(header)?;
        Ok(Some(self.ended_by(decoded)))
    }

    /// The fast path: the next message when the current frame holds all of
    /// it, header and payload, and it is a plain message that passes every
    /// check; `None` (having consumed nothing) otherwise, and [`step`]
    /// (Self::step) takes over, errors included.
    ///
    /// This is the common case (one message per frame, or many small ones
    /// packed in a chunk): one copy from the frame into the message's memory,
    /// no parser state. Small, infallible and inlined, so that no `Result`
    /// is built or moved per message.
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
        if flags != 0 || len > self.sink.fast_max() || self.frame.len() < end {
            return None;
        }
        let message = self.sink.copy_message(&self.frame[HEADER_LEN..end]);
        self.frame.advance(end);
        self.message_bytes += len as u64;
        Some(message)
    }

    /// Checks a complete header and starts its payload. Returns the result
    /// at once when the frame holds a payload that needs no copy of its own.
    fn start(&mut self, header: EnvelopeHeader) -> Result<Option<Decoded>, Status> {
        let len = header.len() as usize;
        self.sink.check(header)?;
        self.state = IDLE;
        self.current_len = header.len();
        let transformed = header.is_trailers() || header.is_compressed();
        if transformed && self.sink.is_gated(header) && self.frame.len() >= len {
            // Decompressed from the frame, once its output is granted.
            return self.gate(header, None);
        }
        if transformed && self.frame.len() >= len {
            // Read in place: the payload only passes through on its way to a
            // parsed map or a decompressed buffer.
            let decoded = self
                .sink
                .trailers_or_decompressed(header, &self.frame[..len])?;
            self.frame.advance(len);
            return Ok(Some(self.ended_by(decoded)));
        }
        if transformed && len > 0 && !self.sink.has_budget() {
            // Arrives in pieces: gathered where the next one will be too.
            // With a budget it is built like a message instead, as the
            // gathering buffer is not counted.
            self.sink.start_gathering();
            self.state = State::Gather {
                header,
                remaining: len,
            };
            return Ok(None);
        }
        let builder = self.sink.builder(len);
        if builder.remaining() == 0 {
            return self.complete(header, builder);
        }
        self.state = State::Payload { header, builder };
        Ok(None)
    }

    /// Turns a complete payload into what the caller receives: `Ok(None)`
    /// while a compressed message waits for its output to be granted.
    fn complete(
        &mut self,
        header: EnvelopeHeader,
        builder: MessageBuilder,
    ) -> Result<Option<Decoded>, Status> {
        if !header.is_trailers() && !header.is_compressed() {
            let message = self.sink.finish_message(builder);
            return Ok(Some(Decoded::Message(message)));
        }
        if self.sink.is_gated(header) {
            return self.gate(header, Some(builder));
        }
        let decoded = self.sink.finish_transformed(header, builder)?;
        Ok(Some(self.ended_by(decoded)))
    }

    /// Enters `State::Gated` for a compressed message whose payload is in
    /// `input` or, when `None`, at the start of the current frame.
    fn gate(
        &mut self,
        header: EnvelopeHeader,
        input: Option<MessageBuilder>,
    ) -> Result<Option<Decoded>, Status> {
        self.state = State::Gated {
            header,
            input,
            decompression: GatedDecompression::default(),
        };
        self.gated_step()
    }

    /// Decompresses the message of `State::Gated` once the budget grants
    /// its output; `Ok(None)` while it waits.
    fn gated_step(&mut self) -> Result<Option<Decoded>, Status> {
        let State::Gated {
            header,
            input,
            decompression,
        } = &mut self.state
        else {
            debug_assert!(false, "gated_step outside State::Gated");
            return Ok(None);
        };
        let len = header.len() as usize;
        let from_frame = input.is_none();
        let payload = match input {
            Some(builder) => builder.as_slice(),
            None => {
                debug_assert!(self.frame.len() >= len, "`start` saw the whole payload");
                &self.frame[..len]
            }
        };
        let Some(output) = self.sink.gated(payload, decompression)? else {
            return Ok(None);
        };
        // The compressed bytes go first: the message's share counts only
        // its output.
        self.state = IDLE;
        if from_frame {
            self.frame.advance(len);
        }
        Ok(Some(Decoded::Message(self.sink.place_gated(output))))
    }

    /// Notes the end of the stream when `decoded` is its trailers.
    fn ended_by(&mut self, decoded: Decoded) -> Decoded {
        if matches!(decoded, Decoded::EndStream(_)) {
            self.state = State::Ended;
        }
        decoded
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::{Decoded, EnvelopeAssembler};
    use crate::budget::SharedBudget;
    use crate::envelope::{EnvelopeHeader, Limits};

    /// `payload` behind its prefix: a message, compressed or not, or
    /// gRPC-Web's trailers.
    fn envelope(header: fn(u32) -> EnvelopeHeader, payload: &[u8]) -> Vec<u8> {
        let len = u32::try_from(payload.len()).expect("a test payload");
        [&header(len).to_bytes()[..], payload].concat()
    }

    fn plain(len: u32) -> EnvelopeHeader {
        EnvelopeHeader::message(false, len)
    }

    #[cfg(feature = "gzip")]
    fn compressed(len: u32) -> EnvelopeHeader {
        EnvelopeHeader::message(true, len)
    }

    /// Feeds `wire` in chunks of `step` and reads everything: the messages
    /// read and the count of their wire bytes.
    fn read(assembler: &mut EnvelopeAssembler, wire: &[u8], step: usize) -> (usize, u64) {
        let mut messages = 0;
        for chunk in wire.chunks(step) {
            assembler.push(Bytes::copy_from_slice(chunk));
            while let Ok(Some(decoded)) = assembler.next() {
                messages += usize::from(matches!(decoded, Decoded::Message(_)));
            }
        }
        (messages, assembler.message_bytes())
    }

    #[cfg(feature = "gzip")]
    fn gzip(payload: &[u8]) -> Vec<u8> {
        use crate::compression::{Compression, CompressionEncoding};
        let mut out = Vec::new();
        Compression::new(CompressionEncoding::Gzip)
            .compress(&mut &payload[..], &mut out)
            .expect("gzip");
        out
    }

    #[test]
    fn counts_the_wire_bytes_of_whole_messages_across_any_split() {
        let mut wire = envelope(plain, &[7; 10]);
        wire.extend(envelope(plain, &[]));
        wire.extend(envelope(plain, &[1; 300]));
        let plain_bytes = 310;
        #[cfg(feature = "gzip")]
        let (encoding, expected) = {
            let gzipped = gzip(&[3; 2000]);
            wire.extend(envelope(compressed, &gzipped));
            let encoding = crate::compression::CompressionEncoding::Gzip;
            (Some(encoding), plain_bytes + gzipped.len() as u64)
        };
        #[cfg(not(feature = "gzip"))]
        let (encoding, expected) = (None, plain_bytes);
        wire.extend(envelope(EnvelopeHeader::trailers, b"grpc-status:0\r\n"));
        for step in 1..=wire.len() {
            for budgeted in [false, true] {
                let mut assembler = EnvelopeAssembler::new(Limits::default(), encoding);
                if budgeted {
                    assembler.set_budget(SharedBudget::new(1 << 20));
                }
                let (messages, bytes) = read(&mut assembler, &wire, step);
                let sent = 3 + usize::from(encoding.is_some());
                assert_eq!(messages, sent, "chunks of {step}, budget {budgeted}");
                assert_eq!(bytes, expected, "chunks of {step}, budget {budgeted}");
            }
        }
    }

    #[test]
    fn a_message_cut_short_or_refused_is_not_counted() {
        let mut wire = envelope(plain, &[7; 10]);
        wire.extend(&envelope(plain, &[1; 300])[..200]);
        let mut assembler = EnvelopeAssembler::new(Limits::default(), None);
        assert_eq!(read(&mut assembler, &wire, 64), (1, 10));
        assert!(assembler.finish().is_err());
        assert_eq!(assembler.message_bytes(), 10);

        let mut wire = envelope(plain, &[7; 10]);
        wire.extend(envelope(plain, &[1; 300]));
        let mut assembler = EnvelopeAssembler::new(Limits::new().with_max_receive(100), None);
        assert_eq!(read(&mut assembler, &wire, 64), (1, 10));
    }
}
