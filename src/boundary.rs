//! Tracking envelope boundaries across transport frames without copying
//! them, for code that forwards a body unchanged but must still enforce the
//! envelope rules (limit, flags, truncation).
//!
//! ```
//! use grpc_stream_codec::boundary::EnvelopeTracker;
//! use grpc_stream_codec::Code;
//!
//! let mut tracker = EnvelopeTracker::new(1024);
//! tracker.observe(&[0, 0, 0, 0, 3, b'a'])?; // header + 1 of 3 payload bytes
//! tracker.observe(b"bc")?;                   // the rest
//! tracker.finish()?;                         // ended on a boundary
//!
//! let mut tracker = EnvelopeTracker::new(1024);
//! let err = tracker.observe(&[0, 0, 0, 0x10, 0]).unwrap_err(); // declares 4096 bytes
//! assert_eq!(err.code(), Code::ResourceExhausted);
//! # Ok::<(), grpc_stream_codec::Status>(())
//! ```

use crate::envelope::{EnvelopeHeader, HEADER_LEN, check_size};
use crate::status::{Code, Status};

/// The largest gRPC-Web trailers frame accepted, whatever the message limit.
pub const MAX_TRAILERS_FRAME: usize = 1024 * 1024;

/// Follows a body's envelopes frame by frame, looking only at headers.
///
/// It validates every header as soon as its five bytes have been seen
/// (reserved flag bits are `internal`; a declared length above the limit is
/// `resource_exhausted`), skips payload bytes by counting, and at the end of
/// the body reports an envelope cut short. After an error it keeps
/// returning that error.
#[derive(Clone, Debug)]
pub struct EnvelopeTracker {
    max_message: usize,
    state: State,
}

#[derive(Clone, Debug)]
enum State {
    /// Collecting a header; `filled` of its bytes seen so far.
    Header {
        bytes: [u8; HEADER_LEN],
        filled: usize,
    },
    /// Inside a payload.
    Payload {
        declared: usize,
        remaining: usize,
        trailers: bool,
    },
    /// A gRPC-Web trailers frame ended: nothing may follow.
    AfterTrailers,
    Failed(Status),
}

impl EnvelopeTracker {
    /// A tracker enforcing `max_message` bytes per message.
    pub fn new(max_message: usize) -> Self {
        Self {
            max_message,
            state: State::Header {
                bytes: [0; HEADER_LEN],
                filled: 0,
            },
        }
    }

    /// Whether the bytes seen so far end exactly on an envelope boundary.
    pub fn at_boundary(&self) -> bool {
        matches!(
            self.state,
            State::Header { filled: 0, .. } | State::AfterTrailers
        )
    }

    /// Looks at the next frame of the body.
    pub fn observe(&mut self, mut frame: &[u8]) -> Result<(), Status> {
        while !frame.is_empty() {
            match &mut self.state {
                State::Failed(status) => return Err(status.clone()),
                State::AfterTrailers => {
                    return self.fail(Status::new(
                        Code::Internal,
                        "protocol error: data after the gRPC-Web trailers frame",
                    ));
                }
                State::Header { bytes, filled } => {
                    let take = (HEADER_LEN - *filled).min(frame.len());
                    bytes[*filled..*filled + take].copy_from_slice(&frame[..take]);
                    *filled += take;
                    frame = &frame[take..];
                    if *filled == HEADER_LEN {
                        let bytes = *bytes;
                        self.start_payload(bytes)?;
                    }
                }
                State::Payload {
                    remaining,
                    trailers,
                    ..
                } => {
                    let take = (*remaining).min(frame.len());
                    *remaining -= take;
                    frame = &frame[take..];
                    if *remaining == 0 {
                        self.state = if *trailers {
                            State::AfterTrailers
                        } else {
                            State::Header {
                                bytes: [0; HEADER_LEN],
                                filled: 0,
                            }
                        };
                    }
                }
            }
        }
        // A trailers frame with an empty payload ends as soon as its header does.
        match &self.state {
            State::Failed(status) => Err(status.clone()),
            _ => Ok(()),
        }
    }

    fn start_payload(&mut self, bytes: [u8; HEADER_LEN]) -> Result<(), Status> {
        let header = match EnvelopeHeader::parse(bytes) {
            Ok(header) => header,
            Err(status) => return self.fail(status),
        };
        let declared = header.len() as usize;
        let limit = if header.is_trailers() {
            MAX_TRAILERS_FRAME
        } else {
            self.max_message
        };
        if let Err(status) = check_size(declared, limit) {
            return self.fail(status);
        }
        self.state = match (declared, header.is_trailers()) {
            (0, true) => State::AfterTrailers,
            (0, false) => State::Header {
                bytes: [0; HEADER_LEN],
                filled: 0,
            },
            (_, trailers) => State::Payload {
                declared,
                remaining: declared,
                trailers,
            },
        };
        Ok(())
    }

