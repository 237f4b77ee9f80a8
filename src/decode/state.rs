//! Where an [`EnvelopeAssembler`](super::EnvelopeAssembler) is between two
//! frames: the states of its parser, and what each means if the body ends.

use std::mem;

use super::buffers::MessageBuilder;
use super::decompression::GatedDecompression;
use crate::envelope::{EnvelopeHeader, HEADER_LEN};
use crate::status::Status;

#[derive(Debug)]
pub(super) enum State {
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
    /// partly arrived: it is gathered in the stream's reused buffer (it only
    /// passes through on its way to the decompressor or the trailers
    /// parser), `remaining` bytes still to come.
    Gather {
        header: EnvelopeHeader,
        remaining: usize,
    },
    /// A compressed message whose payload is complete, on a stream with a
    /// budget, waiting for (or in) its decompression. `input` holds the
    /// payload, or `None` when it is the first bytes of the current frame.
    Gated {
        header: EnvelopeHeader,
        input: Option<MessageBuilder>,
        decompression: GatedDecompression,
    },
    /// After a gRPC-Web trailers frame.
    Ended,
    Failed(Status),
}

/// Between envelopes, with nothing of the next one read.
pub(super) const IDLE: State = State::Header {
    bytes: [0; HEADER_LEN],
    filled: 0,
};

impl State {
    /// Takes the state out, leaving [`IDLE`].
    pub(super) fn take(&mut self) -> State {
        mem::replace(self, IDLE)
    }

    /// Whether the body may end here with `unread` bytes pushed but not
    /// parsed: only between envelopes, or after the trailers, with none.
    pub(super) fn at_end(&self, unread: usize) -> Result<(), Status> {
        match self {
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
            State::Gated { .. } => Err(Status::internal(
                "body ended while a message waited for the receive budget",
            )),
        }
    }
}

#[cold]
fn ended_inside(header: EnvelopeHeader, remaining: usize) -> Status {
    let expected = header.len() as usize;
    Status::internal(format!(
        "protocol error: body ended inside a message ({} of {expected} bytes)",
        expected - remaining
    ))
}
