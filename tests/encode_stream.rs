//! Behaviour of `EncodeStream` and `EncodeBody`, checked against an
//! independent reference decoder written here from the gRPC wire format.

use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use bytes::{BufMut, Bytes};
use futures_core::Stream;
use grpc_stream_codec::compression::decompress;
use grpc_stream_codec::encode::{
    EncodeBody, EncodeConfig, EncodeStream, EncodedBatch, MessageEncoder,
};
use grpc_stream_codec::{
    compression::{Compression, CompressionEncoding},
    status::{Code, Status},
};
use http_body::Body;
use linkedbytes::LinkedBytes;
use proptest::prelude::*;

// ---------------------------------------------------------------- helpers

/// One part of a test message: copied in, inserted by reference, or a
/// failure of the encoder at that point.
#[derive(Clone, Debug)]
enum Piece {
    Copy(Bytes),
    Ref(Bytes),
    Fail,
}

#[derive(Clone, Debug)]
struct Msg(Vec<Piece>);

impl Msg {
    fn copied(payload: impl Into<Bytes>) -> Msg {
        Msg(vec![Piece::Copy(payload.into())])
    }

    /// A copied head, a large field inserted by reference, a copied tail.
    fn with_ref(head: &[u8], body: Bytes, tail: &[u8]) -> Msg {
        Msg(vec![
            Piece::Copy(Bytes::copy_from_slice(head)),
            Piece::Ref(body),
            Piece::Copy(Bytes::copy_from_slice(tail)),
        ])
    }

    fn payload(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for piece in &self.0 {
            match piece {
                Piece::Copy(bytes) | Piece::Ref(bytes) => out.extend_from_slice(bytes),
                Piece::Fail => {}
            }
        }
        out
    }
}

struct TestEncoder {
    /// Whether to report exact lengths (prefix written up front).
    exact: bool,
    /// Added to the reported exact length, to model a wrong encoder.
    skew: usize,
}

impl MessageEncoder for TestEncoder {
    type Item = Msg;

    fn encode(&mut self, item: Msg, dst: &mut LinkedBytes) -> Result<(), Status> {
        for piece in item.0 {
            match piece {
                Piece::Copy(bytes) => dst.put_slice(&bytes),
                Piece::Ref(bytes) => dst.insert(bytes),
                Piece::Fail => return Err(Status::new(Code::InvalidArgument, "cannot encode")),
            }
        }
        Ok(())
    }

    fn exact_len(&self, item: &Msg) -> Option<usize> {
        let fails = item.0.iter().any(|p| matches!(p, Piece::Fail));
        (self.exact && !fails).then(|| item.payload().len() + self.skew)
    }
}

enum Step {
    Item(Msg),
    Error(Status),
    Pending,
}

/// A source that plays a script; `Pending` steps wake the task at once, so
/// the script also runs under a real executor.
struct Script(VecDeque<Step>);

impl Script {
    fn new(steps: impl IntoIterator<Item = Step>) -> Script {
        Script(steps.into_iter().collect())
    }

    fn items(msgs: impl IntoIterator<Item = Msg>) -> Script {
        Script::new(msgs.into_iter().map(Step::Item))
    }
}

impl Stream for Script {
    type Item = Result<Msg, Status>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        match self.0.pop_front() {
            None => Poll::Ready(None),
            Some(Step::Item(msg)) => Poll::Ready(Some(Ok(msg))),
            Some(Step::Error(status)) => Poll::Ready(Some(Err(status))),
            Some(Step::Pending) => {
                cx.waker().wake_by_ref();
                Poll::Pending
            }
        }
    }
}

#[derive(Debug)]
enum Event {
    Batch(EncodedBatch),
    Error(Status),
    Pending,
}

