//! The volo adapter's encode and receive paths and its
//! `ClientCompressionLayer`, through the public API, on a hand-written
//! pilota message (the example crate's end-to-end tests use generated code).
//! Moved out of `adapters/volo/tests.rs` and `adapters/volo/client_compression.rs`.
#![cfg(feature = "volo")]

use std::future::Future;
use std::sync::{Arc, Mutex};

use bytes::{Buf, Bytes};
use futures_util::{StreamExt, stream};
use grpc_stream_codec::codegen::volo::encode;
use grpc_stream_codec::envelope::Limits;
use grpc_stream_codec::volo::{ClientCompressionLayer, RecvStream};
use http_body::Frame;
use motore::layer::Layer;
use motore::service::{Service, service_fn};
use pilota::pb::encoding::{DecodeContext, WireType, bytes as pb_bytes, skip_field};
use pilota::pb::{DecodeError, EncodeLengthContext, Message};
use volo_grpc::codec::compression::CompressionEncoding as VoloEncoding;
#[cfg(feature = "gzip")]
use volo_grpc::codec::compression::GzipConfig;
use volo_grpc::codec::decode::Kind;
use volo_grpc::context::ClientContext;
use volo_grpc::{Request, Response};

/// `message Blob { bytes payload = 1; }`
#[derive(Clone, Debug, Default, PartialEq)]
struct Blob {
    payload: Bytes,
}

impl Message for Blob {
    fn encoded_len(&self, ctx: &mut EncodeLengthContext) -> usize {
        pb_bytes::encoded_len(ctx, 1, &self.payload)
    }

    fn encode_raw(&self, buf: &mut linkedbytes::LinkedBytes) {
        pb_bytes::encode(1, &self.payload, buf);
    }

    fn merge_field(
        &mut self,
        tag: u32,
        wire_type: WireType,
        buf: &mut Bytes,
        ctx: &mut DecodeContext,
        _is_root: bool,
    ) -> Result<(), DecodeError> {
        match tag {
            1 => pb_bytes::merge(wire_type, &mut self.payload, buf, ctx),
            _ => skip_field(wire_type, tag, buf, ctx),
        }
    }
}

fn blob(len: usize, fill: u8) -> Blob {
    Blob {
        payload: Bytes::from(vec![fill; len]),
    }
}

async fn frames(
    source: Vec<Result<Blob, volo_grpc::Status>>,
    compression: Option<VoloEncoding>,
) -> Vec<Result<Bytes, volo_grpc::Status>> {
    let mut frames = encode(stream::iter(source), compression);
    let mut out = Vec::new();
    while let Some(frame) = frames.next().await {
        out.push(frame.map(|frame| frame.into_data().expect("data frame")));
    }
    out
}

/// Splits wire bytes into (flag, payload) envelopes.
fn envelopes(mut wire: &[u8]) -> Vec<(u8, Vec<u8>)> {
    let mut out = Vec::new();
    while wire.has_remaining() {
        let flag = wire.get_u8();
        let len = wire.get_u32() as usize;
        out.push((flag, wire[..len].to_vec()));
        wire.advance(len);
    }
    out
}

/// After each frame of `source`'s body: whether its `size_hint` said the
/// stream had ended (what the client transport sends END_STREAM on).
async fn end_hints(source: Vec<Result<Blob, volo_grpc::Status>>) -> Vec<bool> {
    let mut frames = encode(stream::iter(source), None);
    let ended = |frames: &volo_grpc::BoxStream<'_, _>| frames.size_hint() == (0, Some(0));
    assert!(!ended(&frames), "nothing taken yet");
    let mut hints = Vec::new();
    while let Some(frame) = frames.next().await {
        frame.unwrap();
        hints.push(ended(&frames));
    }
    hints
}

#[tokio::test]
async fn the_body_says_it_has_ended_with_its_last_frame_never_before() {
    // Ready small messages: one frame, and the source's end is seen with it.
    let small = (0..16).map(|i| blob(256, i)).map(Ok).collect();
    assert_eq!(end_hints(small).await, [true]);
    // A batch that fills up leaves before the source's end is seen: no
    // claim then (an empty END_STREAM frame follows), and none early.
    let mut mixed: Vec<_> = (0..16).map(|i| blob(256, i)).map(Ok).collect();
    mixed.push(Ok(blob(64 * 1024, 7)));
    mixed.push(Ok(blob(300, 8)));
    let hints = end_hints(mixed).await;
    let (_, before) = hints.split_last().unwrap();
    assert!(before.iter().all(|ended| !ended), "{hints:?}");
}

