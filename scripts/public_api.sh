#!/usr/bin/env bash
# The crate's public API, one item a line, with every feature on
# (cargo-public-api on rustdoc JSON), checked against docs/public-api.txt:
# a change to what users can name must change the listing in the same
# commit, where a reviewer sees it.
#
#   scripts/public_api.sh          compare (CI); exits 1 on a difference
#   scripts/public_api.sh --bless  rewrite docs/public-api.txt
#
# rustdoc JSON needs a nightly toolchain (`rustup toolchain install nightly
# --profile minimal`); cargo-public-api is installed at the pinned version
# when missing.
set -euo pipefail
cd "$(dirname "$0")/.."

version=0.52.0
listing=docs/public-api.txt
# Its own target dir: nightly artifacts would evict the stable ones.
export CARGO_TARGET_DIR=${PUBLIC_API_TARGET_DIR:-target/public-api}

if ! cargo public-api --version 2>/dev/null | grep -qF "$version"; then
    cargo install cargo-public-api --locked --version "$version"
fi

current=$(mktemp)
trap 'rm -f "$current"' EXIT
# `#[doc(hidden)]` items are left out, and so is everything reachable only
# through a hidden module (`codegen`, what generated code names): the
# listing is what users call. rustdoc JSON also leaves out an
# `#[doc(inline)]` re-export of a hidden macro, which is how a
# `macro_rules!` macro gets a path in a module (`#[macro_export]` puts it at
# the crate root), so the adapters' include macros are listed from their
# re-exports.
{
    cargo +nightly public-api -p grpc-stream-codec --all-features -ss --color never
    for adapter in tonic volo; do
        sed -n 's/^pub use crate::{\(.*\)};$/\1/p' "adapters/$adapter/mod.rs" | tr ',' '\n' |
            sed -n "s/^ *__${adapter}_[a-z_]* as \([a-z_]*\) *$/pub macro grpc_stream_codec::$adapter::\1!/p"
    done
} >"$current"

if [ "${1:-}" = "--bless" ]; then
    cp "$current" "$listing"
    echo "$listing: $(grep -c . "$listing") items"
    exit 0
fi
if ! diff -u "$listing" "$current"; then
    echo "The public API differs from $listing (above: - listed, + now)." >&2
    echo "If the change is meant, run scripts/public_api.sh --bless and commit the listing." >&2
    exit 1
fi
echo "public API unchanged: $(grep -c . "$listing") items"