/// Polls until the stream ends, recording every poll's outcome.
fn run(mut stream: EncodeStream<Script, TestEncoder>) -> Vec<Event> {
    let mut cx = Context::from_waker(Waker::noop());
    let mut events = Vec::new();
    for _ in 0..100_000 {
        match Pin::new(&mut stream).poll_next(&mut cx) {
            Poll::Ready(None) => {
                // Ended means ended.
                assert!(matches!(
                    Pin::new(&mut stream).poll_next(&mut cx),
                    Poll::Ready(None)
                ));
                return events;
            }
            Poll::Ready(Some(Ok(batch))) => events.push(Event::Batch(batch)),
            Poll::Ready(Some(Err(status))) => events.push(Event::Error(status)),
            Poll::Pending => events.push(Event::Pending),
        }
    }
    panic!("stream did not end");
}

fn encode(source: Script, config: EncodeConfig, exact: bool) -> Vec<Event> {
    run(EncodeStream::new(
        source,
        TestEncoder { exact, skew: 0 },
        config,
    ))
}

fn batches(events: &[Event]) -> Vec<&EncodedBatch> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Batch(batch) => Some(batch),
            _ => None,
        })
        .collect()
}

/// The reference decoder: splits wire bytes at 5-byte prefixes and
/// decompresses flagged payloads. Returns (compressed flag, payload).
fn reference_decode(wire: &[u8], encoding: Option<CompressionEncoding>) -> Vec<(bool, Vec<u8>)> {
    let mut out = Vec::new();
    let mut rest = wire;
    while !rest.is_empty() {
        assert!(rest.len() >= 5, "truncated prefix");
        let flag = rest[0];
        assert!(flag <= 1, "bad flag {flag}");
        let len = u32::from_be_bytes([rest[1], rest[2], rest[3], rest[4]]) as usize;
        assert!(rest.len() >= 5 + len, "truncated payload");
        let mut payload = &rest[5..5 + len];
        if flag == 1 {
            let encoding = encoding.expect("compressed flag without an encoding");
            let mut plain = Vec::new();
            decompress(encoding, &mut payload, &mut plain, usize::MAX).unwrap();
            out.push((true, plain));
        } else {
            out.push((false, payload.to_vec()));
        }
        rest = &rest[5 + len..];
    }
    out
}

fn wire_of(events: &[Event]) -> Vec<u8> {
    let mut wire = Vec::new();
    for batch in batches(events) {
        for node in batch.nodes() {
            wire.extend_from_slice(node);
        }
    }
    wire
}

fn decode_all(events: &[Event], encoding: Option<CompressionEncoding>) -> Vec<Vec<u8>> {
    let messages = reference_decode(&wire_of(events), encoding);
    let compressed = encoding.is_some_and(|e| !e.is_identity());
    for (flag, _) in &messages {
        assert_eq!(*flag, compressed, "flag for {encoding:?}");
    }
    messages.into_iter().map(|(_, payload)| payload).collect()
}

fn pattern(len: usize, seed: u8) -> Bytes {
    // Varied but deterministic content, so misplaced bytes are visible.
    (0..len)
        .map(|i| {
            (i as u32)
                .wrapping_mul(2_654_435_761)
                .rotate_left(seed as u32 % 32) as u8
                ^ seed
        })
        .collect::<Vec<u8>>()
        .into()
}

const ENCODINGS: [Option<CompressionEncoding>; 5] = [
    None,
    Some(CompressionEncoding::Identity),
    Some(CompressionEncoding::Gzip),
    Some(CompressionEncoding::Deflate),
    Some(CompressionEncoding::Zstd),
];

fn config_for(encoding: Option<CompressionEncoding>) -> EncodeConfig {
    EncodeConfig::new().with_compression(encoding.map(Compression::new))
}

fn error_code(event: &Event) -> Option<Code> {
    match event {
        Event::Error(status) => Some(status.code()),
        _ => None,
    }
}

fn message_counts(events: &[Event]) -> Vec<usize> {
    batches(events).iter().map(|b| b.message_count()).collect()
}

// ------------------------------------------------------------------ tests

