//! Compression by gRPC's names for volo-grpc clients built on the adapter.
//!
//! volo-grpc's client transport writes `grpc-encoding` and
//! `grpc-accept-encoding` itself, after every layer, naming deflate `zlib`,
//! and refuses a response whose `grpc-encoding` is `deflate` before the
//! body reaches a codec. Nothing between the layers and the wire can rename
//! a header, so [`ClientCompressionLayer`] takes the call's compression over
//! instead of volo-grpc's `send_compressions`/`accept_compressions`: it
//! writes both headers with gRPC's names into the request metadata (the
//! transport leaves them alone when volo-grpc has no compression configured),
//! and tells the adapter's encoder (`encode.rs`) and
//! [`RecvStream`](super::RecvStream), created by the transport while the
//! layer polls it, what to compress with and, once the response headers are
//! in, what the response was compressed with and, for a trailers-only
//! response, its status.
//!
//! That hand-over goes through a thread-local set only while the layer polls
//! the transport, so it reaches exactly the codec calls of this one RPC.
//!
//! # Trailers-only responses
//!
//! gRPC C-core (grpcio) and grpc-go answer a call that produced no messages
//! with the status in the response HEADERS and no body. volo-grpc's
//! transport reads those headers, returns a non-`OK` status itself, and for
//! `OK` hands the codec only the (empty) body and the HTTP status: without
//! the headers the adapter would see a response with no `grpc-status`. The
//! headers reach the layer with the response, before anyone reads the
//! stream, so the layer passes them on through the same slot as the
//! encoding. A client built by the hook's [`ClientBuilder`](super::ClientBuilder)
//! gets the headers from its own transport the same way, layer or not; only
//! a response stream made by volo-grpc's own transport outside the layer
//! cannot tell the two apart, and fails, naming the layer, when its body
//! ends without trailers.

use http::{HeaderMap, HeaderValue};
use motore::layer::Layer;
use volo_grpc::codec::compression::CompressionEncoding as VoloEncoding;
use volo_grpc::context::ClientContext;

use super::call_scope::{CallScope, ResponseHeaders, SCOPE};
use super::compression::{compression_from_volo, encoding_from_volo};
use super::scoped::Scoped;
use super::service::wrap_service;
use crate::compression::{Compression, EncodingList, GRPC_ACCEPT_ENCODING, GRPC_ENCODING};

/// A volo-grpc client layer that compresses requests and accepts compressed
/// responses under gRPC's names (`deflate`, not volo-grpc's `zlib`), so an
/// adapter client works with grpcio, tonic and every other gRPC server.
///
/// One line on the client builder, *instead of* its `send_compressions` and
/// `accept_compressions`:
///
/// ```no_run
/// use grpc_stream_codec::volo::ClientCompressionLayer;
/// use volo_grpc::codec::compression::CompressionEncoding;
///
/// let deflate = CompressionEncoding::Zlib(None);
/// let layer = ClientCompressionLayer::new(Some(deflate), [deflate]);
/// // EchoClientBuilder::new("echo").address(addr).layer_inner(layer).build()
/// # let _ = layer;
/// ```
///
/// Clients generated through the build hook no longer need it for
/// *trailers-only* responses (their transport hands the response headers
/// to the stream, see [`ClientBuilder`](super::ClientBuilder));
/// `ClientCompressionLayer::default()` on such a client changes nothing.
/// Put it with `layer_inner`, or anywhere the transport's call is polled in
/// the same task (a layer between them that spawns the call hides it).
///
/// It only works with clients generated through the adapter's build hook
/// (the stock codec does not know about it). If the builder also sets
/// volo-grpc's own compressions, those win and the names are volo-grpc's.
/// A stock volo-grpc *server* knows deflate only as `zlib`: give it a
/// client with volo-grpc's own settings, or put
/// [`DeflateNameLayer`](super::DeflateNameLayer) in front of it.
#[derive(Clone, Debug, Default)]
pub struct ClientCompressionLayer {
    send: Option<Compression>,
    accept: EncodingList,
}

impl ClientCompressionLayer {
    /// Compress requests with `send` (`None` or `Identity`: uncompressed)
    /// and ask for responses compressed with any of `accept`, in that order
    /// of preference (`grpc-accept-encoding` lists them in `accept`'s
    /// order, then `identity`, and servers answer with the first they may
    /// send). volo-grpc's `Zlib` is sent and listed as `deflate`; configured
    /// levels are kept.
    ///
    /// A response is decoded with whatever its `grpc-encoding` names (either
    /// name of deflate included) if this build supports it, listed or not;
    /// an encoding it does not support fails the stream with
    /// `unimplemented`.
    pub fn new(send: Option<VoloEncoding>, accept: impl IntoIterator<Item = VoloEncoding>) -> Self {
        ClientCompressionLayer {
            send: compression_from_volo(send),
            accept: accept.into_iter().map(encoding_from_volo).collect(),
        }
    }

    /// The `grpc-encoding` and `grpc-accept-encoding` this layer writes.
    fn write_headers(&self, headers: &mut HeaderMap) {
        if let Some(send) = self.send {
            headers.insert(GRPC_ENCODING, send.encoding.header_value());
        }
        if let Some(value) = self.accept_header() {
            headers.insert(GRPC_ACCEPT_ENCODING, value);
        }
    }

    fn accept_header(&self) -> Option<HeaderValue> {
        self.accept.accept_header_value()
    }
}

impl<S> Layer<S> for ClientCompressionLayer {
    type Service = ClientCompressionService<S>;

    fn layer(self, inner: S) -> ClientCompressionService<S> {
        ClientCompressionService {
            inner,
            config: self,
        }
    }
}

/// The service [`ClientCompressionLayer`] wraps around a volo-grpc client's
/// transport.
#[derive(Clone, Debug)]
pub struct ClientCompressionService<S> {
    inner: S,
    config: ClientCompressionLayer,
}

wrap_service!(ClientCompressionService on ClientContext, |this, cx, mut req| {
    this.config.write_headers(req.metadata_mut().headers_mut());
    // Every response gets the slot, whatever this client accepts: some
    // servers (grpcio) compress responses the client never listed, and
    // any encoding this build supports can be read.
    let response_headers = ResponseHeaders::default();
    let scope = CallScope {
        send: this.config.send,
        response: Some(response_headers.clone()),
    };
    let response = Scoped::new(&SCOPE, scope, this.inner.call(cx, req)).await?;
    // A stream made by volo-grpc's own transport waits for them; one made
    // by the hook's transport got them from it and left this slot alone.
    if response_headers.is_awaited() {
        response_headers.set(response.metadata().headers());
    }
    Ok(response)
});

// The encoder reads the call's send compression from here.
pub(super) use super::call_scope::scoped_send;
