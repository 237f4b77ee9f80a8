//! Shared by the criterion benches: an allocation counter and the helpers
//! that report allocations per message next to criterion's timings.
//!
//! Each bench binary is its own crate and uses only part of this module.
#![allow(dead_code)]

pub mod alloc;
pub mod compression;

use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use futures_core::Stream;

/// Runs `run` a few times to reach steady state, then counts the
/// allocations of `rounds` more runs and prints them per message, as
/// `alloc/msg <label>: <value>`.
///
/// `run` returns how many messages it handled; the count is taken outside
/// criterion's timing loop.
pub fn print_allocs_per_message(label: &str, rounds: usize, mut run: impl FnMut() -> usize) {
    for _ in 0..3 {
        run();
    }
    let (messages, usage) = alloc::count(|| (0..rounds).map(|_| run()).sum::<usize>());
    println!(
        "alloc/msg {label}: {:.3} ({:.0} B/msg)",
        usage.allocations as f64 / messages as f64,
        usage.allocated_bytes as f64 / messages as f64,
    );
}

/// Polls a stream that never returns `Pending` to its end, handing each
/// item to `f`.
pub fn drain_ready<S: Stream + Unpin>(stream: &mut S, mut f: impl FnMut(S::Item)) {
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        match Pin::new(&mut *stream).poll_next(&mut cx) {
            Poll::Ready(Some(item)) => f(item),
            Poll::Ready(None) => return,
            Poll::Pending => panic!("bench sources are always ready"),
        }
    }
}

/// A long-lived stream handed a burst of ready messages per iteration, so
/// its per-stream state (batch buffer, compression contexts) is in steady
/// state after the first.
pub type Burst<T> = test_support::burst::Burst<T, grpc_stream_codec::status::Status>;

/// Polls `stream` until it returns `Pending`, handing each item to `f`.
pub fn drain_burst<S: Stream + Unpin>(stream: &mut S, mut f: impl FnMut(S::Item)) {
    let mut cx = Context::from_waker(Waker::noop());
    while let Poll::Ready(Some(item)) = Pin::new(&mut *stream).poll_next(&mut cx) {
        f(item);
    }
}
