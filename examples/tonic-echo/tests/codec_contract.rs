//! The decoder's remaining-bytes contract, driven through tonic's own
//! `EncodeBody` and `Streaming`: every message, of every size down to 0 B,
//! is consumed exactly, so back-to-back messages decode in order; over-reads
//! are refused by tonic itself and under-reads would desynchronise the
//! messages that follow.

use std::convert::Infallible;

use bytes::Bytes;
use grpc_stream_codec::tonic::{ProstDecoder, ProstEncoder};
use http_body::Frame;
use http_body_util::{BodyExt, StreamBody};
use prost::Message;
use tokio_stream::StreamExt;
use tonic::Status;
use tonic::codec::{CompressionEncoding, EncodeBody, Streaming};
use tonic_echo::adapter::EchoRequest;
use tonic_echo::request_payload;

/// Payload sizes around every boundary a varint length, tonic's 8 KiB buffer
/// or an h2 frame could make interesting. Size 0 encodes to a 0-byte message.
const SIZES: [usize; 16] = [
    0,
    1,
    2,
    126,
    127,
    128,
    4095,
    8187,
    8192,
    8193,
    16_384,
    16_385,
    65_535,
    65_536,
    300_000,
    1 << 20,
];

fn messages() -> Vec<EchoRequest> {
    SIZES
        .iter()
        .enumerate()
        .flat_map(|(seq, &size)| {
            let payload = request_payload(seq as u32, size);
            // The same payload bare, and with trailing fields after it.
            [
                EchoRequest {
                    payload: payload.clone(),
                    ..EchoRequest::default()
                },
                EchoRequest {
                    payload,
                    response_count: seq as u32 + 1,
                    response_size: 300,
                },
            ]
        })
        .collect()
}

/// Frames a list of messages with tonic's encoder, then re-cuts the bytes
/// into `frame_len`-byte frames so message boundaries fall anywhere.
async fn framed(
    messages: Vec<EchoRequest>,
    compression: Option<CompressionEncoding>,
    frame_len: usize,
) -> Vec<Bytes> {
    let source = tokio_stream::iter(messages.into_iter().map(Ok::<_, Status>));
    let body = EncodeBody::new_client(ProstEncoder::default(), source, compression, None);
    let all = body.collect().await.unwrap().to_bytes();
    all.chunks(frame_len).map(Bytes::copy_from_slice).collect()
}

fn body(
    frames: Vec<Bytes>,
) -> StreamBody<impl tokio_stream::Stream<Item = Result<Frame<Bytes>, Infallible>>> {
    StreamBody::new(tokio_stream::iter(
        frames.into_iter().map(|frame| Ok(Frame::data(frame))),
    ))
}

async fn decode_all(
    frames: Vec<Bytes>,
    compression: Option<CompressionEncoding>,
) -> Result<Vec<EchoRequest>, Status> {
    let mut stream = Streaming::new_request(
        ProstDecoder::<EchoRequest>::default(),
        body(frames),
        compression,
        Some(4 << 20),
    );
    let mut decoded = Vec::new();
    while let Some(message) = stream.next().await {
        decoded.push(message?);
    }
    Ok(decoded)
}

#[tokio::test]
async fn every_size_is_consumed_exactly_so_streams_stay_in_sync() {
    let expected = messages();
    assert_eq!(expected[0].encoded_len(), 0, "a 0 B message is covered");
    for compression in [None, Some(CompressionEncoding::Gzip)] {
        for frame_len in [7, 16_384, 1 << 24] {
            let frames = framed(expected.clone(), compression, frame_len).await;
            let decoded = decode_all(frames, compression)
                .await
                .unwrap_or_else(|status| {
                    panic!("{compression:?}, {frame_len}-byte frames: {status:?}")
                });
            assert_eq!(decoded.len(), expected.len());
            for (index, (got, want)) in decoded.iter().zip(&expected).enumerate() {
                assert!(
                    got == want,
                    "message {index} differs ({compression:?}, {frame_len})"
                );
            }
        }
    }
}

#[tokio::test]
async fn a_message_that_fails_to_decode_is_consumed_and_reported_as_internal() {
    // Field 1 declares 64 bytes, but the message holds 3: prost fails.
    let bad = Bytes::from_static(&[0x0a, 0x40, 1, 2, 3]);
    let prost_error = EchoRequest::decode(bad.clone()).unwrap_err().to_string();
    let mut framed = vec![0u8];
    framed.extend_from_slice(&(bad.len() as u32).to_be_bytes());
    framed.extend_from_slice(&bad);

    let mut stream = Streaming::new_request(
        ProstDecoder::<EchoRequest>::default(),
        body(vec![Bytes::from(framed)]),
        None,
        None,
    );
    let status = stream.next().await.unwrap().unwrap_err();
    assert_eq!(status.code(), tonic::Code::Internal);
    assert_eq!(status.message(), prost_error);
    // tonic keeps its read state after a decode error: had the decoder left
    // bytes behind, the next poll would decode them again and fail again.
    assert!(stream.next().await.is_none());
}
