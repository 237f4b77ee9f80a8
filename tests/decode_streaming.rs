//! `Streaming` over http bodies: messages, trailers, the call status of a
//! response, and the end of the stream after an error.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::{Bytes, BytesMut};
use futures_util::{FutureExt, StreamExt, stream};
use grpc_stream_codec::compression::{Compression, CompressionEncoding};
use grpc_stream_codec::decode::{BytesDecoder, MessageDecoder, Streaming};
use grpc_stream_codec::envelope::EnvelopeHeader;
use grpc_stream_codec::{
    envelope::Limits,
    status::{Code, Status},
};
use http::{HeaderMap, HeaderValue, StatusCode};
use http_body::Frame;
use http_body_util::{Empty, Full, StreamBody};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

fn message(payload: &[u8]) -> Vec<u8> {
    let mut wire = EnvelopeHeader::message(false, payload.len() as u32)
        .to_bytes()
        .to_vec();
    wire.extend_from_slice(payload);
    wire
}

fn trailers(status: &str, message: Option<&str>) -> HeaderMap {
    let mut map = HeaderMap::new();
    map.insert("grpc-status", HeaderValue::from_str(status).unwrap());
    if let Some(message) = message {
        map.insert("grpc-message", HeaderValue::from_str(message).unwrap());
    }
    map
}

/// A body of the given frames that counts how many frames were polled out of it.
fn counted_body(
    frames: Vec<Result<Frame<Bytes>, BoxError>>,
) -> (
    StreamBody<impl futures_util::Stream<Item = Result<Frame<Bytes>, BoxError>>>,
    Arc<AtomicUsize>,
) {
    let polled = Arc::new(AtomicUsize::new(0));
    let counter = polled.clone();
    let body = StreamBody::new(stream::iter(frames).inspect(move |_| {
        counter.fetch_add(1, Ordering::SeqCst);
    }));
    (body, polled)
}

fn data(bytes: Vec<u8>) -> Result<Frame<Bytes>, BoxError> {
    Ok(Frame::data(Bytes::from(bytes)))
}

async fn collect<D: MessageDecoder>(stream: Streaming<D>) -> Vec<Result<D::Item, Status>> {
    stream.collect().await
}

#[test]
fn streaming_is_send_and_unpin() {
    fn assert_send_unpin<T: Send + Unpin>() {}
    assert_send_unpin::<Streaming<BytesDecoder>>();
}

#[test]
fn decodes_in_the_polling_task() {
    // No runtime at all: a ready body yields its message on the first poll,
    // which a reader task behind a channel could not do.
    let body = Full::new(Bytes::from(message(b"inline")));
    let mut stream = Streaming::new_request(body, BytesDecoder, None);
    let first = stream.next().now_or_never().expect("ready on first poll");
    assert_eq!(first.unwrap().unwrap(), "inline");
    assert!(stream.next().now_or_never().unwrap().is_none());
}

#[tokio::test]
async fn messages_split_across_frames_and_request_trailers() {
    let mut wire = message(b"first");
    wire.extend(message(&[7; 10_000]));
    wire.extend(message(b""));
    let mut frames: Vec<_> = wire.chunks(3).map(|c| data(c.to_vec())).collect();
    frames.push(Ok(Frame::trailers(trailers("0", None))));
    let (body, _) = counted_body(frames);
    let mut stream = Streaming::new_request(body, BytesDecoder, None);
    assert_eq!(stream.message().await.unwrap().unwrap(), "first");
    assert_eq!(stream.message().await.unwrap().unwrap(), vec![7; 10_000]);
    assert_eq!(stream.message().await.unwrap().unwrap(), "");
    assert_eq!(stream.message().await.unwrap(), None);
    let trailers = stream.trailers().await.unwrap().unwrap();
    assert_eq!(trailers["grpc-status"], "0");
}

#[tokio::test]
async fn trailers_skips_unread_messages() {
    let mut wire = message(b"one");
    wire.extend(message(b"two"));
    let frames = vec![data(wire), Ok(Frame::trailers(trailers("0", None)))];
    let (body, _) = counted_body(frames);
    let mut stream = Streaming::new_request(body, BytesDecoder, None);
    let trailers = stream.trailers().await.unwrap().unwrap();
    assert_eq!(trailers["grpc-status"], "0");
    assert_eq!(stream.message().await.unwrap(), None);
}

#[tokio::test]
async fn a_request_body_ending_inside_a_message_fails() {
    let mut wire = message(b"hello");
    wire.pop();
    let body = Full::new(Bytes::from(wire));
    let items = collect(Streaming::new_request(body, BytesDecoder, None)).await;
    let [Err(err)] = &items[..] else {
        panic!("{items:?}");
    };
    assert_eq!(err.code(), Code::Internal);
    assert_eq!(
        err.message(),
        "protocol error: body ended inside a message (4 of 5 bytes)"
    );
}

