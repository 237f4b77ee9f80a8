//! Memory and allocations of the receive side, measured with a counting
//! global allocator.

use bytes::Bytes;
use grpc_stream_codec::decode::{Decoded, EnvelopeAssembler, SLAB_SIZE};
use grpc_stream_codec::envelope::EnvelopeHeader;
use grpc_stream_codec::{envelope::Limits, status::Code};
use test_support::alloc::{CountingAlloc, Usage, measure};

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc::ALWAYS;

const MIB: usize = 1024 * 1024;

fn envelope(wire: &mut Vec<u8>, len: usize, fill: u8) {
    wire.extend_from_slice(&EnvelopeHeader::message(false, len as u32).to_bytes());
    wire.resize(wire.len() + len, fill);
}

/// Cuts `wire` into frames of `size` bytes that share one allocation, made
/// before any measurement so that cutting and dropping frames costs nothing.
/// Also returns the whole buffer: while the caller holds it, dropping frames
/// frees nothing, and `is_unique()` on it tells whether any frame is still
/// referenced.
fn frames_of(wire: Vec<u8>, size: usize) -> (Bytes, Vec<Bytes>) {
    let whole = Bytes::from(wire);
    let frames = (0..whole.len())
        .step_by(size)
        .map(|start| whole.slice(start..whole.len().min(start + size)))
        .collect();
    (whole, frames)
}

fn frames(wire: Vec<u8>, size: usize) -> Vec<Bytes> {
    frames_of(wire, size).1
}

fn messages(assembler: &mut EnvelopeAssembler) -> Vec<Bytes> {
    let mut out = Vec::new();
    while let Some(decoded) = assembler.next().unwrap() {
        match decoded {
            Decoded::Message(message) => out.push(message),
            Decoded::EndStream(_) => panic!("unexpected trailers"),
        }
    }
    out
}

#[test]
fn retains_at_most_one_slab_after_a_large_message_and_small_ones() {
    let mut wire = Vec::new();
    envelope(&mut wire, 3 * MIB, 7);
    for i in 0..100 {
        envelope(&mut wire, 300, i);
    }
    let (whole, frames) = frames_of(wire, 16 * 1024);
    let mut seen = 0;
    let (assembler, usage) = measure(|| {
        let mut assembler = EnvelopeAssembler::new(Limits::default(), None);
        // Clones of shared frames: the frame list itself stays alive outside.
        for frame in &frames {
            assembler.push(frame.clone());
            for message in messages(&mut assembler) {
                seen += 1;
                assert!(message.len() == 3 * MIB || message.len() == 300);
            }
        }
        assembler.finish().unwrap();
        assembler
    });
    assert_eq!(seen, 101);
    // Every message is dropped; what is still live belongs to the assembler.
    println!("retained after 3 MiB + 100 x 300 B: {usage:?}");
    assert!(usage.live_delta <= SLAB_SIZE as isize, "{usage:?}");
    assert!(
        usage.live_delta > 0,
        "the slab is kept for the next message"
    );
    drop(frames);
    assert!(whole.is_unique(), "no frame is referenced any more");
    drop(assembler);
}

/// Feeds `frames` one at a time and reports live bytes, relative to the
/// start, between frames (the steady figure) and at any instant (a
/// reallocation counting as one block of its new size).
fn live_profile(
    assembler: &mut EnvelopeAssembler,
    frames: Vec<Bytes>,
) -> (Vec<Bytes>, isize, isize) {
    let mut live = 0isize;
    let mut between_frames = 0isize;
    let mut instant = 0isize;
    let mut out = Vec::with_capacity(4);
    for frame in frames {
        let (messages, usage): (Vec<Bytes>, Usage) = measure(|| messages_after(assembler, frame));
        instant = instant.max(live + usage.peak);
        live += usage.live_delta;
        between_frames = between_frames.max(live);
        out.extend(messages);
    }
    (out, between_frames, instant)
}

fn messages_after(assembler: &mut EnvelopeAssembler, frame: Bytes) -> Vec<Bytes> {
    assembler.push(frame);
    messages(assembler)
}

