"""Renders the TestService matrix (interop/testing_matrix.sh) as Markdown:
one row per case, one column per client -> server pair; a cell is ✓, ✗ or
n/a, and every n/a is listed below the table with its reason.

Input: lines of `client<TAB>server<TAB>case<TAB>outcome<TAB>detail`, outcome
one of pass, fail, na."""

import sys
from collections import OrderedDict

IMPLEMENTATIONS = ["tonic", "volo", "grpcio"]
MARK = {"pass": "✓", "fail": "✗", "na": "n/a"}


def main():
    cells = {}
    cases = OrderedDict()
    unavailable = OrderedDict()
    for line in open(sys.argv[1], encoding="utf-8"):
        client, server, case, outcome, detail = line.rstrip("\n").split("\t", 4)
        cases[case] = None
        cells[(client, server, case)] = outcome
        if outcome == "na":
            unavailable.setdefault((case, server, detail), []).append(client)
    pairs = [(c, s) for c in IMPLEMENTATIONS for s in IMPLEMENTATIONS]
    print("| case | " + " | ".join(f"{c} → {s}" for c, s in pairs) + " |")
    print("|---|" + "---|" * len(pairs))
    for case in cases:
        row = [MARK.get(cells.get((c, s, case)), "—") for c, s in pairs]
        print(f"| {case} | " + " | ".join(row) + " |")
    totals = []
    for c, s in pairs:
        outcomes = [cells.get((c, s, case)) for case in cases]
        passed = outcomes.count("pass")
        ran = passed + outcomes.count("fail")
        totals.append(f"{passed}/{ran}")
    print("| **passed** | " + " | ".join(totals) + " |")
    if unavailable:
        print()
        print("n/a (the peer cannot express the case; not run):")
        for (case, server, reason), clients in unavailable.items():
            print(f"- {case}, {', '.join(clients)} → {server}: {reason}")


if __name__ == "__main__":
    main()