#[tokio::test]
async fn nothing_is_read_after_an_error() {
    let mut bad = message(b"ok");
    bad.extend_from_slice(&[0x04, 0, 0, 0, 0]);
    let frames = vec![data(bad), data(message(b"never")), data(message(b"seen"))];
    let (body, polled) = counted_body(frames);
    let mut stream = Streaming::new_request(body, BytesDecoder, None);
    assert_eq!(stream.message().await.unwrap().unwrap(), "ok");
    let err = stream.message().await.unwrap_err();
    assert_eq!(err.code(), Code::Internal);
    assert_eq!(err.message(), "protocol error: invalid envelope flags 0x04");
    assert_eq!(stream.message().await.unwrap(), None);
    assert!(stream.next().await.is_none());
    assert_eq!(
        polled.load(Ordering::SeqCst),
        1,
        "only the first frame was read"
    );
}

#[tokio::test]
async fn the_receive_limit_is_configurable() {
    let body = Full::new(Bytes::from(message(&[0; 101])));
    let stream = Streaming::new_request(body, BytesDecoder, None)
        .with_limits(Limits::new().with_max_receive(100));
    let items = collect(stream).await;
    let [Err(err)] = &items[..] else {
        panic!("{items:?}");
    };
    assert_eq!(err.code(), Code::ResourceExhausted);
    assert_eq!(err.message(), "message size 101 exceeds limit 100");
}

struct Utf8;

impl MessageDecoder for Utf8 {
    type Item = String;

    fn decode(&mut self, message: Bytes) -> Result<String, Status> {
        String::from_utf8(message.to_vec())
            .map_err(|_| Status::new(Code::InvalidArgument, "not utf-8"))
    }
}

#[tokio::test]
async fn a_decode_error_ends_the_stream() {
    let mut wire = message(b"fine");
    wire.extend(message(&[0xff]));
    wire.extend(message(b"after"));
    let items = collect(Streaming::new_request(
        Full::new(Bytes::from(wire)),
        Utf8,
        None,
    ))
    .await;
    assert_eq!(items.len(), 2, "{items:?}");
    assert_eq!(items[0].as_ref().unwrap(), "fine");
    let err = items[1].as_ref().unwrap_err();
    assert_eq!(
        (err.code(), err.message()),
        (Code::InvalidArgument, "not utf-8")
    );
}

#[tokio::test]
async fn a_body_error_that_is_a_status_is_kept() {
    let status = Status::new(Code::Cancelled, "peer went away");
    let frames = vec![data(message(b"ok")), Err(Box::new(status) as BoxError)];
    let (body, _) = counted_body(frames);
    let items = collect(Streaming::new_request(body, BytesDecoder, None)).await;
    assert_eq!(items.len(), 2);
    let err = items[1].as_ref().unwrap_err();
    assert_eq!(
        (err.code(), err.message()),
        (Code::Cancelled, "peer went away")
    );
}

#[tokio::test]
async fn another_body_error_is_unknown() {
    let error: BoxError = "connection reset".into();
    let (body, _) = counted_body(vec![Err(error)]);
    let items = collect(Streaming::new_request(body, BytesDecoder, None)).await;
    let err = items[0].as_ref().unwrap_err();
    assert_eq!(err.code(), Code::Unknown);
    assert_eq!(
        err.message(),
        "error reading the message body: connection reset"
    );
}

fn response<B>(status: StatusCode, headers: &HeaderMap, body: B) -> Streaming<BytesDecoder>
where
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    Streaming::new_response(status, headers, body, BytesDecoder)
}

#[tokio::test]
async fn a_response_with_ok_trailers_ends_cleanly() {
    let frames = vec![
        data(message(b"reply")),
        Ok(Frame::trailers(trailers("0", None))),
    ];
    let (body, _) = counted_body(frames);
    let mut stream = response(StatusCode::OK, &HeaderMap::new(), body);
    assert_eq!(stream.message().await.unwrap().unwrap(), "reply");
    assert_eq!(stream.message().await.unwrap(), None);
    assert_eq!(
        stream.trailers().await.unwrap().unwrap()["grpc-status"],
        "0"
    );
}

#[tokio::test]
async fn a_response_error_status_is_the_last_item() {
    let frames = vec![
        data(message(b"partial")),
        Ok(Frame::trailers(trailers("5", Some("no%20such%20key")))),
    ];
    let (body, _) = counted_body(frames);
    let mut stream = response(StatusCode::OK, &HeaderMap::new(), body);
    assert_eq!(stream.message().await.unwrap().unwrap(), "partial");
    let err = stream.message().await.unwrap_err();
    assert_eq!((err.code(), err.message()), (Code::NotFound, "no such key"));
    assert_eq!(stream.message().await.unwrap(), None);
    let again = stream.trailers().await.unwrap_err();
    assert_eq!(again.code(), Code::NotFound);
}

#[tokio::test]
async fn trailers_of_an_error_response_are_the_status() {
    let frames = vec![Ok(Frame::trailers(trailers("14", Some("down"))))];
    let (body, _) = counted_body(frames);
    let mut stream = response(StatusCode::OK, &HeaderMap::new(), body);
    let err = stream.trailers().await.unwrap_err();
    assert_eq!((err.code(), err.message()), (Code::Unavailable, "down"));
}