#[test]
fn small_8k_64k_and_inserted_payloads_round_trip_with_every_compression() {
    let big_field = pattern(100 * 1024, 7);
    let msgs = vec![
        Msg::copied(&b"small"[..]),
        Msg::copied(pattern(8 * 1024, 1)),
        Msg::copied(pattern(64 * 1024, 2)),
        Msg::with_ref(b"head", big_field.clone(), b"tail"),
        Msg::copied(Bytes::new()),
        // An insert first: the prefix alone is split off.
        Msg(vec![Piece::Ref(pattern(9000, 3))]),
        Msg(vec![Piece::Ref(pattern(10, 4)), Piece::Ref(pattern(20, 5))]),
        Msg::copied(&b"last"[..]),
    ];
    let expected: Vec<Vec<u8>> = msgs.iter().map(Msg::payload).collect();
    for encoding in ENCODINGS {
        for exact in [false, true] {
            let events = encode(Script::items(msgs.clone()), config_for(encoding), exact);
            assert!(events.iter().all(|e| matches!(e, Event::Batch(_))));
            assert_eq!(
                decode_all(&events, encoding),
                expected,
                "{encoding:?}, exact {exact}"
            );
        }
    }
}

#[test]
fn uncompressed_inserted_field_is_sent_by_reference() {
    let field = pattern(64 * 1024, 9);
    for exact in [false, true] {
        let source = Script::items([
            Msg::copied(&b"before"[..]),
            Msg::with_ref(b"h", field.clone(), b"t"),
        ]);
        let events = encode(source, EncodeConfig::new(), exact);
        let batch = batches(&events)[0];
        assert!(
            batch
                .nodes()
                .iter()
                .any(|node| node.as_ptr() == field.as_ptr() && node.len() == field.len()),
            "the field's own allocation is a node"
        );
        assert_eq!(
            decode_all(&events, None)[1],
            [b"h", &field[..], b"t"].concat()
        );
    }
}

#[test]
fn prefix_split_off_into_an_earlier_node_is_backfilled() {
    // The placeholder ends up in the node before the inserted field, and
    // the message's length is only known after its last piece.
    let source = Script::items([
        Msg::copied(&b"first"[..]),
        Msg::with_ref(b"xy", pattern(300, 1), b"z"),
    ]);
    let events = encode(source, EncodeConfig::new(), false);
    let batch = batches(&events)[0];
    let first_node = &batch.nodes()[0];
    // Node 0: message 1 and message 2's prefix and head.
    assert_eq!(&first_node[..10], b"\0\0\0\0\x05first");
    assert_eq!(&first_node[10..], &[0, 0, 0, 1, 47, b'x', b'y'][..]);
}

#[test]
fn a_wrong_exact_length_still_gives_the_written_length() {
    let msgs = [Msg::copied(pattern(40, 1)), Msg::copied(pattern(7, 2))];
    let encoder = TestEncoder {
        exact: true,
        skew: 3,
    };
    let stream = EncodeStream::new(Script::items(msgs.clone()), encoder, EncodeConfig::new());
    let events = run(stream);
    let expected: Vec<_> = msgs.iter().map(Msg::payload).collect();
    assert_eq!(decode_all(&events, None), expected);
}

#[test]
fn completed_message_is_readable_when_the_source_is_pending() {
    let source = Script::new([
        Step::Item(Msg::copied(&b"one"[..])),
        Step::Pending,
        Step::Item(Msg::copied(&b"two"[..])),
        Step::Pending,
        Step::Pending,
        Step::Item(Msg::copied(&b"three"[..])),
    ]);
    let events = encode(source, EncodeConfig::new(), false);
    // Far below the threshold, each message still goes out at its Pending.
    match &events[..] {
        [
            Event::Batch(one),
            Event::Batch(two),
            Event::Pending,
            Event::Batch(three),
        ] => {
            assert_eq!(one.to_bytes(), &b"\0\0\0\0\x03one"[..]);
            assert_eq!(two.to_bytes(), &b"\0\0\0\0\x03two"[..]);
            assert_eq!(three.to_bytes(), &b"\0\0\0\0\x05three"[..]);
        }
        other => panic!("unexpected events {other:?}"),
    }
}

