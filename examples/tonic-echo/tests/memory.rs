//! Memory, measured with a counting allocator: what a kept field retains
//! with this crate's codec and with tonic's stock one, and how the encoder
//! grows tonic's buffer.

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use http_body::Frame;
use http_body_util::{BodyExt, StreamBody};
use prost::Message;
use test_support::alloc::{CountingAlloc, measure};
use tokio_stream::StreamExt;
use tonic::Status;
use tonic::codec::{Codec, Decoder, EncodeBody, Encoder, Streaming};

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc::ALWAYS;

/// A message with a small field worth keeping beside a large one.
#[derive(Clone, PartialEq, Message)]
struct Record {
    #[prost(bytes = "bytes", tag = "1")]
    key: Bytes,
    #[prost(bytes = "bytes", tag = "2")]
    blob: Bytes,
}

/// Many small fields: a message whose encoding grows a buffer step by step
/// unless the encoder reserves its length up front.
#[derive(Clone, PartialEq, Message)]
struct Batch {
    #[prost(bytes = "bytes", repeated, tag = "1")]
    items: Vec<Bytes>,
}

const MIB: usize = 1 << 20;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
}

/// Ten records with `blob_len`-byte blobs as gRPC envelopes, cut into 16 KiB
/// frames the way h2 delivers them.
fn ten_records(blob_len: usize) -> Vec<Bytes> {
    let mut wire = Vec::new();
    for seq in 0..10u8 {
        let record = Record {
            key: Bytes::from(vec![seq; 16]),
            blob: Bytes::from(vec![seq; blob_len]),
        };
        wire.push(0);
        wire.extend_from_slice(&(record.encoded_len() as u32).to_be_bytes());
        record.encode(&mut wire).unwrap();
    }
    wire.chunks(16 * 1024).map(Bytes::copy_from_slice).collect()
}

/// Decodes the records through tonic's `Streaming`, keeps only each 16-byte
/// key, drops everything else (stream, buffer, messages) and returns the keys
/// with the live bytes left behind.
fn keep_keys<D>(decoder: D, frames: &Arc<Vec<Bytes>>) -> (Vec<Bytes>, isize)
where
    D: Decoder<Item = Record, Error = Status> + Send + 'static,
{
    let rt = runtime();
    // The frames stay owned out here, so freeing them is not counted.
    let shared = Arc::clone(frames);
    let (keys, usage) = measure(|| {
        rt.block_on(async move {
            let frames =
                (0..shared.len()).map(move |i| Ok::<_, Infallible>(Frame::data(shared[i].clone())));
            let body = StreamBody::new(tokio_stream::iter(frames));
            let mut stream = Streaming::new_request(decoder, body, None, None);
            let mut keys = Vec::with_capacity(10);
            while let Some(record) = stream.next().await {
                keys.push(record.unwrap().key);
            }
            keys
        })
    });
    for (seq, key) in keys.iter().enumerate() {
        assert_eq!(key.as_ref(), &[seq as u8; 16]);
    }
    (keys, usage.live_delta)
}

/// The same through the full framing's server `Grpc`: a client-streaming
/// handler keeps each record's key and answers with the last record.
fn keep_keys_full(frames: &Arc<Vec<Bytes>>) -> (Vec<Bytes>, isize) {
    let rt = runtime();
    let shared = Arc::clone(frames);
    let (keys, usage) = measure(|| {
        rt.block_on(async move {
            let frames =
                (0..shared.len()).map(move |i| Ok::<_, Infallible>(Frame::data(shared[i].clone())));
            let body = StreamBody::new(tokio_stream::iter(frames));
            let kept = Arc::new(std::sync::Mutex::new(Vec::with_capacity(10)));
            let handler_kept = Arc::clone(&kept);
            let handler = tower::service_fn(
                move |request: tonic::Request<grpc_stream_codec::tonic::Streaming<Record>>| {
                    let kept = Arc::clone(&handler_kept);
                    async move {
                        let mut records = request.into_inner();
                        while let Some(record) = records.message().await? {
                            kept.lock().unwrap().push(record.key);
                        }
                        Ok::<_, Status>(tonic::Response::new(Record::default()))
                    }
                },
            );
            let mut grpc = grpc_stream_codec::codegen::tonic::server::Grpc::new(
                grpc_stream_codec::tonic::ProstCodec::<Record, Record>::default(),
            );
            let response = grpc
                .client_streaming(handler, http::Request::new(body))
                .await;
            let trailers = response.into_body().collect().await.unwrap();
            assert_eq!(trailers.trailers().unwrap()["grpc-status"], "0");
            std::mem::take(&mut *kept.lock().unwrap())
        })
    });
    for (seq, key) in keys.iter().enumerate() {
        assert_eq!(key.as_ref(), &[seq as u8; 16]);
    }
    (keys, usage.live_delta)
}

#[test]
fn kept_fields_retain_only_themselves_with_the_full_framing() {
    let frames = Arc::new(ten_records(MIB));
    let (keys, live) = keep_keys_full(&frames);
    eprintln!("ten 16-byte keys kept from ten 1 MiB messages, full framing: {live} bytes retained");
    assert_eq!(keys.len(), 10);
    assert!(live <= 64 * 1024, "full framing retains {live} bytes");
}

