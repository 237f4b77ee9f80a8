//! Where the payloads an [`EnvelopeAssembler`](super::EnvelopeAssembler)
//! parses go: the checks made on each header, the memory each message keeps,
//! decompression and the receive budget.

use std::task::{Context, Poll};

use bytes::Bytes;

use super::Decoded;
use super::buffers::{MessageBuffers, MessageBuilder, SMALL_MESSAGE_MAX};
use super::decompression::{GatedDecompression, Scratch};
use super::trailers::parse_trailers;
use crate::budget::{Budget, StreamBudget};
use crate::compression::CompressionEncoding;
use crate::envelope::{EnvelopeHeader, HEADER_LEN, Limits, MAX_TRAILERS_SIZE};
use crate::status::Status;

/// One stream's destination for received payloads.
#[derive(Debug)]
pub(super) struct PayloadSink {
    buffers: MessageBuffers,
    max_receive: usize,
    /// The largest message the parser's fast path may hand over: the
    /// limit, or with a budget only small ones (the fast path cannot wait
    /// for a grant).
    fast_max: usize,
    budget: Option<Box<StreamBudget>>,
    /// The stream's `grpc-encoding`; `None` or `Identity`: none.
    encoding: Option<CompressionEncoding>,
    /// Boxed so the assembler stays small; created on first use, so a
    /// stream that never compresses pays nothing.
    scratch: Option<Box<Scratch>>,
}

impl PayloadSink {
    pub(super) fn new(limits: Limits, encoding: Option<CompressionEncoding>) -> Self {
        PayloadSink {
            buffers: MessageBuffers::new(),
            max_receive: limits.max_receive(),
            fast_max: limits.max_receive(),
            budget: None,
            encoding,
            scratch: None,
        }
    }

    pub(super) fn set_limits(&mut self, limits: Limits) {
        self.max_receive = limits.max_receive();
        self.fast_max = self.fast_path_max();
    }

    pub(super) fn set_budget(&mut self, budget: Budget) {
        self.buffers.set_budget(budget.clone());
        self.budget = Some(Box::new(StreamBudget::new(budget)));
        self.fast_max = self.fast_path_max();
    }

    fn fast_path_max(&self) -> usize {
        match self.budget {
            None => self.max_receive,
            Some(_) => self.max_receive.min(SMALL_MESSAGE_MAX - HEADER_LEN),
        }
    }

    /// The largest plain message the fast path may take whole.
    #[inline]
    pub(super) fn fast_max(&self) -> usize {
        self.fast_max
    }

    /// A plain message whose bytes are all at hand, in memory of its own.
    #[inline]
    pub(super) fn copy_message(&mut self, payload: &[u8]) -> Bytes {
        self.buffers.copy_slice(payload)
    }

    pub(super) fn is_blocked(&self) -> bool {
        matches!(&self.budget, Some(budget) if budget.blocked())
    }

    pub(super) fn has_budget(&self) -> bool {
        self.budget.is_some()
    }

    pub(super) fn poll_budget(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Status>> {
        match self.budget.as_deref_mut() {
            Some(budget) => budget.poll(cx),
            None => Poll::Ready(Ok(())),
        }
    }

    /// Everything known of a message on its header, before anything is
    /// allocated for its payload: its size against the limit (and the whole
    /// budget), and that a compressed one has an encoding to be read with.
    pub(super) fn check(&self, header: EnvelopeHeader) -> Result<(), Status> {
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
            _ => Err(Status::internal(crate::observe::NO_ENCODING)),
        }
    }

    /// Whether a compressed message's output must be granted by the budget
    /// before it is decompressed ([`gated`](Self::gated)).
    pub(super) fn is_gated(&self, header: EnvelopeHeader) -> bool {
        self.budget.is_some() && header.is_compressed() && !header.is_trailers()
    }

    /// Starts a payload of `len` bytes that arrives in pieces.
    pub(super) fn builder(&mut self, len: usize) -> MessageBuilder {
        self.buffers.builder(len)
    }

    /// Whether `builder` may take `incoming` more bytes now: always without
    /// a budget; with one, once the growth they need is granted.
    pub(super) fn may_grow(&mut self, builder: &MessageBuilder, incoming: usize) -> bool {
        let Some(budget) = self.budget.as_deref_mut() else {
            return true;
        };
        let growth = builder.growth_for(incoming);
        growth == 0 || budget.take(growth, builder.growth_rest())
    }