#[tokio::test]
async fn ready_messages_share_one_frame() {
    let source = (0..16).map(|i| blob(256, i)).map(Ok).collect();
    let frames = frames(source, None).await;
    assert_eq!(frames.len(), 1);
    let wire = frames[0].as_ref().unwrap();
    let envelopes = envelopes(wire);
    assert_eq!(envelopes.len(), 16);
    for (i, (flag, payload)) in envelopes.into_iter().enumerate() {
        assert_eq!(flag, 0);
        assert_eq!(
            Blob::decode(Bytes::from(payload)).unwrap(),
            blob(256, i as u8)
        );
    }
}

#[tokio::test]
async fn identity_and_none_write_flag_zero_and_the_payload() {
    for compression in [None, Some(VoloEncoding::Identity)] {
        let frames = frames(vec![Ok(blob(3, 7))], compression).await;
        let wire = frames[0].as_ref().unwrap();
        assert_eq!(&wire[..], b"\0\0\0\0\x05\x0a\x03\x07\x07\x07");
    }
}

#[cfg(feature = "gzip")]
#[tokio::test]
async fn a_config_less_gzip_compresses() {
    for compression in [
        VoloEncoding::Gzip(None),
        VoloEncoding::Gzip(Some(GzipConfig::default())),
    ] {
        let frames = frames(vec![Ok(blob(1000, 1))], Some(compression)).await;
        let wire: Vec<u8> = frames
            .iter()
            .flat_map(|f| f.as_ref().unwrap().to_vec())
            .collect();
        let envelopes = envelopes(&wire);
        assert_eq!(envelopes.len(), 1);
        let (flag, compressed) = &envelopes[0];
        assert_eq!(*flag, 1);
        assert!(
            compressed.len() < 100,
            "gzip of a constant payload is small"
        );
        let mut plain = Vec::new();
        grpc_stream_codec::compression::decompress(
            grpc_stream_codec::compression::CompressionEncoding::Gzip,
            &mut &compressed[..],
            &mut plain,
            usize::MAX,
        )
        .unwrap();
        assert_eq!(Blob::decode(Bytes::from(plain)).unwrap(), blob(1000, 1));
    }
}

#[tokio::test]
async fn large_bytes_fields_are_sent_by_reference() {
    let big = blob(64 * 1024, 9);
    let frames = frames(vec![Ok(big.clone())], None).await;
    let frames: Vec<Bytes> = frames.into_iter().map(Result::unwrap).collect();
    // Prefix, field header and the payload's head fill the first frame;
    // the payload's next three frames go by reference, its tail last.
    let lens: Vec<usize> = frames.iter().map(Bytes::len).collect();
    let head = 16 * 1024 - (5 + 1 + 3);
    assert_eq!(
        lens,
        [16 * 1024, 3 * 16 * 1024, 64 * 1024 - head - 3 * 16 * 1024]
    );
    assert_eq!(
        frames[1].as_ptr(),
        big.payload[head..].as_ptr(),
        "the 64 KiB payload was copied"
    );
}

/// Frames follow bytes: sixteen ready 4 KiB messages (pilota inserts each
/// payload by reference, so every message is a prefix node and a payload
/// node) leave in as many frames as their bytes fill, not two per message.
#[tokio::test]
async fn ready_4_kib_messages_fill_whole_frames() {
    let blobs: Vec<Blob> = (0..16).map(|i| blob(4096, i)).collect();
    let frames = frames(blobs.iter().cloned().map(Ok).collect(), None).await;
    let frames: Vec<Bytes> = frames.into_iter().map(Result::unwrap).collect();
    let lens: Vec<usize> = frames.iter().map(Bytes::len).collect();
    println!("frames: {lens:?}");
    let total: usize = lens.iter().sum();
    assert_eq!(frames.concat(), wire(&blobs), "the bytes");
    // h2 cuts each payload into frames of 16 KiB: whole frames in every
    // payload but the last make as many frames as the bytes fill.
    let sent: usize = lens.iter().map(|len| len.div_ceil(16 * 1024)).sum();
    assert_eq!(sent, total.div_ceil(16 * 1024), "{lens:?}");
    assert!(
        lens.iter().rev().skip(1).all(|len| len % (16 * 1024) == 0),
        "{lens:?}"
    );
    assert!(frames.len() < 5, "one payload per frame: {lens:?}");
}

