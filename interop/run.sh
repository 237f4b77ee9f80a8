#!/usr/bin/env bash
# Interop with gRPC C-core through Python's grpcio, the neutral third peer:
#   - grpcio clients against the tonic full-framing and volo-adapter Echo
#     servers;
#   - this crate's tonic (codec, full framing) and volo clients against a
#     grpcio Echo server;
# all four RPC kinds, uncompressed / gzip / deflate, payloads 0 B, 256 B,
# 1 MiB and 4 MiB - 5 B (an EchoRequest of exactly 4 MiB), 1,000-message
# streams, over-limit refusals on both sides, a server error after k
# messages, and trailers-only answers to our clients (empty streams, errors
# before the first message). Prints a matrix (implementation x RPC kind x
# compression) and exits non-zero if any case failed. Then the standard
# interop service matrix (interop/testing_matrix.sh).
#
# Usage: interop/run.sh [--release]   (needs python3 with pip, and cargo)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
profile=debug
[ "${1:-}" = "--release" ] && profile=release
work=$(mktemp -d)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT

echo "== installing grpcio and grpcio-tools (PyPI)"
python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore \
    'grpcio>=1.60,<2' 'grpcio-tools>=1.60,<2' 2>&1 | grep -v "^$" || true
python3 -m grpc_tools.protoc -I "$root/proto" --python_out="$work" \
    --grpc_python_out="$work" echo.proto

echo "== building the example servers and clients ($profile)"
build_flags=()
[ "$profile" = release ] && build_flags+=(--release)
# The same feature set as `cargo test --workspace --all-features`, so CI
# reuses what the tests built: `--tests` turns on the dev-dependencies, whose
# features a plain `--bins` build would leave out, rebuilding every crate.
(cd "$root" && cargo build "${build_flags[@]}" --workspace --all-features --bins --tests)
bin="${CARGO_TARGET_DIR:-$root/target}/$profile"

# start_server NAME COMMAND...: starts a server that prints "listening on
# ADDR", records its pid, and stores the address in $NAME_addr.
start_server() {
    local name=$1
    shift
    # Created first: the loop below may read it before the server opens it.
    : >"$work/$name.log"
    "$@" >"$work/$name.log" 2>&1 &
    pids+=($!)
    local addr=""
    for _ in $(seq 1 300); do
        addr=$(sed -n 's/^listening on //p' "$work/$name.log" | head -n1)
        [ -n "$addr" ] && break
        sleep 0.1
    done
    if [ -z "$addr" ]; then
        echo "$name did not start:" >&2
        cat "$work/$name.log" >&2
        exit 1
    fi
    printf -v "${name}_addr" '%s' "$addr"
    echo "$name listening on $addr"
}

start_server tonicfull "$bin/tonic-echo-server" --listen 127.0.0.1:0 --framing full
start_server volo "$bin/volo-echo-server" --listen 127.0.0.1:0
start_server python python3 "$root/interop/echo_server.py" --stubs "$work" --port 0

results="$work/results.jsonl"
failed=0

echo "== grpcio clients -> our servers"
python3 "$root/interop/interop_client.py" --stubs "$work" --addr "$tonicfull_addr" \
    --label "grpcio client -> tonic+full framing server" --results "$results" >"$work/py-tonicfull.log" 2>&1 \
    || { failed=1; grep FAIL "$work/py-tonicfull.log" || true; }
python3 "$root/interop/interop_client.py" --stubs "$work" --addr "$volo_addr" \
    --label "grpcio client -> volo+codec server" --results "$results" >"$work/py-volo.log" 2>&1 \
    || { failed=1; grep FAIL "$work/py-volo.log" || true; }

