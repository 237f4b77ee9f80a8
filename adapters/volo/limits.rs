//! Limits for the code volo-build generates, which
//! constructs every [`RecvStream`](super::RecvStream) and the encoder's
//! body (`encode.rs`) itself and so cannot be handed a per-call
//! configuration.
//!
//! Three ways to set a stream's limits, the first that applies wins:
//!
//! 1. per stream: [`RecvStream::with_limits`](super::RecvStream::with_limits)
//!    before reading (for streams a handler receives);
//! 2. per server or client: [`LimitsLayer`], which installs the limits for
//!    the streams and bodies created while it polls its inner service;
//! 3. per process: [`set_default_limits`].

use std::cell::RefCell;
use std::sync::atomic::{AtomicUsize, Ordering};

use motore::layer::Layer;

use super::scoped::{self, Scoped};
use super::service::wrap_service;
use crate::envelope::{DEFAULT_MAX_RECEIVE_SIZE, Limits};

thread_local! {
    static SCOPED: RefCell<Option<Limits>> = const { RefCell::new(None) };
}

static MAX_RECEIVE: AtomicUsize = AtomicUsize::new(DEFAULT_MAX_RECEIVE_SIZE);
static MAX_SEND: AtomicUsize = AtomicUsize::new(usize::MAX);

/// Sets the limits used by every `RecvStream` and `encode` body created
/// from now on (default: receive 4 MiB, send unlimited), except under a
/// [`LimitsLayer`].
///
/// A single stream can still override its receive limit with
/// [`RecvStream::with_limits`](super::RecvStream::with_limits) before
/// reading from it.
///
/// ```
/// use grpc_stream_codec::envelope::Limits;
/// use grpc_stream_codec::volo::{default_limits, set_default_limits};
///
/// set_default_limits(Limits::new().with_max_receive(16 << 20));
/// assert_eq!(default_limits().max_receive(), 16 << 20);
/// # set_default_limits(Limits::default());
/// ```
pub fn set_default_limits(limits: Limits) {
    MAX_RECEIVE.store(limits.max_receive(), Ordering::Relaxed);
    MAX_SEND.store(limits.max_send(), Ordering::Relaxed);
}

/// The limits new streams get outside a [`LimitsLayer`]; see
/// `set_default_limits`.
pub fn default_limits() -> Limits {
    Limits::new()
        .with_max_receive(MAX_RECEIVE.load(Ordering::Relaxed))
        .with_max_send(MAX_SEND.load(Ordering::Relaxed))
}

/// The limits for a stream or body created now: the enclosing
/// [`LimitsLayer`]'s, else the process default.
pub(super) fn limits_for_new_stream() -> Limits {
    scoped::current(&SCOPED).unwrap_or_else(default_limits)
}

/// A volo-grpc layer (server or client) that gives every stream received and
/// every body sent under it its own [`Limits`], instead of the process-wide
/// [`set_default_limits`]: request streams and responses on a server,
/// responses and requests on a client.
///
/// So one process can hold clients with different receive limits, and a
/// server with a limit of its own:
///
/// ```no_run
/// use grpc_stream_codec::envelope::Limits;
/// use grpc_stream_codec::volo::{ClientCompressionLayer, LimitsLayer};
///
/// let small = LimitsLayer::new(Limits::new().with_max_receive(64 << 10));
/// let large = LimitsLayer::new(Limits::new().with_max_receive(64 << 20));
/// // Clients, with `layer_inner` so the layer wraps the transport:
/// //   EchoClientBuilder::new("echo").address(addr)
/// //       .layer_inner(ClientCompressionLayer::default()).layer_inner(small).build()
/// // A server:
/// //   volo_grpc::server::Server::new().layer_front(large).add_service(..)
/// # let _ = (small, large, ClientCompressionLayer::default());
/// ```
///
/// A message above the receive limit fails its stream with
/// `resource_exhausted` and `message size N exceeds limit M`, before
/// anything of its size is allocated; one above the send limit ends the
/// body sending it with `resource_exhausted`.
///
/// It works by installing the limits in a thread-local while it polls the
/// service it wraps, which is where volo-grpc's generated code creates the
/// receiving streams and the bodies it sends.
#[derive(Clone, Copy, Debug)]
pub struct LimitsLayer {
    limits: Limits,
}

impl LimitsLayer {
    /// A layer giving streams and bodies `limits`.
    pub fn new(limits: Limits) -> Self {
        LimitsLayer { limits }
    }
}

impl<S> Layer<S> for LimitsLayer {
    type Service = LimitsService<S>;

    fn layer(self, inner: S) -> LimitsService<S> {
        LimitsService {
            inner,
            limits: self.limits,
        }
    }
}

/// The service of [`LimitsLayer`].
#[derive(Clone, Debug)]
pub struct LimitsService<S> {
    inner: S,
    limits: Limits,
}

wrap_service!(LimitsService, |this, cx, req| {
    Scoped::new(&SCOPED, this.limits, this.inner.call(cx, req)).await
});