#[test]
fn source_error_flushes_completed_messages_then_continues() {
    let source = Script::new([
        Step::Item(Msg::copied(&b"a"[..])),
        Step::Item(Msg::copied(&b"b"[..])),
        Step::Item(Msg::copied(&b"c"[..])),
        Step::Error(Status::new(Code::Unavailable, "source hiccup")),
        Step::Item(Msg::copied(&b"d"[..])),
        Step::Error(Status::new(Code::Aborted, "again")),
        Step::Error(Status::new(Code::DataLoss, "and again")),
        Step::Item(Msg::copied(&b"e"[..])),
    ]);
    let events = encode(source, EncodeConfig::new(), false);
    let codes: Vec<_> = events.iter().map(error_code).collect();
    assert_eq!(
        codes,
        [
            None,
            Some(Code::Unavailable),
            None,
            Some(Code::Aborted),
            Some(Code::DataLoss),
            None
        ]
    );
    assert_eq!(message_counts(&events), [3, 1, 1]);
    assert_eq!(
        decode_all(&events, None),
        [b"a", b"b", b"c", b"d", b"e"].map(|m| m.to_vec())
    );
}

#[test]
fn encode_error_delivers_completed_discards_partial_and_ends() {
    // Below the threshold, so the partial message shares the completed
    // messages' batch and has to be cut off it.
    let big = pattern(5_000, 3);
    let partials = [
        // Partial in the trailing buffer.
        Msg(vec![Piece::Copy(pattern(100, 1)), Piece::Fail]),
        // Partial split across nodes by an insert.
        Msg(vec![
            Piece::Copy(pattern(100, 1)),
            Piece::Ref(big.clone()),
            Piece::Copy(pattern(10, 2)),
            Piece::Fail,
        ]),
        // Failing before writing anything.
        Msg(vec![Piece::Fail]),
    ];
    for encoding in ENCODINGS {
        for partial in &partials {
            let source = Script::items([
                Msg::copied(&b"a"[..]),
                Msg::with_ref(b"b", big.clone(), b"b"),
                partial.clone(),
                Msg::copied(&b"never"[..]),
            ]);
            let events = encode(source, config_for(encoding), false);
            assert_eq!(events.len(), 2, "{encoding:?}: {events:?}");
            assert_eq!(error_code(&events[1]), Some(Code::InvalidArgument));
            assert_eq!(message_counts(&events), [2]);
            let expected = [b"a".to_vec(), [b"b", &big[..], b"b"].concat()];
            // The reference decoder rejects trailing partial bytes.
            assert_eq!(decode_all(&events, encoding), expected, "{encoding:?}");
        }
    }
}

#[test]
fn encode_error_first_is_yielded_alone_and_ends() {
    let source = Script::items([Msg(vec![Piece::Fail]), Msg::copied(&b"x"[..])]);
    let events = encode(source, EncodeConfig::new(), false);
    assert_eq!(events.len(), 1);
    assert_eq!(error_code(&events[0]), Some(Code::InvalidArgument));
}

#[test]
fn send_limit_fails_with_resource_exhausted_and_ends() {
    for exact in [false, true] {
        let source = Script::items([
            Msg::copied(pattern(100, 1)),
            Msg::with_ref(b"", pattern(101, 2), b""),
            Msg::copied(&b"never"[..]),
        ]);
        let events = encode(source, EncodeConfig::new().with_max_send(100), exact);
        assert_eq!(message_counts(&events), [1], "exact {exact}");
        assert_eq!(events.len(), 2);
        let Event::Error(status) = &events[1] else {
            panic!("expected an error");
        };
        assert_eq!(status.code(), Code::ResourceExhausted);
        assert_eq!(status.message(), "message size 101 exceeds limit 100");
        assert_eq!(decode_all(&events, None), [pattern(100, 1).to_vec()]);
    }
}