#[test]
fn a_large_message_owns_an_exact_allocation() {
    let mut wire = Vec::new();
    envelope(&mut wire, MIB, 3);
    let frames = frames(wire, 16 * 1024);
    let mut assembler = EnvelopeAssembler::new(Limits::default(), None);
    let (mut messages, between_frames, instant) = live_profile(&mut assembler, frames);
    assembler.finish().unwrap();
    assert_eq!(messages.len(), 1);
    let message = messages.pop().unwrap();
    assert_eq!(message.len(), MIB);
    assert!(message.iter().all(|&b| b == 3));
    assert!(message.is_unique(), "the assembler keeps nothing of it");
    let owned = message.try_into_mut().expect("unique");
    assert_eq!(owned.capacity(), MIB, "capacity == len");
    println!(
        "1 MiB in 16 KiB frames: peak live between frames {between_frames} B, \
         peak at any instant {instant} B"
    );
    assert!(
        between_frames < (MIB + MIB / 10) as isize,
        "{between_frames}"
    );
    assert!(instant < (MIB + MIB / 10) as isize, "{instant}");
}

#[test]
fn a_large_message_in_one_frame_is_one_exact_allocation() {
    let mut wire = Vec::new();
    envelope(&mut wire, MIB, 3);
    let frames = frames(wire, usize::MAX);
    let mut assembler = EnvelopeAssembler::new(Limits::default(), None);
    let (messages, usage) = measure(|| messages_after(&mut assembler, frames[0].clone()));
    assert_eq!(messages[0].len(), MIB);
    // The message plus the output vector holding it.
    assert_eq!(usage.allocations, 2, "{usage:?}");
    assert!(usage.peak < (MIB + 1024) as isize, "{usage:?}");
}

#[test]
fn a_declared_length_without_bytes_allocates_little() {
    let mut frame = EnvelopeHeader::message(false, 4 * MIB as u32)
        .to_bytes()
        .to_vec();
    frame.extend_from_slice(&[1; 10]);
    let frame = Bytes::from(frame);
    let mut assembler = EnvelopeAssembler::new(Limits::default(), None);
    let (next, usage) = measure(|| {
        assembler.push(frame);
        assembler.next()
    });
    assert_eq!(next.unwrap(), None);
    println!("4 MiB header + 10 bytes: {usage:?}");
    assert!(usage.allocated_bytes < 64 * 1024, "{usage:?}");
    let err = assembler.finish().unwrap_err();
    assert_eq!(err.code(), Code::Internal);
    assert_eq!(
        err.message(),
        "protocol error: body ended inside a message (10 of 4194304 bytes)"
    );
}

fn small_frames(count: usize) -> Vec<Bytes> {
    let mut wire = Vec::new();
    for i in 0..count {
        envelope(&mut wire, 300, i as u8);
    }
    frames(wire, 305)
}

#[test]
fn small_messages_allocate_nothing_in_steady_state() {
    let mut assembler = EnvelopeAssembler::new(Limits::default(), None);
    let mut frames = small_frames(1100).into_iter();
    for frame in frames.by_ref().take(100) {
        drop(messages_after(&mut assembler, frame));
    }
    let ((), usage) = measure(|| {
        for frame in frames {
            assembler.push(frame);
            let Some(Decoded::Message(message)) = assembler.next().unwrap() else {
                panic!("one message per frame");
            };
            assert_eq!(message.len(), 300);
        }
    });
    println!("1000 x 300 B, previous dropped: {usage:?}");
    assert_eq!(usage.allocations, 0, "{usage:?}");
}

#[test]
fn a_held_small_message_costs_at_most_one_slab_per_27() {
    let mut assembler = EnvelopeAssembler::new(Limits::default(), None);
    let count = 27 * 20;
    let frames = small_frames(count);
    let mut previous = None;
    let ((), usage) = measure(|| {
        for frame in frames {
            assembler.push(frame);
            let Some(Decoded::Message(message)) = assembler.next().unwrap() else {
                panic!("one message per frame");
            };
            // Keep the previous message alive while the next one arrives.
            previous = Some(message);
        }
    });
    drop(previous);
    let slabs = count.div_ceil(27);
    println!("{count} x 300 B, previous held: {usage:?} (at most {slabs} slabs)");
    assert!(usage.allocated_bytes <= slabs * SLAB_SIZE, "{usage:?}");
    // Each slab is its buffer and the shared header `bytes` puts next to it.
    assert!(usage.allocations <= 2 * slabs, "{usage:?}");
}

