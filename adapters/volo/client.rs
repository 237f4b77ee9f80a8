//! The client the build hook gives generated volo-grpc clients: volo-grpc's
//! `ClientBuilder` with a transport that reads what the peer sends without
//! panicking, and that hands the response headers to the adapter's
//! [`RecvStream`](super::RecvStream).
//!
//! volo-grpc 0.12.2's client transport and its metadata service parse the
//! response headers before any layer sees them, and three peer inputs panic
//! the calling task there (or abort the process under `panic = "abort"`):
//!
//! - any binary (`-bin`) response header (`client/meta.rs`, `unreachable!()`);
//! - a trailers-only response whose `grpc-status-details-bin` is not base64
//!   (`status.rs`, `.expect` in `Status::from_header_map`).
//!
//! Both run below every layer a user can add, so the hook rewrites
//! `::volo_grpc::client::ClientBuilder` in the generated `*ClientBuilder::new`
//! to [`ClientBuilder`], which builds volo-grpc's client (every layer, load
//! balancer and option as before) with one layer put innermost at `build()`:
//! it replaces volo-grpc's transport with the adapter's, which
//!
//! - answers a trailers-only response with the status this crate reads
//!   from its headers (an invalid `grpc-status-details-bin` is `internal`),
//! - refuses a binary response header that is not base64 with `internal`
//!   (as grpc-go does) and keeps valid ones in the response's metadata, where
//!   `metadata().get_bin(..)` decodes them,
//! - gives the response's headers to the adapter's `RecvStream`, so a
//!   trailers-only `OK` (grpcio's and grpc-go's answer to a call with no
//!   messages) ends the stream `OK` with no layer added by the user,
//!
//! and otherwise does what volo-grpc's does (same HTTP/2 settings, timeouts,
//! compression headers, and volo-grpc's own metadata service around it).
//!
//! Limits: it dials IP addresses only (a Unix-socket `Address` fails the
//! call with `unimplemented`); TLS is not forwarded
//! ([`ClientBuilder::into_volo`] gives volo-grpc's builder back); settings are
//! taken from the builder, so a `CallOpt` that changes a call's compression
//! or connect/read/write timeouts is not seen (volo-grpc keeps those fields
//! private).

use std::time::Duration;

use motore::layer::{Layer, Stack};
use motore::service::Service;
use volo::FastStr;
use volo::net::Address;
use volo_grpc::codec::compression::CompressionEncoding as VoloEncoding;
use volo_grpc::context::ClientContext;
use volo_grpc::{RecvEntryMessage, Request, Response, SendEntryMessage};

use super::client_transport::{ShieldedTransport, TransportLayer, TransportSettings};

/// volo-grpc's `ClientBuilder` as generated clients get it after the
/// [build hook](super::build): the same methods, and a transport that no
/// response header can panic: volo-grpc 0.12.2 panics on any binary
/// response header and on a trailers-only `grpc-status-details-bin` that is
/// not base64; this transport answers those with a status, and hands the
/// response headers to [`RecvStream`](super::RecvStream).
///
/// Generated code creates it (`EchoClientBuilder::new("echo")`); nothing in
/// a user's code names it.
pub struct ClientBuilder<IL, OL, C, LB, T, U> {
    inner: volo_grpc::client::ClientBuilder<IL, OL, C, LB, T, U>,
    settings: TransportSettings,
}

impl<C, T, U>
    ClientBuilder<
        motore::layer::Identity,
        motore::layer::Identity,
        C,
        volo_grpc::layer::loadbalance::LbConfig<
            volo::loadbalance::random::WeightedRandomBalance<FastStr>,
            volo_grpc::client::dns::DnsResolver,
        >,
        T,
        U,
    >
{
    /// `volo_grpc::client::ClientBuilder::new`, as generated code calls it.
    pub fn new(service_client: C, service_name: impl AsRef<str>) -> Self {
        ClientBuilder {
            inner: volo_grpc::client::ClientBuilder::new(service_client, service_name),
            settings: TransportSettings::default(),
        }
    }
}

