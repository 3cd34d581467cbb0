#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Compare two benchmark runs (the repeatability check of make bench).

  tools/bench/icount/compare.py A/results.json B/results.json [--limit PCT]

For every point measured in both runs (link, GRO, qdisc, flows, family,
encapsulation of the west - east link, configuration) prints the two medians of instructions per packet and their
difference relative to the first; then the largest difference, and whether
every point of both runs was fully delivered. Exits 1 when a point differs
by more than --limit percent (default 1) or a point was not delivered.
"""
import argparse
import json
import sys


def key(p):
    return (p["link"], p["gro"], p["qdisc"], p["flows"], p["family"],
            p.get("encap", "none"), p["config"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--limit", type=float, default=1.0)
    args = ap.parse_args()
    with open(args.a, encoding="utf-8") as f:
        ra = json.load(f)
    with open(args.b, encoding="utf-8") as f:
        rb = json.load(f)
    pa = {key(p): p for p in ra["points"]}
    pb = {key(p): p for p in rb["points"]}
    worst, undelivered, rows = 0.0, [], []
    for k in sorted(pa.keys() & pb.keys()):
        a, b = pa[k], pb[k]
        for name, p in (("A", a), ("B", b)):
            if not p.get("delivered"):
                undelivered.append(f"{name}: {'/'.join(map(str, k))}")
        if "median" not in a or "median" not in b:
            continue
        d = 100.0 * (b["median"] - a["median"]) / a["median"]
        worst = max(worst, abs(d))
        rows.append((k, a["median"], b["median"], d))
    print("| link | GRO | qdisc | flows | IP | config | run A | run B | difference |")
    print("|---|---|---|---|---|---|---|---|---|")
    for k, a, b, d in rows:
        link, gro, qdisc, flows, fam, encap, config = k
        if encap != "none":
            config = f"{config} ({encap})"
        print(f"| {link} | {gro} | {qdisc} | {flows} | v{fam} | {config} "
              f"| {a:.0f} | {b:.0f} | {d:+.2f} % |")
    print(f"\n{len(rows)} points; largest difference {worst:.2f} % (limit {args.limit} %)")
    missing = pa.keys() ^ pb.keys()
    if missing:
        print(f"{len(missing)} point(s) in one run only")
    for u in undelivered:
        print(f"not delivered: {u}")
    ok = worst <= args.limit and not undelivered and not missing
    print("repeatable" if ok else "NOT repeatable")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
