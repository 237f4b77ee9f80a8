"""Renders interop results (JSON lines) as a Markdown matrix:
implementation pair x RPC kind x compression, each cell the passed/total
count of the cases (payload sizes and special cases) in it."""

import json
import sys
from collections import OrderedDict


def kind(rpc):
    for name in ("unary", "server_stream", "client_stream", "bidi"):
        if rpc.startswith(name):
            return name
    return {"server": "server_stream", "client": "client_stream"}.get(rpc.split("_")[0], rpc)


def main():
    rows = OrderedDict()
    for line in open(sys.argv[1]):
        case = json.loads(line)
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
                passed, total = cells.get((k, c), [0, 0])
                out.append("-" if total == 0 else f"{passed}/{total}" + (" ✓" if passed == total else " ✗"))
        print(f"| {peer} | " + " | ".join(out) + " |")


if __name__ == "__main__":
    main()