/// Methods that return the builder unchanged: forwarded (the argument
/// converted as volo-grpc converts it), and recorded where the transport
/// needs the value.
macro_rules! forward {
    ($($(#[$doc:meta])* fn $name:ident($arg:ident: $ty:ty) $(=> $field:ident $(= $wrap:ident)?)?;)*) => {
        $(
            $(#[$doc])*
            pub fn $name(mut self, $arg: impl Into<$ty>) -> Self {
                let $arg: $ty = $arg.into();
                $( self.settings.$field = $($wrap)?($arg.clone()); )?
                self.inner = self.inner.$name($arg);
                self
            }
        )*
    };
}

/// Methods that change a type parameter: forwarded.
macro_rules! forward_typed {
    ($($(#[$doc:meta])* fn $name:ident<$new:ident>($arg:ident: $ty:ty) -> <$($out:ty),*>;)*) => {
        $(
            $(#[$doc])*
            pub fn $name<$new>(self, $arg: $ty) -> ClientBuilder<$($out),*> {
                ClientBuilder {
                    inner: self.inner.$name($arg),
                    settings: self.settings,
                }
            }
        )*
    };
}

impl<IL, OL, C, LB, T, U, DISC>
    ClientBuilder<IL, OL, C, volo_grpc::layer::loadbalance::LbConfig<LB, DISC>, T, U>
{
    forward_typed! {
        /// volo-grpc's `load_balance`.
        fn load_balance<NLB>(load_balance: NLB)
            -> <IL, OL, C, volo_grpc::layer::loadbalance::LbConfig<NLB, DISC>, T, U>;
        /// volo-grpc's `discover`.
        fn discover<NDISC>(discover: NDISC)
            -> <IL, OL, C, volo_grpc::layer::loadbalance::LbConfig<LB, NDISC>, T, U>;
    }
}

impl<IL, OL, C, LB, T, U> ClientBuilder<IL, OL, C, LB, T, U> {
    forward! {
        /// volo-grpc's `rpc_timeout`.
        fn rpc_timeout(timeout: Option<Duration>);
        /// volo-grpc's `http2_init_stream_window_size`.
        fn http2_init_stream_window_size(size: u32) => stream_window;
        /// volo-grpc's `http2_init_connection_window_size`.
        fn http2_init_connection_window_size(size: u32) => connection_window;
        /// volo-grpc's `http2_adaptive_window`.
        fn http2_adaptive_window(enabled: bool) => adaptive_window;
        /// volo-grpc's `http2_max_frame_size`.
        fn http2_max_frame_size(size: u32) => max_frame_size;
        /// volo-grpc's `http2_keepalive_interval`.
        fn http2_keepalive_interval(interval: Option<Duration>) => keepalive_interval;
        /// volo-grpc's `http2_keepalive_timeout`.
        fn http2_keepalive_timeout(timeout: Duration) => keepalive_timeout;
        /// volo-grpc's `http2_keepalive_while_idle`.
        fn http2_keepalive_while_idle(enabled: bool) => keepalive_while_idle;
        /// volo-grpc's `http2_max_concurrent_reset_streams`.
        fn http2_max_concurrent_reset_streams(max: usize) => max_concurrent_reset_streams;
        /// volo-grpc's `http2_max_send_buf_size`.
        fn http2_max_send_buf_size(max: usize) => max_send_buf_size;
        /// volo-grpc's `connect_timeout`.
        fn connect_timeout(timeout: Duration) => connect_timeout = Some;
        /// volo-grpc's `read_timeout`.
        fn read_timeout(timeout: Duration) => read_timeout = Some;
        /// volo-grpc's `write_timeout`.
        fn write_timeout(timeout: Duration) => write_timeout = Some;
        /// volo-grpc's `send_compressions`: the first is used.
        fn send_compressions(config: Vec<VoloEncoding>) => send_compressions;
        /// volo-grpc's `accept_compressions`.
        fn accept_compressions(config: Vec<VoloEncoding>) => accept_compressions = Some;
    }

    /// volo-grpc's `caller_name`.
    pub fn caller_name(mut self, name: impl AsRef<str>) -> Self {
        self.inner = self.inner.caller_name(name);
        self
    }

    /// volo-grpc's own builder, for what this one does not forward (e.g.
    /// `tls_config` when volo-grpc's TLS feature is on): the client it
    /// builds runs on volo-grpc's transport, with the panics and the
    /// trailers-only gap this module's transport closes (add
    /// [`ClientCompressionLayer`](super::ClientCompressionLayer) there).
    pub fn into_volo(self) -> volo_grpc::client::ClientBuilder<IL, OL, C, LB, T, U> {
        self.inner
    }

    /// volo-grpc's `address`: the client skips discovery and load balancing.
    pub fn address<A: Into<Address>>(mut self, target: A) -> Self {
        self.inner = self.inner.address(target);
        self
    }

    forward_typed! {
        /// volo-grpc's `mk_load_balance`.
        fn mk_load_balance<NLB>(mk_load_balance: NLB) -> <IL, OL, C, NLB, T, U>;
        /// volo-grpc's `layer_inner`: `layer` runs after the inner layers
        /// added before it (the transport stays innermost).
        fn layer_inner<Inner>(layer: Inner) -> <Stack<Inner, IL>, OL, C, LB, T, U>;
        /// volo-grpc's `layer_inner_front`.
        fn layer_inner_front<Inner>(layer: Inner) -> <Stack<IL, Inner>, OL, C, LB, T, U>;
        /// volo-grpc's `layer_outer`.
        fn layer_outer<Outer>(layer: Outer) -> <IL, Stack<Outer, OL>, C, LB, T, U>;
        /// volo-grpc's `layer_outer_front`.
        fn layer_outer_front<Outer>(layer: Outer) -> <IL, Stack<OL, Outer>, C, LB, T, U>;
    }
}

impl<IL, OL, C, LB, T, U> ClientBuilder<IL, OL, C, LB, T, U>
where
    C: volo::client::MkClient<
            volo_grpc::Client<
                motore::service::BoxCloneService<
                    ClientContext,
                    Request<T>,
                    Response<U>,
                    volo_grpc::Status,
                >,
            >,
        >,
    LB: volo::loadbalance::MkLbLayer,
    LB::Layer: Layer<IL::Service>,
    <LB::Layer as Layer<IL::Service>>::Service:
        Service<ClientContext, Request<T>, Response = Response<U>> + 'static + Send + Clone + Sync,
    <<LB::Layer as Layer<IL::Service>>::Service as Service<ClientContext, Request<T>>>::Error:
        Into<volo_grpc::Status>,
    IL: Layer<ShieldedTransport<U>>,
    IL::Service:
        Service<ClientContext, Request<T>, Response = Response<U>> + 'static + Send + Clone + Sync,
    <IL::Service as Service<ClientContext, Request<T>>>::Error: Into<volo_grpc::Status>,
    OL:
        Layer<
            motore::service::BoxCloneService<
                ClientContext,
                Request<T>,
                Response<U>,
                <<LB::Layer as Layer<IL::Service>>::Service as Service<
                    ClientContext,
                    Request<T>,
                >>::Error,
            >,
        >,
    OL::Service:
        Service<ClientContext, Request<T>, Response = Response<U>> + 'static + Send + Clone + Sync,
    <OL::Service as Service<ClientContext, Request<T>>>::Error: Send + Into<volo_grpc::Status>,
    T: SendEntryMessage + Send + 'static,
    U: RecvEntryMessage + Send + 'static,
{
    /// Builds the client, as volo-grpc's `build` does, on this module's
    /// transport.
    pub fn build(self) -> C::Target {
        self.inner
            .layer_inner(TransportLayer::new(self.settings))
            .build()
    }
}
