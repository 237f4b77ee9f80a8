//! What a volo-grpc client call tells the codec calls generated code makes
//! inside it: the compression to send with, and the response headers the
//! response's [`RecvStream`](super::RecvStream) decodes by.
//!
//! Both go through a thread-local set only while the call is polled (see
//! [`scoped`](super::scoped)), so they reach exactly the codec calls of that
//! one RPC. The headers are handed over by move: the stream takes them out
//! of the slot on its first poll.

use std::cell::RefCell;
use std::sync::{Arc, Mutex, PoisonError};

use http::HeaderMap;

use super::scoped;
use crate::compression::{Compression, GRPC_ENCODING};
use crate::status::GRPC_STATUS;

/// The response headers a decoder needs, filled in once the transport has
/// returned them, taken by the response's `RecvStream` on its first poll
/// (which comes after).
#[derive(Clone, Debug, Default)]
pub(super) struct ResponseHeaders(Arc<Mutex<Option<HeaderMap>>>);

impl ResponseHeaders {
    /// Keeps what the decoder needs of `headers`: all of them for a
    /// trailers-only response (its status and metadata are the call's
    /// outcome), otherwise only `grpc-encoding`. The first call wins.
    pub(super) fn set(&self, headers: &HeaderMap) {
        let mut slot = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if slot.is_some() {
            return;
        }
        let kept = if headers.contains_key(GRPC_STATUS) {
            headers.clone()
        } else {
            let mut kept = HeaderMap::new();
            if let Some(value) = headers.get(GRPC_ENCODING) {
                kept.insert(GRPC_ENCODING, value.clone());
            }
            kept
        };
        *slot = Some(kept);
    }

    /// Whether a response stream holds this slot (the call's creator keeps
    /// one handle; every other is a stream's).
    pub(super) fn is_awaited(&self) -> bool {
        Arc::strong_count(&self.0) > 1
    }

    /// The response headers that matter to the decoder (see `set`), moved
    /// out; empty if nobody filled them in.
    pub(super) fn take(&self) -> HeaderMap {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
            .unwrap_or_default()
    }
}

/// What a client call tells the codec calls made while it is polled.
#[derive(Clone, Debug)]
pub(super) struct CallScope {
    /// The compression requests are sent with.
    pub(super) send: Option<Compression>,
    /// Where the response stream finds the response headers.
    pub(super) response: Option<ResponseHeaders>,
}

thread_local! {
    /// The scope of the client call being polled on this thread.
    pub(super) static SCOPE: RefCell<Option<CallScope>> = const { RefCell::new(None) };
}

/// The compression the enclosing [`ClientCompressionLayer`](super::ClientCompressionLayer) asks requests
/// to be sent with, if the code runs inside one's call.
pub(super) fn scoped_send() -> Option<Compression> {
    scoped::current(&SCOPE).and_then(|scope| scope.send)
}

/// Where the enclosing [`ClientCompressionLayer`](super::ClientCompressionLayer) will put the response's
/// `grpc-encoding`, if the code runs inside one's call and it accepts
/// compressed responses.
pub(super) fn scoped_response_headers() -> Option<ResponseHeaders> {
    scoped::current(&SCOPE).and_then(|scope| scope.response)
}

/// Runs `make` (the generated `RecvEntryMessage::from_body`, which creates
/// the response's `RecvStream`) with `headers` as the response headers the
/// stream reads on its first poll; the enclosing scope's send compression,
/// if any, stays.
pub(super) fn with_response_headers<R>(headers: &HeaderMap, make: impl FnOnce() -> R) -> R {
    let slot = ResponseHeaders::default();
    slot.set(headers);
    let scope = CallScope {
        send: scoped_send(),
        response: Some(slot),
    };
    scoped::with(&SCOPE, scope, make)
}