    /// A complete plain message, carrying its share of the budget.
    pub(super) fn finish_message(&mut self, builder: MessageBuilder) -> Bytes {
        match self.budget.as_deref_mut() {
            Some(budget) => builder.finish_counted(budget.message_share()),
            None => builder.finish(),
        }
    }

    /// A complete trailers frame or (ungated) compressed message, gathered
    /// in `builder`, which is freed and its bytes given back to the budget.
    pub(super) fn finish_transformed(
        &mut self,
        header: EnvelopeHeader,
        builder: MessageBuilder,
    ) -> Result<Decoded, Status> {
        let decoded = self.trailers_or_decompressed(header, builder.as_slice());
        drop(builder);
        if let Some(budget) = self.budget.as_deref_mut() {
            budget.release_message();
        }
        decoded
    }

    /// A trailers frame's map, or a compressed message decompressed
    /// without a budget (with one: [`gated`](Self::gated)).
    pub(super) fn trailers_or_decompressed(
        &mut self,
        header: EnvelopeHeader,
        payload: &[u8],
    ) -> Result<Decoded, Status> {
        let encoding = match header.is_compressed() {
            true => Some(self.encoding()?),
            false => None,
        };
        debug_assert!(
            !self.is_gated(header),
            "a gated message decompressed ungated"
        );
        let scratch = self.scratch.get_or_insert_with(Box::default);
        if header.is_trailers() {
            let block = match encoding {
                Some(encoding) => scratch.decompress(encoding, payload, MAX_TRAILERS_SIZE)?,
                None => payload,
            };
            return Ok(Decoded::EndStream(Box::new(parse_trailers(block)?)));
        }
        let Some(encoding) = encoding else {
            debug_assert!(false, "a plain message taken for decompression");
            return Err(Status::internal("plain message taken for decompression"));
        };
        scratch
            .message(encoding, payload, self.max_receive, &mut self.buffers)
            .map(Decoded::Message)
    }

    /// Decompresses a gated message once the budget grants its output:
    /// `None` while it waits. The message's share is then its output's
    /// exact size; a small output goes to the slab, its grant released.
    pub(super) fn gated(
        &mut self,
        payload: &[u8],
        decompression: &mut GatedDecompression,
    ) -> Result<Option<Vec<u8>>, Status> {
        let encoding = self.encoding()?;
        let Some(budget) = self.budget.as_deref_mut() else {
            debug_assert!(false, "a gated message on a stream without a budget");
            return Err(Status::internal("decompression gated without a budget"));
        };
        decompression.poll(encoding, payload, self.max_receive, budget)
    }

    /// Places a gated decompression's output, after its compressed bytes
    /// were freed.
    pub(super) fn place_gated(&mut self, output: Vec<u8>) -> Bytes {
        match self.budget.as_deref_mut() {
            Some(budget) => self.buffers.place_counted(output, budget),
            None => self.buffers.place(output),
        }
    }

    /// Starts gathering a transformed payload that arrives in pieces.
    pub(super) fn start_gathering(&mut self) {
        self.scratch
            .get_or_insert_with(Box::default)
            .start_gathering();
    }

    /// Gathers the next piece of a transformed payload.
    pub(super) fn gather(&mut self, piece: &[u8]) {
        self.scratch.get_or_insert_with(Box::default).gather(piece);
    }

    /// Transforms the gathered payload, now complete.
    pub(super) fn finish_gathered(&mut self, header: EnvelopeHeader) -> Result<Decoded, Status> {
        let gathered = self
            .scratch
            .get_or_insert_with(Box::default)
            .take_gathered();
        let decoded = self.trailers_or_decompressed(header, &gathered);
        if let Some(scratch) = self.scratch.as_mut() {
            scratch.recycle_gathered(gathered);
        }
        decoded
    }

    /// Lets go of everything held for a message in progress, after an
    /// error: nothing more is received.
    pub(super) fn release(&mut self) {
        self.scratch = None;
        if let Some(budget) = self.budget.as_deref_mut() {
            budget.release_message();
        }
    }
}
