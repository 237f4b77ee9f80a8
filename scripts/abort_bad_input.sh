#!/usr/bin/env bash
# The bad-input suites of the example servers and clients, built with
# `panic = "abort"` (issue 24).
#
# Under the default `panic = "unwind"` a framework panic on peer input (say
# volo-grpc's `unreachable!()` on binary metadata) kills one tokio task: the
# peer sees a reset stream, a test that only checks "no OK" still passes, and
# nobody notices. Many release profiles abort instead, where the same header
# kills the process. This step builds the examples (volo-echo, tonic-echo:
# their servers, clients and binaries, and every dependency) with
# `panic = "abort"`, so any framework panic reached by these suites aborts
# the test process and fails CI.
#
# Stable cargo ignores `panic` for test targets; `-Zpanic-abort-tests`
# (allowed on a stable toolchain by RUSTC_BOOTSTRAP=1, as fuzz/README.md does
# for cargo-fuzz) builds the test harness with abort too and runs each test
# in its own process, so one abort fails that test and the others still run.
#
# It builds in its own target directory (every crate is built again with
# abort), which it deletes afterwards.
#
# Usage: scripts/abort_bad_input.sh   (from anywhere; needs cargo)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
target="${ABORT_TARGET_DIR:-$root/target/abort}"
cleanup() { rm -rf "$target"; }
trap cleanup EXIT

# Tests read the dev profile's `panic` under -Zpanic-abort-tests (cargo
# ignores a `panic` set on the test profile itself).
export CARGO_PROFILE_DEV_PANIC=abort
export RUSTC_BOOTSTRAP=1
export CARGO_INCREMENTAL=0
export CARGO_PROFILE_DEV_DEBUG=line-tables-only
export CARGO_PROFILE_TEST_DEBUG=line-tables-only

# One cargo invocation for the three packages: built one at a time, each
# resolved its own features, and the third build compiled the library and
# both frameworks again.
#
# volo-echo: hostile bodies, wire-level cases, hostile headers and statuses
# (both sides), trailers-only answers, binary metadata. tonic-echo: hostile
# bodies, hostile headers and statuses against full framing (both sides),
# and the server and client binaries. interop-tests: the behaviour suite's
# hostile cases, one definition for both adapters' servers and clients.
#
# The one test that shows what BinaryMetadataLayer prevents (volo-grpc's own
# server panicking on `-bin` metadata) would abort by design: skipped.
echo "== panic=abort: volo-echo, tonic-echo, interop-tests"
cargo test -Zpanic-abort-tests --target-dir "$target" --no-fail-fast \
    -p volo-echo -p tonic-echo -p interop-tests \
    --test bad_input --test wire --test hostile_metadata --test trailers_only \
    --test binary_metadata --test client_limits \
    --test full_framing_bad_input --test binaries \
    --test behaviour \
    -- --skip without_the_layer_volo_grpc_resets_the_stream

echo "abort_bad_input: no framework panic"
