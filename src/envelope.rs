//! The gRPC length-prefixed message envelope: one flag byte and a big-endian
//! `u32` length, followed by that many payload bytes.
//!
//! ```
//! use grpc_stream_codec::envelope::{EnvelopeHeader, HEADER_LEN};
//!
//! let header = EnvelopeHeader::message(true, 300);
//! let bytes = header.to_bytes();
//! assert_eq!(bytes.len(), HEADER_LEN);
//! assert_eq!(EnvelopeHeader::parse(bytes).unwrap(), header);
//! ```

use crate::status::{Code, Status};

/// Length of the envelope header: one flag byte and four length bytes.
pub const HEADER_LEN: usize = 5;

/// Flag bit set when the payload is compressed with the stream's `grpc-encoding`.
pub const FLAG_COMPRESSED: u8 = 0x01;

/// Flag bit set on a gRPC-Web frame that carries trailers instead of a message.
pub const FLAG_TRAILERS: u8 = 0x80;

/// Default receive limit: 4 MiB, the limit every mainstream gRPC implementation uses.
pub const DEFAULT_MAX_RECEIVE_SIZE: usize = 4 * 1024 * 1024;

/// A parsed, validated envelope header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct EnvelopeHeader {
    flags: u8,
    len: u32,
}

impl EnvelopeHeader {
    /// A header for a message frame, compressed or not.
    pub const fn message(compressed: bool, len: u32) -> Self {
        let flags = if compressed { FLAG_COMPRESSED } else { 0 };
        Self { flags, len }
    }

    /// A header for a gRPC-Web trailers frame.
    pub const fn trailers(len: u32) -> Self {
        Self {
            flags: FLAG_TRAILERS,
            len,
        }
    }

    /// Parses and validates five header bytes.
    ///
    /// Any flag bit other than [`FLAG_COMPRESSED`] and [`FLAG_TRAILERS`] is a
    /// protocol error and yields an `internal` status.
    pub fn parse(bytes: [u8; HEADER_LEN]) -> Result<Self, Status> {
        let flags = bytes[0];
        if flags & !(FLAG_COMPRESSED | FLAG_TRAILERS) != 0 {
            return Err(Status::new(
                Code::Internal,
                format!("protocol error: invalid envelope flags 0x{flags:02x}"),
            ));
        }
        let len = u32::from_be_bytes([bytes[1], bytes[2], bytes[3], bytes[4]]);
        Ok(Self { flags, len })
    }

    /// The five bytes of this header as they go on the wire.
    pub const fn to_bytes(self) -> [u8; HEADER_LEN] {
        let len = self.len.to_be_bytes();
        [self.flags, len[0], len[1], len[2], len[3]]
    }

    /// The raw flag byte.
    pub const fn flags(self) -> u8 {
        self.flags
    }

    /// The declared payload length.
    pub const fn len(self) -> u32 {
        self.len
    }

    /// Whether the declared payload is empty.
    pub const fn is_empty(self) -> bool {
        self.len == 0
    }

    /// Whether the payload is compressed.
    pub const fn is_compressed(self) -> bool {
        self.flags & FLAG_COMPRESSED != 0
    }

    /// Whether this is a gRPC-Web trailers frame.
    pub const fn is_trailers(self) -> bool {
        self.flags & FLAG_TRAILERS != 0
    }
}

/// Message size limits for one direction pair of a stream.
///
/// The receive limit bounds both the declared (wire) length of an incoming
/// message and its size after decompression. The send limit bounds the wire
/// length of an outgoing message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    max_receive: usize,
    max_send: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_receive: DEFAULT_MAX_RECEIVE_SIZE,
            max_send: usize::MAX,
        }
    }
}

impl Limits {
    /// Receive limit 4 MiB, send limit unlimited.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the largest message accepted from the peer, in bytes.
    pub fn with_max_receive(mut self, limit: usize) -> Self {
        self.max_receive = limit;
        self
    }

    /// Sets the largest message sent to the peer, in bytes.
    pub fn with_max_send(mut self, limit: usize) -> Self {
        self.max_send = limit;
        self
    }

    /// The receive limit in bytes.
    pub fn max_receive(&self) -> usize {
        self.max_receive
    }

    /// The send limit in bytes (`usize::MAX` when unlimited).
    pub fn max_send(&self) -> usize {
        self.max_send
    }

    /// Checks an incoming message size against the receive limit.
    pub fn check_receive(&self, size: usize) -> Result<(), Status> {
        check_size(size, self.max_receive)
    }

    /// Checks an outgoing message size against the send limit.
    pub fn check_send(&self, size: usize) -> Result<(), Status> {
        check_size(size, self.max_send)
    }
}

/// Largest gRPC-Web trailers frame accepted, checked on its header and
/// independent of the message limit.
pub const MAX_TRAILERS_SIZE: usize = 1024 * 1024;

/// Checks the declared length of a gRPC-Web trailers frame.
pub(crate) fn check_trailers_size(size: usize) -> Result<(), Status> {
    if size > MAX_TRAILERS_SIZE {
        Err(Status::new(
            Code::ResourceExhausted,
            format!("gRPC-Web trailers size {size} exceeds limit {MAX_TRAILERS_SIZE}"),
        ))
    } else {
        Ok(())
    }
}

/// Fails with [`too_large`] when `size` exceeds `limit`.
#[inline]
pub(crate) fn check_size(size: usize, limit: usize) -> Result<(), Status> {
    if size > limit {
        Err(too_large(size, limit))
    } else {
        Ok(())
    }
}

/// The one error shape for an oversized message:
/// `resource_exhausted` with `message size N exceeds limit M`.
#[cold]
pub(crate) fn too_large(size: usize, limit: usize) -> Status {
    Status::new(
        Code::ResourceExhausted,
        format!("message size {size} exceeds limit {limit}"),
    )
}
