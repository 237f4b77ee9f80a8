"""Renders interop results (JSON lines) as a Markdown matrix:
implementation pair x RPC kind x compression, each cell the passed/total
count of the cases (payload sizes and special cases) in it; then, for the
clients, the trailers-only cases on their own (all compressions together)."""

import json
import sys
from collections import OrderedDict


def kind(rpc):
    for name in ("unary", "server_stream", "client_stream", "bidi"):
        if rpc.startswith(name):
            return name
    return {"server": "server_stream", "client": "client_stream"}.get(rpc.split("_")[0], rpc)


# Trailers-only cases by the suffix of their rpc name: (column, suffix).
TRAILERS_ONLY = [
    ("empty bidi", "bidi_empty"),
    ("empty server stream", "server_stream_empty"),
    ("error before any message", "_trailers_only_error"),
]


def render(passed, total):
    return "-" if total == 0 else f"{passed}/{total}" + (" ✓" if passed == total else " ✗")


def main():
    rows = OrderedDict()
    special = OrderedDict()
    for line in open(sys.argv[1]):
        case = json.loads(line)
        for column, suffix in TRAILERS_ONLY:
            if case["rpc"].endswith(suffix):
                counts = special.setdefault(case["peer"], {}).setdefault(column, [0, 0])
                counts[0] += 1 if case["ok"] else 0
                counts[1] += 1
        peer = rows.setdefault(case["peer"], OrderedDict())
        cell = peer.setdefault((kind(case["rpc"]), case["compression"]), [0, 0])
        cell[0] += 1 if case["ok"] else 0
        cell[1] += 1
    kinds = ["unary", "server_stream", "client_stream", "bidi"]
    compressions = ["none", "gzip", "deflate"]
    header = "| implementation | " + " | ".join(
        f"{k} {c}" for k in kinds for c in compressions
    ) + " |"
    print(header)
    print("|" + "---|" * (1 + len(kinds) * len(compressions)))
    for peer, cells in rows.items():
        out = []
        for k in kinds:
            for c in compressions:
                out.append(render(*cells.get((k, c), [0, 0])))
        print(f"| {peer} | " + " | ".join(out) + " |")
    if special:
        print()
        print("| trailers-only answers | " + " | ".join(c for c, _ in TRAILERS_ONLY) + " |")
        print("|" + "---|" * (1 + len(TRAILERS_ONLY)))
        for peer, columns in special.items():
            out = [render(*columns.get(c, [0, 0])) for c, _ in TRAILERS_ONLY]
            print(f"| {peer} | " + " | ".join(out) + " |")


if __name__ == "__main__":
    main()