#[tokio::test]
async fn a_source_error_follows_the_messages_before_it() {
    let source = vec![
        Ok(blob(10, 1)),
        Ok(blob(10, 2)),
        Err(volo_grpc::Status::aborted("stop")),
    ];
    let frames = frames(source, None).await;
    assert_eq!(frames.len(), 2);
    assert_eq!(envelopes(frames[0].as_ref().unwrap()).len(), 2);
    let status = frames[1].as_ref().unwrap_err();
    assert_eq!(status.code(), volo_grpc::Code::Aborted);
    assert_eq!(status.message(), "stop");
}

/// A body of the given frames, then optional trailers.
fn body(frames: Vec<Bytes>, trailers: Option<http::HeaderMap>) -> volo_grpc::body::BoxBody {
    let frames = frames
        .into_iter()
        .map(Frame::data)
        .chain(trailers.map(Frame::trailers))
        .map(Ok);
    volo_grpc::body::boxed(http_body_util::StreamBody::new(stream::iter(
        frames.collect::<Vec<Result<_, volo_grpc::Status>>>(),
    )))
}

fn wire(blobs: &[Blob]) -> Bytes {
    let mut out = Vec::new();
    for blob in blobs {
        let mut ctx = EncodeLengthContext::default();
        let payload = blob.encode_to_vec(&mut ctx);
        out.push(0);
        out.extend_from_slice(&(payload.len() as u32).to_be_bytes());
        out.extend_from_slice(&payload);
    }
    Bytes::from(out)
}

fn ok_trailers() -> http::HeaderMap {
    let mut trailers = http::HeaderMap::new();
    trailers.insert("grpc-status", http::HeaderValue::from_static("0"));
    trailers.insert("x-extra", http::HeaderValue::from_static("yes"));
    trailers
}

#[tokio::test]
async fn recv_stream_yields_messages_split_across_frames_then_trailers() {
    let blobs = [blob(10, 1), blob(5000, 2), blob(0, 0)];
    let wire = wire(&blobs);
    let cuts = vec![wire.slice(..3), wire.slice(3..4000), wire.slice(4000..)];
    let mut stream = RecvStream::<Blob>::new(
        body(cuts, Some(ok_trailers())),
        Kind::Response(http::StatusCode::OK),
        None,
    );
    for expected in &blobs {
        assert_eq!(stream.message().await.unwrap().as_ref(), Some(expected));
    }
    assert_eq!(stream.message().await.unwrap(), None);
    let trailers = stream.trailers().await.unwrap().unwrap();
    assert_eq!(trailers.get("x-extra").unwrap(), "yes");
}

#[tokio::test]
async fn recv_stream_limit_is_checked_on_the_header() {
    let wire = wire(&[blob(2000, 1)]);
    let mut stream = RecvStream::<Blob>::new(body(vec![wire.clone()], None), Kind::Request, None)
        .with_limits(Limits::new().with_max_receive(1000));
    let status = stream.message().await.unwrap_err();
    assert_eq!(status.code(), volo_grpc::Code::ResourceExhausted);
    assert_eq!(status.message(), "message size 2003 exceeds limit 1000");
    assert!(
        stream.next().await.is_none(),
        "the stream ends after an error"
    );

    // The default limit lets it through.
    let mut stream = RecvStream::<Blob>::new(body(vec![wire], None), Kind::Request, None);
    assert_eq!(stream.message().await.unwrap(), Some(blob(2000, 1)));
}

#[cfg(feature = "deflate")]
#[tokio::test]
async fn recv_stream_reads_zlib_as_deflate() {
    let mut stream = RecvStream::<Blob>::new(
        body(vec![deflated(&blob(3000, 4))], None),
        Kind::Request,
        Some(VoloEncoding::Zlib(None)),
    );
    assert_eq!(stream.message().await.unwrap(), Some(blob(3000, 4)));
}

#[tokio::test]
async fn a_response_error_status_comes_after_the_messages() {
    let mut trailers = http::HeaderMap::new();
    trailers.insert("grpc-status", http::HeaderValue::from_static("5"));
    trailers.insert("grpc-message", http::HeaderValue::from_static("gone"));
    trailers.insert("x-extra", http::HeaderValue::from_static("yes"));
    let mut stream = RecvStream::<Blob>::new(
        body(vec![wire(&[blob(1, 1)])], Some(trailers)),
        Kind::Response(http::StatusCode::OK),
        None,
    );
    assert_eq!(stream.message().await.unwrap(), Some(blob(1, 1)));
    let status = stream.message().await.unwrap_err();
    assert_eq!(status.code(), volo_grpc::Code::NotFound);
    assert_eq!(status.message(), "gone");
    assert_eq!(status.metadata().get("x-extra").unwrap(), "yes");
}