#[test]
fn send_limit_applies_to_the_compressed_length() {
    let gzip = Some(CompressionEncoding::Gzip);
    // 10 KiB of zeros compresses far below the limit and is sent.
    let source = Script::items([Msg::copied(vec![0u8; 10 * 1024])]);
    let events = encode(source, config_for(gzip).with_max_send(200), false);
    assert_eq!(decode_all(&events, gzip), [vec![0u8; 10 * 1024]]);
    // 300 varied bytes stay above the limit under gzip and are refused at
    // their compressed size.
    let payload = pattern(300, 5);
    let mut compressed = Vec::new();
    Compression::new(CompressionEncoding::Gzip)
        .compress(&mut &payload[..], &mut compressed)
        .unwrap();
    assert!(compressed.len() > 200 && compressed.len() != 300);
    let source = Script::items([Msg::copied(payload)]);
    let events = encode(source, config_for(gzip).with_max_send(200), false);
    let Event::Error(status) = &events[0] else {
        panic!("expected an error, got {events:?}");
    };
    assert_eq!(status.code(), Code::ResourceExhausted);
    let expected = format!("message size {} exceeds limit 200", compressed.len());
    assert_eq!(status.message(), expected);
}

#[test]
fn identity_writes_flag_zero_and_the_exact_payload() {
    let payload = pattern(1000, 3);
    for exact in [false, true] {
        let source = Script::items([Msg::copied(payload.clone())]);
        let config = config_for(Some(CompressionEncoding::Identity));
        let events = encode(source, config, exact);
        let mut expected = vec![0, 0, 0, 0x03, 0xe8];
        expected.extend_from_slice(&payload);
        assert_eq!(wire_of(&events), expected);
    }
}

#[test]
fn ready_messages_batch_up_to_the_threshold() {
    let msgs = (0..100u8).map(|i| Msg::copied(pattern(1024, i)));
    let events = encode(Script::items(msgs), EncodeConfig::new(), false);
    let all = batches(&events);
    assert!(all.len() > 1);
    let (last, full) = all.split_last().unwrap();
    for batch in full {
        assert!(batch.len() >= 32 * 1024, "batch of {} bytes", batch.len());
        // Soft threshold: a batch stops at the first message crossing it.
        assert!(batch.len() < 32 * 1024 + 1029);
    }
    assert!(last.message_count() >= 1);
    assert_eq!(message_counts(&events).iter().sum::<usize>(), 100);
    assert_eq!(decode_all(&events, None).len(), 100);
}

#[test]
fn threshold_zero_yields_one_message_per_batch() {
    let msgs = (0..100u8).map(|i| Msg::copied(pattern(1024, i)));
    let config = EncodeConfig::new().with_batch_threshold(0);
    let events = encode(Script::items(msgs), config, false);
    assert_eq!(message_counts(&events), vec![1; 100]);
}

#[test]
fn threshold_never_splits_a_message() {
    let msgs = [
        Msg::copied(pattern(100_000, 1)),
        Msg::copied(pattern(10, 2)),
    ];
    let config = EncodeConfig::new().with_batch_threshold(1024);
    let events = encode(Script::items(msgs), config, false);
    let all = batches(&events);
    assert_eq!(all.len(), 2);
    assert_eq!(all[0].len(), 100_005);
    assert_eq!(all[0].message_count(), 1);
}

// ------------------------------------------------------------------- body

type Frames = Vec<Result<http_body::Frame<Bytes>, Status>>;

/// A response (`server`) or request body encoding `source`.
fn test_body(source: Script, server: bool) -> EncodeBody<Script, TestEncoder> {
    let stream = EncodeStream::new(
        source,
        TestEncoder {
            exact: false,
            skew: 0,
        },
        EncodeConfig::new(),
    );
    if server {
        EncodeBody::server(stream)
    } else {
        EncodeBody::client(stream)
    }
}

fn body_frames(source: Script, server: bool) -> Frames {
    let mut body = test_body(source, server);
    let mut cx = Context::from_waker(Waker::noop());
    let mut frames = Vec::new();
    for _ in 0..1000 {
        match Pin::new(&mut body).poll_frame(&mut cx) {
            Poll::Ready(Some(frame)) => frames.push(frame),
            Poll::Ready(None) => {
                assert!(body.is_end_stream());
                return frames;
            }
            Poll::Pending => {}
        }
    }
    panic!("body did not end");
}

