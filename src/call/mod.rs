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

mod deadline;
mod read_ahead;

#[cfg(feature = "volo")]
pub(crate) use deadline::Timer;
#[cfg(feature = "volo")]
pub(crate) use deadline::deadline_or;
pub(crate) use deadline::{ClientDeadline, Pumped, ServerDeadline, deadline_timer};
#[cfg(feature = "tonic")]
pub(crate) use deadline::{deadline_exceeded, deadline_passed};
#[cfg(feature = "volo")]
pub(crate) use read_ahead::BoxError;
pub(crate) use read_ahead::{Pump, read_ahead};

/// What a server answers (`INTERNAL`, as grpc-go does) to a unary or
/// server-streaming request that carries a second message.
pub(crate) const SECOND_REQUEST_MESSAGE: &str = "a unary request carried more than one message";
