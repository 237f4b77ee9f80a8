//! The receive budget against a counting allocator: what it counts is what
//! is allocated, a kept message stays counted until its last handle is
//! dropped, and the budget costs at most one allocation per message.

use bytes::Bytes;
use grpc_stream_codec::budget::SharedBudget;
use grpc_stream_codec::decode::{Decoded, EnvelopeAssembler};
use grpc_stream_codec::envelope::EnvelopeHeader;
use grpc_stream_codec::envelope::Limits;
use test_support::alloc::{CountingAlloc, measure};

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc::ALWAYS;

const KIB: usize = 1024;
const MIB: usize = 1024 * KIB;

fn wire(sizes: &[usize]) -> Vec<u8> {
    let mut wire = Vec::new();
    for (i, &len) in sizes.iter().enumerate() {
        wire.extend_from_slice(&EnvelopeHeader::message(false, len as u32).to_bytes());
        wire.resize(wire.len() + len, i as u8);
    }
    wire
}

/// Frames sharing one allocation made before any measurement.
fn frames(wire: Vec<u8>, size: usize) -> Vec<Bytes> {
    let whole = Bytes::from(wire);
    (0..whole.len())
        .step_by(size)
        .map(|start| whole.slice(start..whole.len().min(start + size)))
        .collect()
}

fn feed(assembler: &mut EnvelopeAssembler, frames: &[Bytes], out: &mut Vec<Bytes>) {
    for frame in frames {
        assembler.push(frame.clone());
        while let Some(decoded) = assembler.next().unwrap() {
            match decoded {
                Decoded::Message(message) => out.push(message),
                Decoded::EndStream(_) => panic!("no trailers here"),
            }
        }
        assert!(!assembler.is_blocked(), "the budget is large enough here");
    }
}

#[test]
fn a_kept_message_stays_counted_until_its_last_handle_is_dropped() {
    let budget = SharedBudget::new(8 * MIB);
    let frames = frames(wire(&[MIB]), 16 * KIB);
    let (message, usage) = measure(|| {
        let mut assembler = EnvelopeAssembler::new(Limits::default(), None);
        assembler.set_budget(budget.clone());
        let mut out = Vec::new();
        feed(&mut assembler, &frames, &mut out);
        // The stream ends; the message lives on with the handler.
        drop(assembler);
        out.pop().unwrap()
    });
    assert_eq!(message.len(), MIB);
    // What is counted is what stays allocated: the message's own memory
    // (plus the few bytes of its owner box).
    assert_eq!(budget.stats().in_use, MIB);
    assert!(
        usage.live_delta >= MIB as isize && usage.live_delta < (MIB + 256) as isize,
        "{usage:?}"
    );
    // Growth was counted as it was allocated: the peak stayed near 1.5x.
    assert!(budget.stats().peak <= MIB + MIB / 2, "{:?}", budget.stats());

    // A slice of it keeps it alive, and counted.
    let slice = message.slice(10..20);
    drop(message);
    assert_eq!(budget.stats().in_use, MIB);
    let ((), freed) = measure(|| drop(slice));
    assert!(freed.live_delta <= -(MIB as isize), "{freed:?}");
    assert_eq!(budget.stats().in_use, 0);
}

/// Allocations per message in a long-lived stream's steady state.
fn allocations_per_message(sizes: &[usize], frame: usize, budget: Option<&SharedBudget>) -> f64 {
    let frames = frames(wire(sizes), frame);
    let mut assembler = EnvelopeAssembler::new(Limits::default(), None);
    if let Some(budget) = budget {
        assembler.set_budget(budget.clone());
    }
    // The consumer drops each message before the next frame.
    let mut out = Vec::with_capacity(sizes.len());
    let mut run = |out: &mut Vec<Bytes>| {
        for frame in &frames {
            feed(&mut assembler, std::slice::from_ref(frame), out);
            out.clear();
        }
    };
    // Warm up: the slab is allocated once.
    run(&mut out);
    let rounds = 10;
    let ((), usage) = measure(|| {
        for _ in 0..rounds {
            run(&mut out);
        }
    });
    usage.allocations as f64 / (rounds * sizes.len()) as f64
}

#[test]
fn the_budget_costs_no_allocation_for_small_messages_and_one_for_large_ones() {
    let budget = SharedBudget::new(64 * MIB);
    let small = vec![300; 100];
    // One message per frame, each dropped before the next arrives.
    let off = allocations_per_message(&small, 305, None);
    let on = allocations_per_message(&small, 305, Some(&budget));
    assert_eq!((off, on), (0.0, 0.0));

    let large = vec![64 * KIB; 8];
    let off = allocations_per_message(&large, 16 * KIB, None);
    let on = allocations_per_message(&large, 16 * KIB, Some(&budget));
    assert_eq!(on - off, 1.0, "off {off}, on {on}");
    assert_eq!(budget.stats().in_use, 0);
}