#[test]
fn kept_fields_retain_only_themselves_with_the_adapter_codec() {
    let frames = Arc::new(ten_records(MIB));
    let mut stock_codec = tonic_prost::ProstCodec::<Record, Record>::default();
    let mut adapter_codec = grpc_stream_codec::tonic::ProstCodec::<Record, Record>::default();

    let (stock_keys, stock_live) = keep_keys(stock_codec.decoder(), &frames);
    let (adapter_keys, adapter_live) = keep_keys(adapter_codec.decoder(), &frames);
    eprintln!(
        "ten 16-byte keys kept from ten 1 MiB messages: stock tonic_prost::ProstCodec \
         retains {stock_live} bytes, grpc_stream_codec::tonic::ProstCodec retains {adapter_live} bytes"
    );
    assert!(
        adapter_live <= 64 * 1024,
        "adapter retains {adapter_live} bytes"
    );
    assert!(
        stock_live >= 8 * MIB as isize,
        "stock retains {stock_live} bytes"
    );
    drop((stock_keys, adapter_keys));
}

/// Allocations while tonic decodes 200 small messages of eight 16-byte
/// fields each, dropping every message before the next.
fn small_message_allocations<D>(decoder: D) -> usize
where
    D: Decoder<Item = Batch, Error = Status> + Send + 'static,
{
    let batch = Batch {
        items: (0..8u8).map(|i| Bytes::from(vec![i; 16])).collect(),
    };
    let mut wire = Vec::new();
    for _ in 0..200 {
        wire.push(0);
        wire.extend_from_slice(&(batch.encoded_len() as u32).to_be_bytes());
        batch.encode(&mut wire).unwrap();
    }
    let frames = Arc::new(vec![Bytes::from(wire)]);
    let shared = Arc::clone(&frames);
    let rt = runtime();
    let (decoded, usage) = measure(|| {
        rt.block_on(async move {
            let frames =
                (0..shared.len()).map(move |i| Ok::<_, Infallible>(Frame::data(shared[i].clone())));
            let body = StreamBody::new(tokio_stream::iter(frames));
            let mut stream = Streaming::new_request(decoder, body, None, None);
            let mut decoded = 0;
            while let Some(message) = stream.next().await {
                assert_eq!(message.unwrap(), batch);
                decoded += 1;
            }
            decoded
        })
    });
    assert_eq!(decoded, 200);
    usage.allocations
}

#[test]
fn small_messages_are_copied_into_a_reused_slab_not_one_allocation_per_field() {
    let stock =
        small_message_allocations(tonic_prost::ProstCodec::<Batch, Batch>::default().decoder());
    let adapter = small_message_allocations(
        grpc_stream_codec::tonic::ProstCodec::<Batch, Batch>::default().decoder(),
    );
    eprintln!(
        "200 messages of eight 16-byte fields: stock allocates {stock} times, adapter {adapter} times"
    );
    // Each message still allocates (and grows once) its `Vec<Bytes>`; the
    // fields add nothing, where borrowed decoding would add 8 per message.
    assert!(adapter <= 200 * 3, "adapter allocated {adapter} times");
}

/// Allocated bytes while tonic encodes one message with `encoder`.
fn encode_allocations<E>(encoder: E, message: Batch) -> usize
where
    E: Encoder<Item = Batch, Error = Status> + Send + 'static,
{
    let rt = runtime();
    let source = tokio_stream::iter([Ok::<_, Status>(message)]);
    let (encoded, usage) = measure(|| {
        rt.block_on(async move {
            let mut body = std::pin::pin!(EncodeBody::new_client(encoder, source, None, None));
            let mut frames = Vec::with_capacity(4);
            while let Some(frame) = body.frame().await {
                frames.push(frame.unwrap().into_data().unwrap());
            }
            frames
        })
    });
    assert!(!encoded.is_empty());
    usage.allocated_bytes
}

#[test]
fn the_encoder_grows_tonics_buffer_once_to_the_exact_length() {
    let batch = Batch {
        items: (0..2000u32)
            .map(|i| Bytes::from(vec![i as u8; 64]))
            .collect(),
    };
    let len = batch.encoded_len();
    let mut stock_codec = tonic_prost::ProstCodec::<Batch, Batch>::default();
    let mut adapter_codec = grpc_stream_codec::tonic::ProstCodec::<Batch, Batch>::default();

    let stock = encode_allocations(stock_codec.encoder(), batch.clone());
    let adapter = encode_allocations(adapter_codec.encoder(), batch);
    eprintln!(
        "encoding one {len}-byte message: stock allocates {stock} bytes, adapter {adapter} bytes"
    );
    // tonic's initial 8 KiB buffer, then one growth to the message plus its
    // 5-byte prefix; a little room for the stream machinery.
    assert!(
        adapter <= len + 8 * 1024 + 4 * 1024 + 5,
        "adapter allocated {adapter} bytes"
    );
    assert!(stock > adapter);
}

