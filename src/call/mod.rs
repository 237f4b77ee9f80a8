//! What a server or client adapter wraps around one call's bodies so that a
//! correct peer keeps its connection and its deadline:
//!
//! - [`RequestScope`] and [`ScopedCall`]: a request body's frames are taken
//!   out of the transport as they arrive (bounded), once a call may leave
//!   them unread, so h2's per-connection budget for small DATA frames is
//!   given back at the rate the peer sends, not the rate a handler reads;
//! - [`ServerResponse`] and [`ClientDeadline`]: a streaming call ends with
//!   `DEADLINE_EXCEEDED` when its `grpc-timeout` passes; the server's also
//!   drives the read-ahead and tells the call's record what it sent.
//!
//! Framework-free: the adapters make the timers and plug the bodies in.

mod client;
mod deadline;
mod message_bytes;
mod read_ahead;
mod request_scope;
mod server;

pub(crate) use client::{AtDeadline, ClientCall, request_headers};
#[cfg(feature = "volo")]
pub(crate) use deadline::ClientDeadline;
pub(crate) use deadline::Timer;
#[cfg(all(feature = "opentelemetry", any(feature = "tonic", feature = "volo")))]
pub(crate) use deadline::timeout_from_headers;
pub(crate) use deadline::{ServerResponse, timer_for};
#[cfg(feature = "opentelemetry")]
pub(crate) use message_bytes::MessageBytes;
#[cfg(feature = "volo")]
pub(crate) use read_ahead::BoxError;
#[cfg(feature = "tonic")]
pub(crate) use read_ahead::Pump;
#[cfg(all(feature = "volo", feature = "opentelemetry"))]
pub(crate) use request_scope::take_response_record;
#[cfg(feature = "volo")]
pub(crate) use request_scope::{Installed, request_body};
pub(crate) use request_scope::{
    Rendezvous, RequestScope, ScopeSlots, ScopedCall, Slot, rearm_request, request_scope_slots,
};
#[cfg(feature = "tonic")]
pub(crate) use server::RequestHead;
pub(crate) use server::{read_request_head, refused};

/// What a server answers (`INTERNAL`) to a unary or server-streaming request
/// without a message: volo-grpc's and stock tonic's words.
#[cfg(feature = "tonic")]
pub(crate) const MISSING_REQUEST_MESSAGE: &str = "Missing request message.";

/// What a client reports (`INTERNAL`) for a unary call answered `OK`
/// without a message: volo-grpc's and stock tonic's words.
#[cfg(feature = "tonic")]
pub(crate) const MISSING_RESPONSE_MESSAGE: &str = "Missing response message.";

/// What a server answers (`INTERNAL`, as grpc-go does) to a unary or
/// server-streaming request that carries a second message.
pub(crate) const SECOND_REQUEST_MESSAGE: &str = "a unary request carried more than one message";