/// A body that fails with `cancelled`, as hyper reports a client reset.
fn cancelled() -> volo_grpc::body::BoxBody {
    let reset: Result<Frame<Bytes>, _> = Err(volo_grpc::Status::cancelled("client went away"));
    volo_grpc::body::boxed(http_body_util::StreamBody::new(stream::iter([reset])))
}

#[tokio::test]
async fn a_cancelled_request_ends_quietly_but_a_cancelled_response_is_an_error() {
    let mut request = RecvStream::<Blob>::new(cancelled(), Kind::Request, None);
    assert!(request.next().await.is_none());

    let mut response =
        RecvStream::<Blob>::new(cancelled(), Kind::Response(http::StatusCode::OK), None);
    let status = response.next().await.unwrap().unwrap_err();
    assert_eq!(status.code(), volo_grpc::Code::Cancelled);
}

#[test]
fn recv_stream_is_send_and_unpin() {
    fn check<T: Send + Unpin>() {}
    check::<RecvStream<Blob>>();
}

#[cfg(feature = "deflate")]
fn deflated(blob: &Blob) -> Bytes {
    let payload = {
        let mut ctx = EncodeLengthContext::default();
        blob.encode_to_vec(&mut ctx)
    };
    let mut compressed = Vec::new();
    grpc_stream_codec::compression::Compression::new(
        grpc_stream_codec::compression::CompressionEncoding::Deflate,
    )
    .compress(&mut &payload[..], &mut compressed)
    .unwrap();
    let mut wire = vec![1];
    wire.extend_from_slice(&(compressed.len() as u32).to_be_bytes());
    wire.extend_from_slice(&compressed);
    Bytes::from(wire)
}

/// One call through `layer` to a client transport that, as volo-grpc's,
/// builds the response (its `encode` or `RecvStream`) while the layer polls
/// the call.
async fn call<F, Fut, U>(layer: ClientCompressionLayer, make: F) -> Response<U>
where
    F: Fn(Request<()>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Response<U>> + Send + 'static,
    U: Send + 'static,
{
    let transport = service_fn(move |_: &mut ClientContext, req| {
        let response = make(req);
        async move { Ok::<_, volo_grpc::Status>(response.await) }
    });
    layer
        .layer(transport)
        .call(&mut ClientContext::default(), Request::new(()))
        .await
        .unwrap()
}

/// The request headers the layer writes.
async fn request_headers(layer: ClientCompressionLayer) -> http::HeaderMap {
    call(layer, |req| async move {
        Response::new(req.metadata().headers().clone())
    })
    .await
    .into_inner()
}

#[cfg(all(feature = "gzip", feature = "deflate"))]
#[tokio::test]
async fn the_layer_writes_grpc_names_in_the_callers_order() {
    use volo_grpc::codec::compression::ZlibConfig;

    let layer = ClientCompressionLayer::new(
        Some(VoloEncoding::Zlib(Some(ZlibConfig::default()))),
        [
            VoloEncoding::Zlib(None),
            VoloEncoding::Gzip(Some(GzipConfig::default())),
            VoloEncoding::Identity,
        ],
    );
    let headers = request_headers(layer).await;
    assert_eq!(headers["grpc-encoding"], "deflate");
    // In the caller's order of preference, then identity.
    assert_eq!(headers["grpc-accept-encoding"], "deflate,gzip,identity");

    let gzip_first =
        ClientCompressionLayer::new(None, [VoloEncoding::Gzip(None), VoloEncoding::Zlib(None)]);
    let headers = request_headers(gzip_first).await;
    assert_eq!(headers["grpc-accept-encoding"], "gzip,deflate,identity");
}

#[tokio::test]
async fn a_layer_without_compression_writes_no_headers() {
    for layer in [
        ClientCompressionLayer::default(),
        ClientCompressionLayer::new(Some(VoloEncoding::Identity), [VoloEncoding::Identity]),
    ] {
        let headers = request_headers(layer).await;
        assert!(headers.is_empty(), "{headers:?}");
    }
}

/// Inside a `ClientCompressionLayer` call, volo-grpc (configured with no
/// compression) hands `encode` `None`; the layer's choice applies.
#[cfg(feature = "deflate")]
#[tokio::test]
async fn encode_inside_a_client_compression_call_uses_its_compression() {
    let layer = ClientCompressionLayer::new(Some(VoloEncoding::Zlib(None)), []);
    let scoped = call(layer, |_| async {
        Response::new(frames(vec![Ok(blob(3000, 7))], None).await)
    })
    .await
    .into_inner();
    let wire: Vec<u8> = scoped.into_iter().flat_map(|f| f.unwrap()).collect();
    let sent = envelopes(&wire);
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].0, 1, "compressed flag");
    let mut inflated = Vec::new();
    grpc_stream_codec::compression::decompress(
        grpc_stream_codec::compression::CompressionEncoding::Deflate,
        &mut &sent[0].1[..],
        &mut inflated,
        1 << 20,
    )
    .unwrap();
    assert_eq!(Blob::decode(Bytes::from(inflated)).unwrap(), blob(3000, 7));

    // Outside a call, `None` stays uncompressed.
    let plain = frames(vec![Ok(blob(3000, 7))], None).await;
    assert_eq!(envelopes(plain[0].as_ref().unwrap())[0].0, 0);
}

