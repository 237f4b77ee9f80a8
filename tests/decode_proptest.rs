//! Any valid sequence of envelopes, cut into frames anywhere, decodes to
//! exactly what was sent.

use bytes::{Bytes, BytesMut};
use grpc_stream_codec::compression::{Compression, CompressionEncoding};
use grpc_stream_codec::decode::{Decoded, EnvelopeAssembler};
use grpc_stream_codec::envelope::EnvelopeHeader;
use grpc_stream_codec::envelope::Limits;
use http::HeaderMap;
use proptest::prelude::*;

/// One message: its length, a seed for its contents, and whether it is sent
/// compressed.
#[derive(Clone, Debug)]
struct Spec {
    len: usize,
    seed: u8,
    compressed: bool,
}

/// How the stream is cut into frames.
#[derive(Clone, Debug)]
enum Cuts {
    AllInOne,
    OneByte,
    /// Frame sizes, used in turn.
    Sizes(Vec<usize>),
}

fn spec() -> impl Strategy<Value = Spec> {
    let len = prop_oneof![
        4 => 0usize..=600,
        3 => 3_000usize..=9_000,
        1 => 0usize..=300 * 1024,
    ];
    (len, any::<u8>(), any::<bool>()).prop_map(|(len, seed, compressed)| Spec {
        len,
        seed,
        compressed,
    })
}

fn cuts() -> impl Strategy<Value = Cuts> {
    prop_oneof![
        1 => Just(Cuts::AllInOne),
        1 => Just(Cuts::OneByte),
        4 => prop::collection::vec(1usize..=20_000, 1..8).prop_map(Cuts::Sizes),
        2 => prop::collection::vec(1usize..=12, 1..8).prop_map(Cuts::Sizes),
    ]
}

fn encoding() -> impl Strategy<Value = CompressionEncoding> {
    prop_oneof![
        Just(CompressionEncoding::Gzip),
        Just(CompressionEncoding::Deflate),
        Just(CompressionEncoding::Zstd),
    ]
}

/// Partly repetitive, partly varied contents, so compression has work to do.
fn contents(spec: &Spec) -> Vec<u8> {
    (0..spec.len)
        .map(|i| {
            let i = i as u32;
            if i & 64 == 0 {
                spec.seed
            } else {
                (i.wrapping_mul(2_654_435_761) >> 24) as u8 ^ spec.seed
            }
        })
        .collect()
}

/// The wire bytes of every envelope, and what decoding each must give.
fn encode(
    specs: &[Spec],
    encoding: CompressionEncoding,
    trailers: bool,
) -> (Vec<u8>, Vec<Vec<u8>>) {
    let mut wire = Vec::new();
    let mut payloads = Vec::new();
    for spec in specs {
        let payload = contents(spec);
        let body = if spec.compressed {
            let mut out = BytesMut::new();
            Compression::new(encoding)
                .compress(&mut &payload[..], &mut out)
                .unwrap();
            out.to_vec()
        } else {
            payload.clone()
        };
        wire.extend_from_slice(
            &EnvelopeHeader::message(spec.compressed, body.len() as u32).to_bytes(),
        );
        wire.extend_from_slice(&body);
        payloads.push(payload);
    }
    if trailers {
        let block = b"grpc-status: 0\r\nx-check: done\r\n";
        wire.extend_from_slice(&EnvelopeHeader::trailers(block.len() as u32).to_bytes());
        wire.extend_from_slice(block);
    }
    (wire, payloads)
}

fn split(wire: &[u8], cuts: &Cuts) -> Vec<Bytes> {
    match cuts {
        Cuts::AllInOne => vec![Bytes::copy_from_slice(wire)],
        Cuts::OneByte => wire.chunks(1).map(Bytes::copy_from_slice).collect(),
        Cuts::Sizes(sizes) => {
            let mut frames = Vec::new();
            let mut rest = wire;
            for size in sizes.iter().cycle() {
                if rest.is_empty() {
                    break;
                }
                let (frame, tail) = rest.split_at((*size).min(rest.len()));
                frames.push(Bytes::copy_from_slice(frame));
                rest = tail;
            }
            frames
        }
    }
}

/// Runs the assembler over `frames`; returns the messages and the trailers.
fn assemble(
    mut assembler: EnvelopeAssembler,
    frames: Vec<Bytes>,
) -> (Vec<Bytes>, Option<HeaderMap>) {
    let mut messages = Vec::new();
    let mut trailers = None;
    for frame in frames {
        assembler.push(frame);
        while let Some(decoded) = assembler.next().unwrap() {
            match decoded {
                Decoded::Message(message) => messages.push(message),
                Decoded::EndStream(map) => {
                    assert!(trailers.is_none());
                    trailers = Some(*map);
                }
            }
        }
    }
    assembler.finish().unwrap();
    (messages, trailers)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn any_cut_decodes_to_the_input(
        specs in prop::collection::vec(spec(), 0..5),
        encoding in encoding(),
        trailers in any::<bool>(),
        cuts in cuts(),
    ) {
        let (wire, payloads) = encode(&specs, encoding, trailers);
        let frames = split(&wire, &cuts);

        let decoding = EnvelopeAssembler::new(Limits::default(), Some(encoding));
        let (messages, got_trailers) = assemble(decoding, frames);
        prop_assert_eq!(messages.len(), payloads.len());
        for (message, payload) in messages.iter().zip(&payloads) {
            prop_assert!(message[..] == payload[..], "message of {} bytes differs", payload.len());
        }
        prop_assert_eq!(got_trailers.is_some(), trailers);
        if let Some(map) = got_trailers {
            prop_assert_eq!(&map["x-check"], "done");
        }

    }
}
