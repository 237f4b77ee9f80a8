#!/usr/bin/env bash
# Instructions per message one server spends on one matrix cell, by
# callgrind (deterministic, whatever else the machine does).
#
#   scripts/callgrind_cell.sh SERVER_BINARY "SERVER FLAGS" SIZE COUNT [SECONDS]
#
# e.g. scripts/callgrind_cell.sh target/release/volo-echo-server "" 4096 16
#      scripts/callgrind_cell.sh target/release/volo-echo-server "--stock" 4096 16
#      scripts/callgrind_cell.sh target/release/bare-echo-server "" 4096 16
#
# The server runs under callgrind with one runtime worker; the stock tonic
# load client (target/release/tonic-echo-load-client, 4 streams) asks for
# ServerStream calls of COUNT responses of SIZE bytes. After a warm-up the
# counters are zeroed, SECONDS (default 20) later they are dumped, and the
# client's message count over that window divides the instructions. Prints
# `instructions_per_message N` and the top functions by inclusive cost to
# standard error; with CG_KEEP=PATH the dump is kept there (for
# callgrind_annotate). Needs valgrind (callgrind_control) and release builds of
# the servers and of tonic-echo-load-client.
#
# The client counts the messages it received, so a short window over long
# streams (256 messages, a few seconds under callgrind) is off by what was in
# flight at either end (up to a quarter seen). CG_COUNT=FUNCTION counts the
# server's calls of its handler's per-message function instead (its name
# contains FUNCTION: `server_stream_payload` for volo-echo-server,
# `BytesMut::zeroed` for bare-echo-server and tonic-echo-server) and prints
# `instructions_per_served_message N` as well.
set -euo pipefail
server=$1 flags=$2 size=$3 count=$4 seconds=${5:-20}
client=${CLIENT:-target/release/tonic-echo-load-client}
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT

mkfifo "$work/server.out" "$work/client.in" "$work/client.out"
# shellcheck disable=SC2086 # flags are words
TOKIO_WORKER_THREADS=1 valgrind --tool=callgrind --callgrind-out-file="$work/cg.out" \
    "$server" --listen 127.0.0.1:0 $flags >"$work/server.out" 2>/dev/null &
server_pid=$!
exec 3<"$work/server.out"
read -r line <&3
addr=${line#listening on }

"$client" --addr "http://$addr" --stack stock --rpc server --size "$size" --count "$count" \
    --streams 4 <"$work/client.in" >"$work/client.out" 2>/dev/null &
exec 4>"$work/client.in" 5<"$work/client.out"
read -r ready <&5
[ "$ready" = ready ] || { echo "client said: $ready" >&2; exit 1; }

messages() {
    echo count >&4
    read -r answer <&5
    set -- $answer
    echo "$2"
}

sleep 3
before=$(messages)
callgrind_control --zero "$server_pid" >/dev/null
sleep "$seconds"
callgrind_control --dump "$server_pid" >/dev/null
after=$(messages)
dump=$(ls "$work"/cg.out.* | head -1)
total=$(callgrind_annotate "$dump" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1; exit}')
echo "messages $((after - before)) instructions $total" >&2
echo "instructions_per_message $((total / (after - before)))"
if [ -n "${CG_COUNT:-}" ]; then
    # Calls of the function are on the caller lines before its own line.
    served=$(callgrind_annotate --tree=caller --inclusive=yes "$dump" 2>/dev/null | awk -v fn="$CG_COUNT" '
        / < / { if (match($0, /\(([0-9,]+)x\)/)) { n = substr($0, RSTART + 1, RLENGTH - 3); gsub(",", "", n); calls += n } next }
        / \* / { if (index($0, fn)) total += calls; calls = 0; next }
        { calls = 0 }
        END { print total + 0 }')
    echo "served $served" >&2
    if [ "$served" -gt 0 ]; then echo "instructions_per_served_message $((total / served))"; fi
fi
if [ -n "${CG_KEEP:-}" ]; then cp "$dump" "$CG_KEEP"; fi
# `head` closes the pipe early: not a failure.
callgrind_annotate --inclusive=yes "$dump" 2>/dev/null | sed -n '/file:function/,$p' | head -25 >&2 || true