/// A response stream made inside a `ClientCompressionLayer` call over
/// `body`, whose response headers are `headers`.
async fn layered_response(
    body: volo_grpc::body::BoxBody,
    volo_encoding: Option<VoloEncoding>,
    headers: &http::HeaderMap,
) -> RecvStream<Blob> {
    let body = Arc::new(Mutex::new(Some(body)));
    let headers = headers.clone();
    call(ClientCompressionLayer::default(), move |_| {
        let (body, headers) = (body.clone(), headers.clone());
        async move {
            let body = body.lock().unwrap().take().unwrap();
            let kind = Kind::Response(http::StatusCode::OK);
            let mut response = Response::new(RecvStream::<Blob>::new(body, kind, volo_encoding));
            *response.metadata_mut().headers_mut() = headers;
            response
        }
    })
    .await
    .into_inner()
}

/// Response headers naming `grpc-encoding: name`.
fn encoding(name: &'static str) -> http::HeaderMap {
    headers(&[("grpc-encoding", name)])
}

/// A response stream created inside a `ClientCompressionLayer` call reads
/// the encoding the layer learns from the response headers afterwards.
#[cfg(feature = "deflate")]
#[tokio::test]
async fn a_response_stream_waits_for_the_layer_to_name_its_encoding() {
    for name in ["deflate", "zlib"] {
        let body = body(vec![deflated(&blob(3000, 4))], Some(ok_trailers()));
        let mut stream = layered_response(body, None, &encoding(name)).await;
        assert_eq!(
            stream.message().await.unwrap(),
            Some(blob(3000, 4)),
            "{name}"
        );
        assert_eq!(stream.message().await.unwrap(), None);
    }

    // Without the layer's word the compressed flag has no encoding.
    let mut stream = RecvStream::<Blob>::new(
        body(vec![deflated(&blob(3000, 4))], Some(ok_trailers())),
        Kind::Response(http::StatusCode::OK),
        None,
    );
    assert_eq!(
        stream.message().await.unwrap_err().code(),
        volo_grpc::Code::Internal
    );
}

/// An encoding the layer reports that this build does not know is
/// `unimplemented`, and the receive limit set before the first read holds.
#[cfg(feature = "deflate")]
#[tokio::test]
async fn a_layered_response_stream_keeps_limits_and_refuses_unknown_encodings() {
    let body_ = body(vec![deflated(&blob(3000, 4))], None);
    let mut stream = layered_response(body_, None, &encoding("snappy")).await;
    assert_eq!(
        stream.message().await.unwrap_err().code(),
        volo_grpc::Code::Unimplemented
    );

    let body_ = body(vec![wire(&[blob(2000, 1)])], None);
    let mut stream = layered_response(body_, None, &encoding("deflate"))
        .await
        .with_limits(Limits::new().with_max_receive(1000));
    assert_eq!(
        stream.message().await.unwrap_err().code(),
        volo_grpc::Code::ResourceExhausted
    );
}

fn headers(pairs: &[(&'static str, &'static str)]) -> http::HeaderMap {
    pairs
        .iter()
        .map(|(name, value)| {
            (
                http::HeaderName::from_static(name),
                http::HeaderValue::from_static(value),
            )
        })
        .collect()
}

