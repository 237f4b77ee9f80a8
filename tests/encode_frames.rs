//! DATA frames on a real HTTP/2 connection (h2 client and server over
//! loopback): ready messages leave in full 16 KiB frames, and a paced source
//! still has each message sent as soon as it is produced.
//!
//! h2 sends each body chunk as its own DATA frames, split at the peer's max
//! frame size (16 KiB by default) and never merged with the next chunk, and
//! its receiver yields one chunk per DATA frame, so the server below counts
//! frames by counting chunks. Its windows are large enough that flow control
//! never splits a chunk.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{BufMut, Bytes};
use futures_core::Stream;
use grpc_stream_codec::decode::{Decoded, EnvelopeAssembler};
use grpc_stream_codec::encode::{BodyMode, EncodeBody, EncodeConfig, EncodeStream, MessageEncoder};
use grpc_stream_codec::{
    compression::{Compression, CompressionEncoding},
    envelope::Limits,
    status::{Code, Status},
};
use http_body::Body;
use http_body_util::BodyExt;
use linkedbytes::LinkedBytes;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

/// Flow-control windows of both sides: more than any test sends.
const WINDOW: usize = 8 << 20;

struct Raw;

impl MessageEncoder for Raw {
    type Item = Bytes;

    fn encode(&mut self, item: Bytes, dst: &mut LinkedBytes) -> Result<(), Status> {
        dst.put_slice(&item);
        Ok(())
    }

    fn exact_len(&self, item: &Bytes) -> Option<usize> {
        Some(item.len())
    }
}

fn message(index: usize, len: usize) -> Bytes {
    (0..len)
        .map(|i| (i.wrapping_mul(31) ^ index) as u8)
        .collect::<Vec<_>>()
        .into()
}

/// What the server saw of one request body.
struct Received {
    frames: usize,
    messages: Vec<Bytes>,
}

/// Serves one HTTP/2 request: counts its DATA frames, decodes its messages
/// with `encoding`, and reports each message's index on `each` as it is
/// decoded.
async fn serve_one(
    listener: TcpListener,
    encoding: Option<CompressionEncoding>,
    each: mpsc::UnboundedSender<usize>,
) -> Received {
    let (tcp, _) = listener.accept().await.unwrap();
    let mut connection = h2::server::Builder::new()
        .initial_window_size(WINDOW as u32)
        .initial_connection_window_size(WINDOW as u32)
        .handshake::<_, Bytes>(tcp)
        .await
        .unwrap();
    let (request, mut respond) = connection.accept().await.unwrap().unwrap();
    // The connection makes progress only while polled.
    tokio::spawn(async move { while connection.accept().await.is_some() {} });
    let mut body = request.into_body();
    let mut assembler = EnvelopeAssembler::new(Limits::default(), encoding);
    let mut received = Received {
        frames: 0,
        messages: Vec::new(),
    };
    while let Some(chunk) = body.data().await {
        let chunk = chunk.unwrap();
        let _ = body.flow_control().release_capacity(chunk.len());
        if chunk.is_empty() {
            continue;
        }
        received.frames += 1;
        assembler.push(chunk);
        while let Some(decoded) = assembler.next().unwrap() {
            let Decoded::Message(message) = decoded else {
                panic!("no trailers in a request body");
            };
            let _ = each.send(received.messages.len());
            received.messages.push(message);
        }
    }
    assembler.finish().unwrap();
    respond
        .send_response(http::Response::new(()), true)
        .unwrap();
    received
}

/// Sends `source` through an `EncodeBody` as one h2 request body, one
/// `send_data` per body frame, as hyper does.
async fn send<S>(addr: SocketAddr, source: S, config: EncodeConfig)
where
    S: Stream<Item = Result<Bytes, Status>> + Send + 'static,
{
    let tcp = TcpStream::connect(addr).await.unwrap();
    let (client, connection) = h2::client::handshake(tcp).await.unwrap();
    tokio::spawn(connection);
    let mut client = client.ready().await.unwrap();
    let request = http::Request::post("http://127.0.0.1/test.Frames/Count")
        .header("content-type", "application/grpc")
        .body(())
        .unwrap();
    let (response, mut stream) = client.send_request(request, false).unwrap();
    // Wait for the server's large windows before sending: a chunk sent into
    // the default 64 KiB window would be split by flow control, not by us.
    // (h2 assigns at most its 400 KiB send buffer as capacity.)
    stream.reserve_capacity(WINDOW);
    while stream.capacity() <= 65_535 {
        std::future::poll_fn(|cx| stream.poll_capacity(cx))
            .await
            .unwrap()
            .unwrap();
    }
    let mut body = std::pin::pin!(EncodeBody::client(EncodeStream::new(source, Raw, config)));
    while let Some(frame) = body.frame().await {
        if let Ok(data) = frame.unwrap().into_data() {
            stream.send_data(data, false).unwrap();
        }
    }
    stream.send_data(Bytes::new(), true).unwrap();
    response.await.unwrap();
}