    /// Called when the body ends: an envelope cut short is `internal`.
    pub fn finish(&mut self) -> Result<(), Status> {
        let status = match &self.state {
            State::Failed(status) => return Err(status.clone()),
            State::Header { filled: 0, .. } | State::AfterTrailers => return Ok(()),
            State::Header { filled, .. } => Status::new(
                Code::Internal,
                format!("body ended inside an envelope header ({filled} of {HEADER_LEN} bytes)"),
            ),
            State::Payload {
                declared,
                remaining,
                ..
            } => Status::new(
                Code::Internal,
                format!(
                    "body ended inside a message ({} of {declared} bytes received)",
                    declared - remaining
                ),
            ),
        };
        self.fail(status)
    }

    fn fail(&mut self, status: Status) -> Result<(), Status> {
        self.state = State::Failed(status.clone());
        Err(status)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn envelope(flags: u8, payload: &[u8]) -> Vec<u8> {
        let mut out = vec![flags];
        out.extend_from_slice(&(payload.len() as u32).to_be_bytes());
        out.extend_from_slice(payload);
        out
    }

    #[test]
    fn any_split_of_valid_envelopes_ends_on_a_boundary() {
        let mut body = envelope(0, b"hello");
        body.extend(envelope(1, &[9; 300]));
        body.extend(envelope(0, b""));
        for chunk in [1, 2, 3, 5, 7, 64, body.len()] {
            let mut tracker = EnvelopeTracker::new(1024);
            for frame in body.chunks(chunk) {
                tracker.observe(frame).unwrap();
            }
            assert!(tracker.at_boundary(), "chunk {chunk}");
            tracker.finish().unwrap();
        }
    }

    #[test]
    fn over_limit_fails_on_the_header() {
        let mut tracker = EnvelopeTracker::new(4 * 1024 * 1024);
        let err = tracker.observe(&[0, 0xff, 0xff, 0xff, 0xff]).unwrap_err();
        assert_eq!(err.code(), Code::ResourceExhausted);
        assert_eq!(
            err.message(),
            "message size 4294967295 exceeds limit 4194304"
        );
        // Finished: the next bytes are never read as a header.
        assert_eq!(
            tracker.observe(&[0; 5]).unwrap_err().code(),
            Code::ResourceExhausted
        );
        assert!(tracker.finish().is_err());
    }

    #[test]
    fn reserved_flag_bits_are_internal() {
        let mut tracker = EnvelopeTracker::new(1024);
        let err = tracker.observe(&envelope(0x02, b"x")).unwrap_err();
        assert_eq!(err.code(), Code::Internal);
    }

    #[test]
    fn truncation_is_internal() {
        let mut tracker = EnvelopeTracker::new(1024);
        tracker.observe(&[0, 0, 0]).unwrap();
        let err = tracker.finish().unwrap_err();
        assert_eq!(err.code(), Code::Internal);
        assert_eq!(
            err.message(),
            "body ended inside an envelope header (3 of 5 bytes)"
        );

        let mut tracker = EnvelopeTracker::new(1024);
        tracker.observe(&[0, 0, 0, 0, 16]).unwrap();
        let err = tracker.finish().unwrap_err();
        assert_eq!(
            err.message(),
            "body ended inside a message (0 of 16 bytes received)"
        );
    }

    #[test]
    fn trailers_frames_pass_and_nothing_may_follow() {
        let trailers = envelope(0x80, b"grpc-status: 0\r\n");
        let mut tracker = EnvelopeTracker::new(4);
        tracker.observe(&envelope(0, b"ok")).unwrap();
        // The trailers frame is larger than the message limit: still fine.
        tracker.observe(&trailers).unwrap();
        tracker.finish().unwrap();
        let err = tracker.observe(&envelope(0, b"late")).unwrap_err();
        assert_eq!(err.code(), Code::Internal);

        let mut tracker = EnvelopeTracker::new(4);
        let err = tracker
            .observe(&[0x80, 0x00, 0x10, 0x00, 0x01])
            .unwrap_err();
        assert_eq!(err.code(), Code::ResourceExhausted);
    }
}
