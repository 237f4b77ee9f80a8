//! Status: building an error and returning it through `Result<_, Status>`,
//! with this crate's compact `Status`, `tonic::Status` and (with the `volo`
//! feature) `volo_grpc::Status`, in the same run.
//!
//! `cargo bench --bench status` (add `--features volo` for the volo-grpc
//! arm); a quick pass: `... -- --warm-up-time 1 --measurement-time 2`.
//! It prints each `Result<u64, _>`'s size and `alloc/msg status <arm>`
//! (allocations per returned error).

mod support;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;

/// The text every arm's error carries: static, as most handlers write it.
const MESSAGE: &str = "no such item";

/// A status type under test.
trait Arm: Sized {
    const NAME: &'static str;
    fn not_found() -> Self;
    fn code(&self) -> i32;
}

impl Arm for grpc_stream_codec::status::Status {
    const NAME: &'static str = "grpc_stream_codec";

    fn not_found() -> Self {
        grpc_stream_codec::status::Status::new(grpc_stream_codec::status::Code::NotFound, MESSAGE)
    }

    fn code(&self) -> i32 {
        grpc_stream_codec::status::Status::code(self).as_i32()
    }
}

impl Arm for tonic::Status {
    const NAME: &'static str = "tonic";

    fn not_found() -> Self {
        tonic::Status::new(tonic::Code::NotFound, MESSAGE)
    }

    fn code(&self) -> i32 {
        tonic::Status::code(self) as i32
    }
}

#[cfg(feature = "volo")]
impl Arm for volo_grpc::Status {
    const NAME: &'static str = "volo_grpc";

    fn not_found() -> Self {
        volo_grpc::Status::new(volo_grpc::Code::NotFound, MESSAGE)
    }

    fn code(&self) -> i32 {
        volo_grpc::Status::code(self) as i32
    }
}

/// A handler's fallible call, kept out of line so the `Result` is really
/// returned. Generic so that every arm runs the same code; it also keeps
/// clippy's `result_large_err` quiet, which flags a concrete
/// `Result<u64, volo_grpc::Status>` (176-byte error) but not the others.
#[inline(never)]
fn lookup<S: Arm>(key: u64) -> Result<u64, S> {
    if key == u64::MAX {
        return Ok(key);
    }
    Err(S::not_found())
}

/// Calls `lookup` and reads the code, as a caller matching on the error
/// does; the status is dropped here.
fn call<S: Arm>() -> usize {
    match black_box(lookup::<S>(black_box(7))) {
        Ok(value) => value as usize,
        Err(status) => status.code() as usize,
    }
}

fn arm<S: Arm>(group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>) {
    let mut reported = false;
    group.bench_function(S::NAME, |b| {
        if !reported {
            reported = true;
            println!(
                "size_of Result<u64, {} Status>: {} bytes",
                S::NAME,
                size_of::<Result<u64, S>>()
            );
            support::print_allocs_per_message(&format!("status {}", S::NAME), 1000, || {
                call::<S>();
                1
            });
        }
        b.iter(call::<S>);
    });
}

fn status(c: &mut Criterion) {
    let mut group = c.benchmark_group("status/return_err");
    group.throughput(Throughput::Elements(1));
    arm::<grpc_stream_codec::status::Status>(&mut group);
    arm::<tonic::Status>(&mut group);
    #[cfg(feature = "volo")]
    arm::<volo_grpc::Status>(&mut group);
    group.finish();
}

criterion_group!(benches, status);
criterion_main!(benches);