fn data_of(frames: &Frames) -> Vec<u8> {
    frames
        .iter()
        .filter_map(|f| f.as_ref().ok()?.data_ref().cloned())
        .flatten()
        .collect()
}

/// HTTP/2's default frame size, which data frames fill.
const FRAME: usize = 16 * 1024;

#[test]
fn server_body_sends_nodes_as_data_then_ok_trailers() {
    let field = pattern(40_000, 1);
    let source = Script::new([
        Step::Item(Msg::with_ref(b"a", field.clone(), b"b")),
        Step::Pending,
        Step::Pending,
        Step::Item(Msg::copied(&b"c"[..])),
    ]);
    let frames = body_frames(source, true);
    // Data in whole frames but the last of a batch: [prefix+"a" and the
    // field's head], the field's next whole frame by reference, its tail
    // and "b" (the source was pending then, as it was when the body asked
    // for more before the first frame: the batch, past the threshold, left
    // without waiting), then [prefix+"c"]; then trailers.
    let shape: Vec<Option<usize>> = frames
        .iter()
        .map(|frame| frame.as_ref().unwrap().data_ref().map(Bytes::len))
        .collect();
    let tail = 6 + 40_000 + 1 - 2 * FRAME;
    assert_eq!(
        shape,
        [Some(FRAME), Some(FRAME), Some(tail), Some(6), None],
        "{shape:?}"
    );
    let second = frames[1].as_ref().unwrap().data_ref().unwrap();
    assert_eq!(second.as_ptr(), field[FRAME - 6..].as_ptr(), "copied");
    let decoded = reference_decode(&data_of(&frames), None);
    assert_eq!(decoded.len(), 2);
    let trailers = frames[4].as_ref().unwrap().trailers_ref().unwrap();
    assert_eq!(trailers["grpc-status"], "0");
    assert!(trailers.get("grpc-message").is_none());
}

#[test]
fn server_body_ends_with_the_error_status_in_trailers() {
    let source = Script::new([
        Step::Item(Msg::copied(&b"a"[..])),
        Step::Error(Status::new(Code::NotFound, "gone away")),
        Step::Item(Msg::copied(&b"not sent"[..])),
    ]);
    let frames = body_frames(source, true);
    assert_eq!(frames.len(), 2);
    assert_eq!(data_of(&frames), b"\0\0\0\0\x01a");
    let trailers = frames[1].as_ref().unwrap().trailers_ref().unwrap();
    assert_eq!(trailers["grpc-status"], "5");
    assert_eq!(trailers["grpc-message"], "gone away");
}

#[test]
fn client_body_returns_the_error_as_body_error() {
    let source = Script::new([
        Step::Item(Msg::copied(&b"a"[..])),
        Step::Item(Msg(vec![Piece::Fail])),
    ]);
    let frames = body_frames(source, false);
    assert_eq!(frames.len(), 2);
    assert_eq!(data_of(&frames), b"\0\0\0\0\x01a");
    let error = frames[1].as_ref().unwrap_err();
    assert_eq!(error.code(), Code::InvalidArgument);
}

/// After each frame of the body: whether it said it had ended (HTTP/2 then
/// sends that frame with END_STREAM and polls no more).
fn end_flags(source: Script, server: bool) -> Vec<bool> {
    let mut body = test_body(source, server);
    let mut cx = Context::from_waker(Waker::noop());
    let mut flags = Vec::new();
    for _ in 0..1000 {
        match Pin::new(&mut body).poll_frame(&mut cx) {
            Poll::Ready(Some(_)) => flags.push(body.is_end_stream()),
            Poll::Ready(None) => return flags,
            Poll::Pending => {}
        }
    }
    panic!("body did not end");
}