echo "== our clients -> grpcio server"
AT_LIMIT=4194299
record() { # peer rpc compression size ok
    printf '{"peer": "%s", "rpc": "%s", "compression": "%s", "size": %s, "ok": %s}\n' \
        "$1" "$2" "$3" "$4" "$5" >>"$results"
}
run_client() { # label compression size rpc client-args...
    local label=$1 compression=$2 size=$3 rpc=$4
    shift 4
    if "$@" >>"$work/clients.log" 2>&1; then
        record "$label" "$rpc" "$compression" "$size" true
    else
        record "$label" "$rpc" "$compression" "$size" false
        echo "FAIL $label $rpc $compression $size: $*" >&2
        failed=1
    fi
}
for client in tonic tonic-full volo; do
    case "$client" in
    tonic)
        label="tonic+codec client -> grpcio server"
        cli=("$bin/tonic-echo-client" --addr "http://$python_addr")
        ;;
    tonic-full)
        label="tonic+full framing client -> grpcio server"
        cli=("$bin/tonic-echo-client" --framing full --addr "http://$python_addr")
        ;;
    volo)
        label="volo+codec client -> grpcio server"
        cli=("$bin/volo-echo-client" --addr "$python_addr")
        ;;
    esac
    for compression in none gzip deflate; do
        for size in 0 256 1048576 $AT_LIMIT; do
            count=2
            # A non-zero seq adds 2 bytes to a reply, so at the limit only one fits.
            [ "$size" = $AT_LIMIT ] && count=1
            for rpc in unary server client bidi; do
                run_client "$label" "$compression" "$size" "$rpc" "${cli[@]}" \
                    --rpc "$rpc" --size "$size" --count "$count" --compression "$compression"
            done
        done
        for rpc in server client bidi; do
            run_client "$label" "$compression" 256 "${rpc}_1000" "${cli[@]}" \
                --rpc "$rpc" --size 256 --count 1000 --compression "$compression"
        done
    done
    # Above the limit: the grpcio server refuses our request, and our client
    # refuses the grpcio server's reply (codec only keeps tonic's framing,
    # which answers OUT_OF_RANGE: only the other clients are held to it).
    run_client "$label" none $((AT_LIMIT + 1)) unary_over_limit "${cli[@]}" \
        --rpc unary --size $((AT_LIMIT + 1)) --count 1 --expect-code RESOURCE_EXHAUSTED
    if [ "$client" != tonic ]; then
        run_client "$label" none $((AT_LIMIT + 1)) server_stream_reply_over_limit "${cli[@]}" \
            --rpc server --size $((AT_LIMIT + 1)) --count 1 --expect-code RESOURCE_EXHAUSTED
    fi
    run_client "$label" none 64 server_stream_error_after_k "${cli[@]}" \
        --rpc server --size 64 --count 10 --metadata x-fail-after=3 --expect-code ABORTED
    # Trailers-only: C-core puts the status in the response headers when a
    # call has sent no message. Empty streams must end OK with 0 messages,
    # an error before the first message must be that error.
    for compression in none gzip deflate; do
        ask=(--compression "$compression" --metadata "x-response-encoding=$compression")
        run_client "$label" "$compression" 0 bidi_empty "${cli[@]}" "${ask[@]}" \
            --rpc bidi --count 0
        empty_server=("${cli[@]}" "${ask[@]}" --rpc server --count 0 --metadata x-response-count=0)
        run_client "$label" "$compression" 0 server_stream_empty "${empty_server[@]}" \
            --expect-responses 0
        for rpc in unary server client bidi; do
            run_client "$label" "$compression" 64 "${rpc}_trailers_only_error" "${cli[@]}" \
                "${ask[@]}" --rpc "$rpc" --size 64 --count 2 --metadata x-fail-after=0 \
                --expect-code ABORTED
        done
    done
done

echo "== the volo adapter client's trailers-only tests against grpcio (cargo test)"
if (cd "$root" && cargo test "${build_flags[@]}" --workspace --all-features \
    --test grpcio_trailers_only -- --ignored) >"$work/cargo-grpcio.log" 2>&1; then
    grep -E "^test result" "$work/cargo-grpcio.log"
else
    failed=1
    cat "$work/cargo-grpcio.log" >&2
fi

echo "== matrix"
python3 "$root/interop/matrix.py" "$results"

echo "== grpc.testing.TestService: {tonic, volo, grpcio} clients x servers"
# Reuses the binaries built above (grpc-interop is a workspace member).
bash "$root/interop/testing_matrix.sh" --no-build "${build_flags[@]}" || failed=1

if [ "$failed" != 0 ]; then
    echo "interop: FAILED"
    exit 1
fi
echo "interop: all cases passed"