#[tokio::test]
async fn a_response_without_grpc_status_is_internal() {
    let body = Full::new(Bytes::from(message(b"reply")));
    let items = collect(response(StatusCode::OK, &HeaderMap::new(), body)).await;
    assert_eq!(items.len(), 2);
    let err = items[1].as_ref().unwrap_err();
    assert_eq!(err.code(), Code::Internal);
    assert_eq!(
        err.message(),
        "protocol error: response ended without a grpc-status"
    );
}

#[tokio::test]
async fn a_trailers_only_response_carries_its_status_in_the_headers() {
    let headers = trailers("7", Some("denied"));
    let items = collect(response(StatusCode::OK, &headers, Empty::<Bytes>::new())).await;
    let [Err(err)] = &items[..] else {
        panic!("{items:?}");
    };
    assert_eq!(
        (err.code(), err.message()),
        (Code::PermissionDenied, "denied")
    );
}

#[tokio::test]
async fn a_non_200_response_is_not_read() {
    let (body, polled) = counted_body(vec![data(b"<html>".to_vec())]);
    let mut stream = response(StatusCode::SERVICE_UNAVAILABLE, &HeaderMap::new(), body);
    let err = stream.message().await.unwrap_err();
    assert_eq!(err.code(), Code::Unavailable);
    assert_eq!(
        err.message(),
        "HTTP status 503 Service Unavailable without a grpc-status"
    );
    assert_eq!(stream.message().await.unwrap(), None);
    assert_eq!(polled.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn grpc_web_trailers_in_the_body_give_the_status() {
    let mut wire = message(b"reply");
    let block = b"grpc-status: 3\r\ngrpc-message: bad%20arg\r\n";
    wire.extend_from_slice(&EnvelopeHeader::trailers(block.len() as u32).to_bytes());
    wire.extend_from_slice(block);
    let body = Full::new(Bytes::from(wire));
    let mut stream = response(StatusCode::OK, &HeaderMap::new(), body);
    assert_eq!(stream.message().await.unwrap().unwrap(), "reply");
    let err = stream.message().await.unwrap_err();
    assert_eq!(
        (err.code(), err.message()),
        (Code::InvalidArgument, "bad arg")
    );
}

#[tokio::test]
async fn a_response_names_its_encoding() {
    let mut compressed = BytesMut::new();
    Compression::new(CompressionEncoding::Zstd)
        .compress(&mut &b"squeezed"[..], &mut compressed)
        .unwrap();
    let mut wire = EnvelopeHeader::message(true, compressed.len() as u32)
        .to_bytes()
        .to_vec();
    wire.extend_from_slice(&compressed);
    let frames = vec![data(wire), Ok(Frame::trailers(trailers("0", None)))];
    let (body, _) = counted_body(frames);
    let mut headers = HeaderMap::new();
    headers.insert("grpc-encoding", HeaderValue::from_static("zstd"));
    let mut stream = response(StatusCode::OK, &headers, body);
    assert_eq!(stream.message().await.unwrap().unwrap(), "squeezed");
    assert_eq!(stream.message().await.unwrap(), None);
}

#[tokio::test]
async fn an_unsupported_response_encoding_is_unimplemented() {
    let mut headers = HeaderMap::new();
    headers.insert("grpc-encoding", HeaderValue::from_static("br"));
    let body = Full::new(Bytes::from(message(b"x")));
    let items = collect(response(StatusCode::OK, &headers, body)).await;
    let [Err(err)] = &items[..] else {
        panic!("{items:?}");
    };
    assert_eq!(err.code(), Code::Unimplemented);
    assert!(
        err.message()
            .starts_with("unsupported grpc-encoding \"br\"")
    );
}

#[tokio::test]
async fn drain_reads_the_rest_of_the_body_within_its_bound() {
    let frames = vec![data(message(b"one")), data(vec![0; 1000])];
    let (body, polled) = counted_body(frames);
    let mut stream = Streaming::new_request(body, BytesDecoder, None);
    assert_eq!(stream.message().await.unwrap().unwrap(), "one");
    assert!(stream.drain(1000).await);
    assert_eq!(polled.load(Ordering::SeqCst), 2);

    let frames = vec![data(vec![0; 600]), data(vec![0; 600]), data(vec![0; 600])];
    let (body, polled) = counted_body(frames);
    let stream = Streaming::new_request(body, BytesDecoder, None);
    assert!(!stream.drain(1000).await);
    assert_eq!(polled.load(Ordering::SeqCst), 2, "stops at the bound");
}

#[tokio::test]
async fn a_body_of_infallible_frames_works() {
    let body = StreamBody::new(stream::iter(vec![Ok::<_, Infallible>(Frame::data(
        Bytes::from(message(b"x")),
    ))]));
    let items = collect(Streaming::new_request(body, BytesDecoder, None)).await;
    let [Ok(item)] = &items[..] else {
        panic!("expected one message, got {items:?}");
    };
    assert_eq!(item, &b"x"[..]);
}
