#!/usr/bin/env bash
# The standard gRPC interop service (grpc.testing.TestService) matrix:
# {tonic, volo, grpcio} clients x {tonic, volo, grpcio} servers, every case
# of examples/grpc-interop (grpc's "Interop Test Case Descriptions"). Our
# servers and clients are tonic with grpc-stream-codec's full framing and
# volo-grpc with its adapter; grpcio (gRPC C-core) is the neutral peer.
# A case a peer cannot express is listed as n/a with the reason, never
# dropped silently. Prints a Markdown matrix; exits 1 if any case failed.
#
# Usage: interop/testing_matrix.sh [--release] [--no-build]
#   --no-build: use the binaries already in target/ (interop/run.sh builds
#   them with the rest of the workspace first).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
profile=debug
build=1
for arg in "$@"; do
    case "$arg" in
    --release) profile=release ;;
    --no-build) build=0 ;;
    *) echo "unknown argument $arg" >&2; exit 2 ;;
    esac
done
work=$(mktemp -d)
pids=()
cleanup() {
    { for pid in "${pids[@]}"; do kill "$pid" || true; done; } 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT

cases=(empty_unary large_unary client_compressed_unary server_compressed_unary
    client_streaming client_compressed_streaming server_streaming
    server_compressed_streaming ping_pong empty_stream cancel_after_begin
    cancel_after_first_response timeout_on_sleeping_server custom_metadata
    status_code_and_message special_status_message unimplemented_method
    unimplemented_service)

# What a server cannot express: "server case" -> reason.
declare -A unavailable=(
    ["grpcio client_compressed_unary"]="grpcio's server API does not show whether a request arrived compressed (C-core consumes grpc-encoding), so it cannot refuse the uncompressed expect_compressed probe"
    ["grpcio client_compressed_streaming"]="grpcio's server API does not show whether a request arrived compressed (C-core consumes grpc-encoding), so it cannot refuse the uncompressed expect_compressed probe"
)

if ! python3 -c "import grpc, grpc_tools" 2>/dev/null; then
    python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore \
        'grpcio>=1.60,<2' 'grpcio-tools>=1.60,<2'
fi
python3 "$root/interop/grpc_testing/stubs.py" "$work/stubs"

if [ "$build" = 1 ]; then
    build_flags=()
    [ "$profile" = release ] && build_flags+=(--release)
    (cd "$root" && cargo build "${build_flags[@]}" -p grpc-interop --bins)
fi
bin="${CARGO_TARGET_DIR:-$root/target}/$profile"

# start_server NAME COMMAND...: waits for "listening on ADDR", stores the
# port in $NAME_port.
start_server() {
    local name=$1
    shift
    # Created first: the background process may not have opened it yet
    # when the loop below first reads it.
    : >"$work/$name-server.log"
    "$@" >"$work/$name-server.log" 2>&1 &
    pids+=($!)
    local addr=""
    for _ in $(seq 1 300); do
        addr=$(sed -n 's/^listening on //p' "$work/$name-server.log" | head -n1)
        [ -n "$addr" ] && break
        sleep 0.1
    done
    if [ -z "$addr" ]; then
        echo "$name server did not start:" >&2
        cat "$work/$name-server.log" >&2
        exit 1
    fi
    printf -v "${name}_port" '%s' "${addr##*:}"
    echo "$name server listening on $addr"
}

start_server tonic "$bin/tonic-interop-server" --port 0
start_server volo "$bin/volo-interop-server" --port 0
start_server grpcio python3 "$root/interop/grpc_testing/server.py" --stubs "$work/stubs" --port 0

client_command() { # client port
    case "$1" in
    tonic) echo "$bin/tonic-interop-client" ;;
    volo) echo "$bin/volo-interop-client" ;;
    grpcio) echo "python3 $root/interop/grpc_testing/client.py --stubs $work/stubs" ;;
    esac
}

results="$work/results.tsv"
failed=0
for client in tonic volo grpcio; do
    for server in tonic volo grpcio; do
        port_var="${server}_port"
        port=${!port_var}
        run=()
        for case in "${cases[@]}"; do
            reason=${unavailable["$server $case"]:-}
            if [ -n "$reason" ]; then
                printf '%s\t%s\t%s\tna\t%s\n' "$client" "$server" "$case" "$reason" >>"$results"
            else
                run+=("$case")
            fi
        done
        log="$work/$client-$server.log"
        list=$(IFS=,; echo "${run[*]}")
        # shellcheck disable=SC2046 # the grpcio command is several words
        if $(client_command "$client") --server_host=127.0.0.1 --server_port="$port" \
            --test_case="$list" --use_tls=false >"$log" 2>&1; then
            status=0
        else
            status=$?
        fi
        for case in "${run[@]}"; do
            line=$(grep -E "^(PASS|FAIL) $case(:|$)" "$log" | head -n1 || true)
            case "$line" in
            "PASS $case") outcome=pass detail="" ;;
            "FAIL $case"*) outcome=fail detail=${line#FAIL "$case": } ;;
            *) outcome=fail detail="no result (client exit $status)" ;;
            esac
            printf '%s\t%s\t%s\t%s\t%s\n' "$client" "$server" "$case" "$outcome" "$detail" >>"$results"
            if [ "$outcome" = fail ]; then
                failed=1
                echo "FAIL $client client -> $server server: $case: $detail" >&2
            fi
        done
        if [ "$status" != 0 ] && ! grep -q "^FAIL" "$log"; then
            failed=1
            echo "$client client -> $server server exited $status:" >&2
            cat "$log" >&2
        fi
    done
done

echo "== grpc.testing.TestService matrix (client -> server)"
python3 "$root/interop/grpc_testing/matrix.py" "$results"
if [ "$failed" != 0 ]; then
    echo "testing matrix: FAILED"
    exit 1
fi
echo "testing matrix: all cases passed"