#[test]
fn a_client_body_ends_with_its_last_frame_never_before() {
    let small = || Msg::copied(&b"a"[..]);
    // Ready messages and the source's end: known with the only batch.
    assert_eq!(end_flags(Script::items([small(), small()]), false), [true]);
    // A batch of several frames: only the last one ends the body.
    let flags = end_flags(Script::items([Msg::copied(pattern(100_000, 1))]), false);
    assert!(flags.len() > 1, "{flags:?}");
    assert_eq!(flags.iter().filter(|ended| **ended).count(), 1, "{flags:?}");
    assert_eq!(flags.last(), Some(&true));
    // The source pending between messages (still pending when the body
    // asks for a batch to fill the first frame): the first batch leaves
    // before the end is known.
    let source = Script::new([
        Step::Item(small()),
        Step::Pending,
        Step::Pending,
        Step::Item(small()),
    ]);
    assert_eq!(end_flags(source, false), [false, true]);
    // Ready by then: the two batches leave as one frame, which ends the body.
    let source = Script::new([Step::Item(small()), Step::Pending, Step::Item(small())]);
    assert_eq!(end_flags(source, false), [true]);
    // A source error after a message: the batch does not claim the end, so
    // the error still reaches the transport.
    let source = Script::new([
        Step::Item(small()),
        Step::Error(Status::new(Code::Aborted, "stop")),
    ]);
    assert_eq!(end_flags(source, false), [false, true]);
    // A response body ends with its trailers, never with its data.
    assert_eq!(end_flags(Script::items([small()]), true), [false, true]);
}

#[test]
fn client_body_ends_without_trailers() {
    let frames = body_frames(Script::items([Msg::copied(&b"a"[..])]), false);
    assert_eq!(frames.len(), 1);
    assert!(frames[0].as_ref().unwrap().is_data());
}

// --------------------------------------------------------------- proptest

fn arb_size() -> impl Strategy<Value = usize> {
    prop_oneof![
        4 => 0usize..64,
        3 => 64usize..16 * 1024,
        1 => 16 * 1024usize..=200 * 1024,
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn any_sizes_pending_and_compression_decode_to_the_input(
        msgs in prop::collection::vec((arb_size(), any::<bool>(), any::<bool>()), 0..12),
        encoding in prop::sample::select(ENCODINGS.to_vec()),
        threshold in prop::sample::select(vec![0usize, 1024, 32 * 1024]),
        exact in any::<bool>(),
    ) {
        let mut steps = Vec::new();
        let mut expected = Vec::new();
        for (i, (size, by_ref, pending_before)) in msgs.into_iter().enumerate() {
            if pending_before {
                steps.push(Step::Pending);
            }
            let payload = pattern(size, i as u8);
            let msg = if by_ref && size >= 2 {
                Msg::with_ref(&payload[..1], payload.slice(1..size - 1), &payload[size - 1..])
            } else {
                Msg::copied(payload.clone())
            };
            expected.push(payload.to_vec());
            steps.push(Step::Item(msg));
        }
        let config = config_for(encoding).with_batch_threshold(threshold);
        let events = encode(Script::new(steps), config, exact);
        prop_assert!(events.iter().all(|e| !matches!(e, Event::Error(_))));
        prop_assert_eq!(decode_all(&events, encoding), expected);
    }
}

#[tokio::test]
async fn body_collects_under_a_runtime_across_pending() {
    use http_body_util::BodyExt;
    let source = Script::new([
        Step::Pending,
        Step::Item(Msg::copied(&b"a"[..])),
        Step::Pending,
        Step::Item(Msg::with_ref(b"b", pattern(9000, 1), b"c")),
    ]);
    let stream = EncodeStream::new(
        source,
        TestEncoder {
            exact: false,
            skew: 0,
        },
        EncodeConfig::new(),
    );
    let collected = EncodeBody::server(stream).collect().await.unwrap();
    assert_eq!(collected.trailers().unwrap()["grpc-status"], "0");
    let decoded = reference_decode(&collected.to_bytes(), None);
    assert_eq!(decoded.len(), 2);
    assert_eq!(decoded[1].1, [b"b", &pattern(9000, 1)[..], b"c"].concat());
}