fn metadata() -> http::HeaderMap {
    let mut headers = http::HeaderMap::new();
    for i in 0..8 {
        headers.append(
            http::HeaderName::from_bytes(format!("x-key-{i}").as_bytes()).unwrap(),
            http::HeaderValue::from_str(&format!("value-{i}")).unwrap(),
        );
    }
    headers
}

#[test]
fn status_conversions_move_metadata_instead_of_copying_it() {
    let copy_cost = {
        let headers = metadata();
        measure(|| headers.clone()).1.allocations
    };
    assert!(copy_cost >= 2, "a copy of the metadata allocates");

    let ours = grpc_stream_codec::status::Status::new(
        grpc_stream_codec::status::Code::Aborted,
        String::from("m"),
    )
    .with_metadata(metadata());
    let (theirs, usage) = measure(|| tonic::Status::from(ours));
    eprintln!("ours -> tonic: {} allocations", usage.allocations);
    // tonic boxes its status: that one allocation, and nothing for the owned
    // message or the metadata, which are moved.
    assert!(usage.allocations <= 1, "{usage:?}");
    assert_eq!(theirs.metadata().len(), 8);

    let (back, usage) = measure(|| grpc_stream_codec::status::Status::from(theirs));
    eprintln!("tonic -> ours: {} allocations", usage.allocations);
    // The message (lent by tonic) and the boxed optional part; no metadata copy.
    assert!(usage.allocations <= 2, "{usage:?}");
    assert_eq!(back.metadata().map(http::HeaderMap::len), Some(8));
}

/// Live bytes held by an open `Streaming` that has decoded one 1 MiB record
/// and then 100 small ones, with nothing of the messages kept.
fn open_stream_live<D>(decoder: D) -> isize
where
    D: Decoder<Item = Record, Error = Status> + Send + 'static,
{
    let mut wire = Vec::new();
    let mut records = vec![Record {
        key: Bytes::from_static(b"big"),
        blob: Bytes::from(vec![1; MIB]),
    }];
    records.extend((0..100).map(|_| Record {
        key: Bytes::from_static(b"small"),
        blob: Bytes::from(vec![2; 100]),
    }));
    for record in &records {
        wire.push(0);
        wire.extend_from_slice(&(record.encoded_len() as u32).to_be_bytes());
        record.encode(&mut wire).unwrap();
    }
    let frames = Arc::new(
        wire.chunks(16 * 1024)
            .map(Bytes::copy_from_slice)
            .collect::<Vec<_>>(),
    );
    let shared = Arc::clone(&frames);
    let rt = runtime();
    let (stream, usage) = measure(|| {
        rt.block_on(async move {
            let frames =
                (0..shared.len()).map(move |i| Ok::<_, Infallible>(Frame::data(shared[i].clone())));
            let body = StreamBody::new(tokio_stream::iter(frames));
            let mut stream = Streaming::new_request(decoder, body, None, None);
            for _ in 0..101 {
                drop(stream.next().await.unwrap().unwrap());
            }
            // Still open: the client may send more.
            stream
        })
    });
    drop(stream);
    usage.live_delta
}

#[test]
fn tonics_own_read_buffer_keeps_its_high_water_mark_whatever_the_codec() {
    let stock = open_stream_live(tonic_prost::ProstCodec::<Record, Record>::default().decoder());
    let adapter = open_stream_live(
        grpc_stream_codec::tonic::ProstCodec::<Record, Record>::default().decoder(),
    );
    eprintln!(
        "an open stream after one 1 MiB message and 100 small ones holds {stock} bytes with the \
         stock codec and {adapter} bytes with the adapter codec (tonic's read buffer)"
    );
    // Outside any codec's reach: tonic grows its buffer to the largest
    // message and keeps it for the life of the stream.
    assert!(adapter >= MIB as isize);
    assert!(stock >= MIB as isize);
}

/// The Echo service refuses a `response_size` above its limit before it
/// allocates anything of that size: the call fails at once, and were it a
/// stream, its first poll (where a response's payload is allocated) is
/// measured too.
#[test]
fn an_oversized_response_size_is_refused_before_allocating() {
    let rt = runtime();
    let request = tonic_echo::adapter::EchoRequest {
        response_size: tonic_echo::MAX_RESPONSE_SIZE + 1,
        ..Default::default()
    };
    let (outcome, usage) = measure(|| {
        tonic_echo::server_stream(&request, None)
            .map(|mut responses| rt.block_on(responses.next()).map(|first| first.is_ok()))
    });
    eprintln!("oversized response_size: {usage:?}");
    let Err(status) = outcome else {
        panic!("an oversized response_size was accepted: first response {outcome:?}");
    };
    assert_eq!(status.code(), tonic::Code::ResourceExhausted, "{status:?}");
    // The status and its message; nothing near the 4 MiB asked for.
    assert!(
        usage.peak < 4 * 1024,
        "refusing took {} bytes at peak ({usage:?})",
        usage.peak
    );
}