async fn frames_for(messages: Vec<Bytes>, config: EncodeConfig) -> Received {
    let encoding = config.compression().map(|c| c.encoding);
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (each, _) = mpsc::unbounded_channel();
    let server = tokio::spawn(serve_one(listener, encoding, each));
    let source = futures_util::stream::iter(messages.into_iter().map(Ok));
    send(addr, source, config).await;
    server.await.unwrap()
}

#[tokio::test]
async fn ready_kib_messages_fill_whole_frames() {
    let messages: Vec<Bytes> = (0..1024).map(|i| message(i, 1024)).collect();
    let wire_len: usize = 1024 * (5 + 1024);
    let received = frames_for(messages.clone(), EncodeConfig::default()).await;
    assert_eq!(received.messages, messages);
    // 1,053,696 bytes fill 65 frames; batches cut at 32,928 bytes took 96.
    assert_eq!(received.frames, wire_len.div_ceil(16 * 1024));
    assert!(received.frames <= 70, "{} DATA frames", received.frames);
}

#[tokio::test]
async fn ready_large_messages_fill_whole_frames() {
    // 64 KiB messages are 4 frames and 5 bytes each; carried over, the five
    // bytes ride in the next message's first frame.
    let messages: Vec<Bytes> = (0..32).map(|i| message(i, 64 * 1024)).collect();
    let wire_len: usize = 32 * (5 + 64 * 1024);
    let received = frames_for(messages.clone(), EncodeConfig::default()).await;
    assert_eq!(received.messages, messages);
    assert_eq!(received.frames, wire_len.div_ceil(16 * 1024));
}

#[tokio::test]
async fn compressed_ready_messages_fill_whole_frames() {
    let messages: Vec<Bytes> = (0..1024).map(|i| message(i % 7, 1024)).collect();
    let config =
        EncodeConfig::default().with_compression(Some(Compression::new(CompressionEncoding::Gzip)));
    let received = frames_for(messages.clone(), config).await;
    assert_eq!(received.messages, messages);
    // The compressed stream is smaller; every frame but the last is full.
    let wire_len: usize = {
        let mut batches = EncodeStream::new(
            futures_util::stream::iter(messages.into_iter().map(Ok)),
            Raw,
            config,
        );
        let mut len = 0;
        while let Some(batch) = futures_util::StreamExt::next(&mut batches).await {
            len += batch.unwrap().len();
        }
        len
    };
    assert_eq!(received.frames, wire_len.div_ceil(16 * 1024));
}

/// A source that yields what the test feeds it, `Pending` in between.
struct Paced(mpsc::UnboundedReceiver<Bytes>);

impl Stream for Paced {
    type Item = Result<Bytes, Status>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.0.poll_recv(cx).map(|item| item.map(Ok))
    }
}

#[tokio::test]
async fn a_paced_source_has_each_message_sent_at_once() {
    // Sizes below a frame, between a frame and the threshold, and above the
    // threshold (a cut on a frame boundary with bytes carried over).
    let sizes = [10, 1024, 20 * 1024, 40 * 1024, 100 * 1024, 1, 33 * 1024, 7];
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (each, mut decoded) = mpsc::unbounded_channel();
    let server = tokio::spawn(serve_one(listener, None, each));
    let (feed, source) = mpsc::unbounded_channel();
    let client = tokio::spawn(send(addr, Paced(source), EncodeConfig::default()));
    for (index, &len) in sizes.iter().enumerate() {
        feed.send(message(index, len)).unwrap();
        // The next message is produced only once the server has this one:
        // a message held back for more would stall here. The timeout only
        // turns such a stall into a failure.
        let seen = tokio::time::timeout(Duration::from_secs(30), decoded.recv())
            .await
            .unwrap_or_else(|_| panic!("message {index} ({len} B) was not sent on its own"));
        assert_eq!(seen, Some(index));
    }
    drop(feed);
    client.await.unwrap();
    let received = server.await.unwrap();
    let expected: Vec<Bytes> = sizes
        .iter()
        .enumerate()
        .map(|(i, &len)| message(i, len))
        .collect();
    assert_eq!(received.messages, expected);
}

/// A source whose size hint says it is done after every item it yields,
/// whatever is left: a wrong hint, which must cost nothing but speed.
struct SaysDone(VecDeque<Result<Bytes, Status>>);

impl Stream for SaysDone {
    type Item = Result<Bytes, Status>;

    fn poll_next(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        Poll::Ready(self.0.pop_front())
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, Some(0))
    }
}

fn enveloped(payload: &[u8]) -> Vec<u8> {
    let mut wire = vec![0];
    wire.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    wire.extend_from_slice(payload);
    wire
}

/// Every frame of `body`, data as bytes and trailers as their status.
async fn frames<B: Body<Data = Bytes, Error = Status> + Unpin>(
    mut body: B,
) -> (Vec<Bytes>, Option<Result<Code, Code>>) {
    let mut data = Vec::new();
    let mut end = None;
    while let Some(frame) = body.frame().await {
        match frame {
            Ok(frame) => match frame.into_data() {
                Ok(bytes) => data.push(bytes),
                Err(frame) => {
                    let trailers = frame.into_trailers().ok();
                    let status = trailers.map(|t| Status::from_header_map(&t));
                    end = status.flatten().map(|status| Ok(status.code()));
                }
            },
            Err(status) => end = Some(Err(status.code())),
        }
    }
    (data, end)
}