#[test]
fn an_over_limit_header_allocates_nothing_for_the_payload() {
    let limits = Limits::default().with_max_receive(1000);
    let mut assembler = EnvelopeAssembler::new(limits, None);
    let header = Bytes::from_static(&[0, 0, 0, 0x03, 0xe9]);
    let (result, usage) = measure(|| {
        assembler.push(header);
        assembler.next()
    });
    let err = result.unwrap_err();
    assert_eq!(err.code(), Code::ResourceExhausted);
    let text = "message size 1001 exceeds limit 1000";
    assert_eq!(err.message(), text);
    // The error text (and the copy the assembler keeps to repeat it) is all:
    // nothing near the 1001 declared bytes.
    println!("over-limit header: {usage:?}");
    assert!(usage.allocations <= 2, "{usage:?}");
    assert!(usage.allocated_bytes <= 2 * 64, "{usage:?}");
}

/// Decodes `count` 300-byte messages delivered in one frame, keeping them
/// all, and returns what that allocated.
fn one_frame_of(count: usize) -> Usage {
    let mut wire = Vec::new();
    for i in 0..count {
        envelope(&mut wire, 300, i as u8);
    }
    let frame = frames(wire, usize::MAX).pop().unwrap();
    let mut kept = Vec::with_capacity(count);
    let mut assembler = EnvelopeAssembler::new(Limits::default(), None);
    let ((), usage) = measure(|| {
        assembler.push(frame);
        while let Some(Decoded::Message(message)) = assembler.next().unwrap() {
            kept.push(message);
        }
    });
    assert_eq!(kept.len(), count);
    usage
}

#[test]
fn many_messages_in_one_frame_take_linear_work() {
    let small = one_frame_of(100);
    let large = one_frame_of(1000);
    println!("one frame, 100 messages: {small:?}; 1000 messages: {large:?}");
    // Ten times the messages: ten times the slabs, not a hundred times the bytes.
    assert!(
        large.allocated_bytes <= 11 * small.allocated_bytes,
        "{small:?} {large:?}"
    );
    assert!(
        large.allocations <= 11 * small.allocations,
        "{small:?} {large:?}"
    );
    // And the bytes are the messages' own: about one slab per 27 of them.
    assert!(large.allocated_bytes <= 1000usize.div_ceil(27) * SLAB_SIZE);
}

#[test]
fn a_held_message_does_not_pin_its_frame() {
    let mut wire = Vec::new();
    envelope(&mut wire, 300, 1);
    envelope(&mut wire, 10_000, 2);
    let (whole, frames) = frames_of(wire, usize::MAX);
    let mut assembler = EnvelopeAssembler::new(Limits::default(), None);
    let mut held = Vec::new();
    for frame in frames {
        held.extend(messages_after(&mut assembler, frame));
    }
    assert_eq!(held.len(), 2);
    // Both messages are alive, yet nothing refers to the frame any more:
    // even a small message that arrived whole in it was copied out.
    assert!(whole.is_unique());
    assert!(held[1].is_unique());
}

#[test]
fn a_tiny_first_message_is_one_exact_allocation_not_a_slab() {
    let mut wire = Vec::new();
    envelope(&mut wire, 12, 7);
    envelope(&mut wire, 12, 8);
    let (_whole, frames) = frames_of(wire, 17);
    let mut frames = frames.into_iter();
    let mut assembler = EnvelopeAssembler::new(Limits::default(), None);
    let (first, usage) = measure(|| messages_after(&mut assembler, frames.next().unwrap()));
    println!("one 12 B request: {usage:?}");
    assert_eq!(first, [Bytes::from(vec![7u8; 12])]);
    // A one-message stream (a unary request) costs its own bytes, not an
    // 8 KiB slab: the message and the test's result vector.
    assert!(usage.allocations <= 2, "{usage:?}");
    assert!(usage.allocated_bytes < 256, "{usage:?}");
    assert!(first[0].is_unique());
    // A second small message starts the slab as before.
    let (second, usage) = measure(|| messages_after(&mut assembler, frames.next().unwrap()));
    assert_eq!(second, [Bytes::from(vec![8u8; 12])]);
    assert!(usage.allocated_bytes >= SLAB_SIZE / 2, "{usage:?}");
}
