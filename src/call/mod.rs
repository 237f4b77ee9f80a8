//! What a server or client adapter wraps around one call's bodies so that a
//! correct peer keeps its connection and its deadline:
//!
//! - [`read_ahead`]: a request body's frames are taken out of the transport
//!   as they arrive (bounded), so h2's per-connection budget for small DATA
//!   frames is given back at the rate the peer sends, not the rate a handler
//!   reads;
//! - [`ServerDeadline`] and [`ClientDeadline`]: a streaming call ends with
//!   `DEADLINE_EXCEEDED` when its `grpc-timeout` passes.
//!
//! Framework-free: the adapters make the timers and plug the bodies in.

mod client;
mod deadline;
mod read_ahead;

pub(crate) use client::{AtDeadline, ClientCall, request_headers};
#[cfg(feature = "volo")]
pub(crate) use deadline::ClientDeadline;
#[cfg(feature = "volo")]
pub(crate) use deadline::Timer;
#[cfg(feature = "volo")]
pub(crate) use deadline::{GRPC_TIMEOUT, parse_timeout};
pub(crate) use deadline::{Pumped, ServerDeadline, deadline_timer};
#[cfg(feature = "volo")]
pub(crate) use read_ahead::BoxError;
pub(crate) use read_ahead::{Pump, read_ahead};

/// What a server answers (`INTERNAL`, as grpc-go does) to a unary or
/// server-streaming request that carries a second message.
pub(crate) const SECOND_REQUEST_MESSAGE: &str = "a unary request carried more than one message";
