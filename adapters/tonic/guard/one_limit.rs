//! One call that sets a guard's limits and tonic's from the same `Limits`.
//!
//! tonic enforces its own receive limit (`max_decoding_message_size`, 4 MiB
//! unless set) behind the guard's. Set apart, the two disagree: a message
//! between them is refused by one side only, and when tonic's is the lower
//! one the refusal is tonic's (which a server guard restates as its own, but
//! a client guard, below tonic's decoder, cannot). Generated servers and clients take their limits
//! through inherent methods that no trait names, so a macro makes the one
//! call: it reads the limits from the guard layer and hands them to tonic
//! (`max_decoding_message_size` and `max_encoding_message_size`), so the
//! guard, which sees every message first, is the one that refuses.

/// A guarded generated tonic server whose tonic limits are the guard's.
///
/// `guarded_server!(layer, server)` takes a [`RequestGuardLayer`] and a
/// generated server (`EchoServer::new(...)`, with any of its builder calls),
/// sets the server's `max_decoding_message_size` to the layer's receive limit
/// and `max_encoding_message_size` to its send limit, and returns the server
/// wrapped in the guard: a [`RequestGuard`] that goes into
/// `Server::builder().add_service(...)` as the server itself would.
///
/// ```
/// # mod pb {
/// #     // What tonic-prost-build generates for a service, reduced to what
/// #     // the macro calls.
/// #     #[derive(Clone)]
/// #     pub struct EchoServer { pub decoding: usize, pub encoding: usize }
/// #     impl EchoServer {
/// #         pub fn new() -> Self { Self { decoding: 4 << 20, encoding: usize::MAX } }
/// #         pub fn max_decoding_message_size(mut self, limit: usize) -> Self { self.decoding = limit; self }
/// #         pub fn max_encoding_message_size(mut self, limit: usize) -> Self { self.encoding = limit; self }
/// #     }
/// # }
/// # use pb::EchoServer;
/// use grpc_stream_codec::Limits;
/// use grpc_stream_codec::tonic::guard::{RequestGuardLayer, guarded_server};
///
/// let limits = Limits::new()
///     .with_max_receive(8 * 1024 * 1024)
///     .with_max_send(16 * 1024 * 1024);
/// let service = guarded_server!(RequestGuardLayer::new().with_limits(limits), EchoServer::new());
/// // Server::builder().add_service(service)
/// # assert_eq!(service.inner().decoding, 8 * 1024 * 1024);
/// # assert_eq!(service.inner().encoding, 16 * 1024 * 1024);
/// ```
///
/// [`RequestGuardLayer`]: crate::tonic::guard::RequestGuardLayer
/// [`RequestGuard`]: crate::tonic::guard::RequestGuard
#[doc(hidden)]
#[macro_export]
macro_rules! __tonic_guarded_server {
    ($layer:expr, $server:expr $(,)?) => {{
        let layer: $crate::tonic::guard::RequestGuardLayer = $layer;
        let limits = layer.limits();
        layer.wrap(
            $server
                .max_decoding_message_size(limits.max_receive())
                .max_encoding_message_size(limits.max_send()),
        )
    }};
}

/// A generated tonic client on a guarded channel, with the client's tonic
/// limits set to the guard's.
///
/// `guarded_client!(layer, new_client, channel)` wraps `channel` in the
/// [`ResponseGuardLayer`], builds the client with `new_client` (the generated
/// `EchoClient::new`, or any function from the guarded channel to a client),
/// and sets the client's `max_decoding_message_size` to the layer's receive
/// limit and `max_encoding_message_size` to its send limit.
///
/// ```
/// # mod pb {
/// #     pub struct EchoClient<T> { pub channel: T, pub decoding: usize, pub encoding: usize }
/// #     impl<T> EchoClient<T> {
/// #         pub fn new(channel: T) -> Self { Self { channel, decoding: 4 << 20, encoding: usize::MAX } }
/// #         pub fn max_decoding_message_size(mut self, limit: usize) -> Self { self.decoding = limit; self }
/// #         pub fn max_encoding_message_size(mut self, limit: usize) -> Self { self.encoding = limit; self }
/// #     }
/// # }
/// # use pb::EchoClient;
/// use grpc_stream_codec::Limits;
/// use grpc_stream_codec::tonic::guard::{ResponseGuardLayer, guarded_client};
///
/// # let channel = ();
/// let limits = Limits::new().with_max_receive(8 * 1024 * 1024);
/// let client = guarded_client!(
///     ResponseGuardLayer::new().with_limits(limits),
///     EchoClient::new,
///     channel
/// );
/// # assert_eq!(client.decoding, 8 * 1024 * 1024);
/// ```
///
/// [`ResponseGuardLayer`]: crate::tonic::guard::ResponseGuardLayer
#[doc(hidden)]
#[macro_export]
macro_rules! __tonic_guarded_client {
    ($layer:expr, $new_client:expr, $channel:expr $(,)?) => {{
        let layer: $crate::tonic::guard::ResponseGuardLayer = $layer;
        let limits = layer.limits();
        ($new_client)(layer.wrap($channel))
            .max_decoding_message_size(limits.max_receive())
            .max_encoding_message_size(limits.max_send())
    }};
}