/// grpcio's answer to a call with no messages: `grpc-status: 0` in the
/// headers, no body, no trailers. Through the layer that is a clean end,
/// with or without volo-grpc's own compression, and the headers are the
/// stream's trailers.
#[tokio::test]
async fn a_trailers_only_ok_through_the_layer_is_an_empty_stream() {
    let trailers_only = headers(&[
        ("content-type", "application/grpc"),
        ("grpc-status", "0"),
        ("x-extra", "yes"),
    ]);
    #[allow(unused_mut)]
    let mut volo_encodings = vec![None];
    #[cfg(feature = "gzip")]
    volo_encodings.push(Some(VoloEncoding::Gzip(Some(GzipConfig::default()))));
    for volo_encoding in volo_encodings {
        let mut stream = layered_response(body(vec![], None), volo_encoding, &trailers_only).await;
        assert_eq!(stream.message().await.unwrap(), None, "{volo_encoding:?}");
        let trailers = stream.trailers().await.unwrap().unwrap();
        assert_eq!(trailers.get("x-extra").unwrap(), "yes");
    }
}

/// A trailers-only error handed to the stream (volo-grpc's transport
/// returns those itself, but a stream that gets one must not lose any of
/// it) is that status: code, message, details, metadata.
#[tokio::test]
async fn a_trailers_only_error_through_the_layer_is_that_status() {
    let mut error = grpc_stream_codec::status::Status::new(
        grpc_stream_codec::status::Code::FailedPrecondition,
        "not now: 100%",
    )
    .with_details(Bytes::from_static(b"\x08\x09"));
    error = error.with_metadata(headers(&[("x-extra", "yes")]));
    let mut trailers_only = headers(&[("content-type", "application/grpc")]);
    error.write_headers(&mut trailers_only);
    let mut stream = layered_response(body(vec![], None), None, &trailers_only).await;
    let status = stream.message().await.unwrap_err();
    assert_eq!(status.code(), volo_grpc::Code::FailedPrecondition);
    assert_eq!(status.message(), "not now: 100%");
    assert_eq!(status.details(), b"\x08\x09");
    assert_eq!(status.metadata().get("x-extra").unwrap(), "yes");
    assert!(stream.next().await.is_none(), "the stream ends after it");
}

/// The layer does not make a missing status `OK`: headers without
/// `grpc-status` and a body without trailers stay an error.
#[tokio::test]
async fn no_grpc_status_anywhere_is_still_an_error_through_the_layer() {
    let plain = headers(&[("content-type", "application/grpc")]);
    for frames in [vec![], vec![wire(&[blob(3, 1)])]] {
        let messages = frames.len();
        let mut stream = layered_response(body(frames, None), None, &plain).await;
        for _ in 0..messages {
            assert_eq!(stream.message().await.unwrap(), Some(blob(3, 1)));
        }
        let status = stream.message().await.unwrap_err();
        assert_eq!(status.code(), volo_grpc::Code::Internal);
        assert_eq!(
            status.message(),
            "protocol error: response ended without a grpc-status"
        );
    }
}

/// Outside the layer a body that ends without trailers may have been a
/// trailers-only response: the error names the layer. With trailers, the
/// layer is not needed and nothing changes.
#[tokio::test]
async fn without_the_layer_a_body_without_trailers_names_the_layer() {
    let mut stream = RecvStream::<Blob>::new(
        body(vec![wire(&[blob(3, 1)])], None),
        Kind::Response(http::StatusCode::OK),
        None,
    );
    assert_eq!(stream.message().await.unwrap(), Some(blob(3, 1)));
    let status = stream.message().await.unwrap_err();
    assert_eq!(status.code(), volo_grpc::Code::Internal);
    assert!(
        status.message().contains("ClientCompressionLayer"),
        "{status:?}"
    );
    assert!(stream.next().await.is_none(), "the stream ends after it");

    // Trailers without a grpc-status: the server's fault, said as before.
    let mut stream = RecvStream::<Blob>::new(
        body(vec![], Some(headers(&[("x-extra", "yes")]))),
        Kind::Response(http::StatusCode::OK),
        None,
    );
    assert_eq!(
        stream.message().await.unwrap_err().message(),
        "protocol error: response ended without a grpc-status"
    );

    let mut stream = RecvStream::<Blob>::new(
        body(vec![], Some(ok_trailers())),
        Kind::Response(http::StatusCode::OK),
        None,
    );
    assert_eq!(stream.message().await.unwrap(), None);
}