#[tokio::test]
async fn a_one_message_request_is_one_payload_that_ends_the_body() {
    let message = Bytes::from_static(&[7; 100]);
    let source = futures_util::stream::iter([Ok(message)]);
    let mut body = EncodeBody::client(EncodeStream::new(source, Raw, EncodeConfig::new()));
    let frame = body.frame().await.unwrap().unwrap().into_data().unwrap();
    assert_eq!(frame, enveloped(&[7; 100]));
    // END_STREAM goes on that frame, not on an empty one after it.
    assert!(body.is_end_stream());
    assert!(body.frame().await.is_none());
}

#[tokio::test]
async fn a_size_hint_that_says_done_too_early_loses_no_message() {
    for mode in [BodyMode::Client, BodyMode::Server] {
        let items = [&b"one"[..], b"two", b"three"].map(|m| Ok(Bytes::from_static(m)));
        let source = SaysDone(items.into_iter().collect());
        let body = EncodeBody::new(EncodeStream::new(source, Raw, EncodeConfig::new()), mode);
        let (data, end) = frames(body).await;
        let wire: Vec<u8> = data.concat();
        let expected = [enveloped(b"one"), enveloped(b"two"), enveloped(b"three")].concat();
        assert_eq!(wire, expected, "{mode:?}");
        let expected_end = (mode == BodyMode::Server).then_some(Ok(Code::Ok));
        assert_eq!(end, expected_end, "{mode:?}");
    }
}

#[tokio::test]
async fn an_error_after_the_one_message_ends_the_answer_with_it() {
    let items = [
        Ok(Bytes::from_static(b"answer")),
        Err(Status::new(Code::DataLoss, "lost")),
    ];
    let source = SaysDone(items.into_iter().collect());
    let body = EncodeBody::server(EncodeStream::new(source, Raw, EncodeConfig::new()));
    let (data, end) = frames(body).await;
    assert_eq!(data.concat(), enveloped(b"answer"));
    assert_eq!(end, Some(Ok(Code::DataLoss)));
}

#[tokio::test]
async fn a_one_message_answer_over_the_send_limit_sends_no_byte() {
    let source = futures_util::stream::iter([Ok(Bytes::from(vec![1; 2048]))]);
    let config = EncodeConfig::new().with_max_send(1024);
    let body = EncodeBody::server(EncodeStream::new(source, Raw, config));
    let (data, end) = frames(body).await;
    assert!(data.is_empty(), "{} data frames", data.len());
    assert_eq!(end, Some(Ok(Code::ResourceExhausted)));
}

/// Writes `head`, inserts `field` by reference, writes `tail`; says no
/// length, so the prefix is written once the message is.
struct WithField {
    field: Bytes,
}

impl MessageEncoder for WithField {
    type Item = (&'static [u8], &'static [u8]);

    fn encode(&mut self, (head, tail): Self::Item, dst: &mut LinkedBytes) -> Result<(), Status> {
        dst.put_slice(head);
        dst.insert(self.field.clone());
        dst.put_slice(tail);
        Ok(())
    }
}

#[tokio::test]
async fn a_one_message_answer_keeps_a_large_field_by_reference() {
    let field = message(7, 40 * 1024);
    let encoder = WithField {
        field: field.clone(),
    };
    let source = futures_util::stream::iter([Ok((&b"head"[..], &b"tail"[..]))]);
    let body = EncodeBody::server(EncodeStream::new(source, encoder, EncodeConfig::new()));
    let (data, end) = frames(body).await;
    let payload = [&b"head"[..], &field, b"tail"].concat();
    assert_eq!(data.concat(), enveloped(&payload));
    assert_eq!(end, Some(Ok(Code::Ok)));
    // The field's whole frames leave as cuts of its own memory.
    let inside = |frame: &Bytes| {
        let start = field.as_ptr() as usize;
        (start..start + field.len()).contains(&(frame.as_ptr() as usize))
    };
    assert!(
        data.iter().any(inside),
        "no frame shares the field's memory"
    );
}

/// Says a length one byte short of what it writes.
struct ShortLen;

impl MessageEncoder for ShortLen {
    type Item = Bytes;

    fn encode(&mut self, item: Bytes, dst: &mut LinkedBytes) -> Result<(), Status> {
        dst.put_slice(&item);
        Ok(())
    }

    fn exact_len(&self, item: &Bytes) -> Option<usize> {
        Some(item.len() - 1)
    }
}

#[tokio::test]
async fn a_one_message_answer_is_prefixed_with_the_length_written() {
    let source = futures_util::stream::iter([Ok(Bytes::from_static(b"sixsix"))]);
    let body = EncodeBody::server(EncodeStream::new(source, ShortLen, EncodeConfig::new()));
    let (data, _) = frames(body).await;
    assert_eq!(data.concat(), enveloped(b"sixsix"));
}
