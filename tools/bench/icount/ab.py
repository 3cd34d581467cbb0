#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The A/B table of two builds of the module compared in one boot
(Documentation/performance.rst, "Two builds of the module compared in one
boot"): bulk is the module of the tree, bulk-alt the .ko in
build/kmod/KERNEL/alt/.

  tools/bench/icount/ab.py RAW [RAW...]

RAW: a run's raw points, build/bench/RUN/raw-N.jsonl, or a boot's log
(build/bench/RUN/boot-*.log: its JSON lines are the points, the rest is
skipped). Each file is one boot; the points of a file are in the order the
guest ran them.

A point's figure is the median of its runs (instructions per packet, the
whole path: two routers). Per router: (figure - gen-alone) / 2, gen-alone
being the median of the runs of the generator alone measured in the same
topology (link, headroom, family, encapsulation; its qdisc's when the run
has one per qdisc). delta = bulk - bulk-alt, per router: negative when the
tree's module costs fewer instructions.

Configurations run in turns in one boot (--configs "gen-alone bulk bulk-alt
bulk bulk-alt") drift by about +2 instructions per packet per configuration
step. So each bulk run is compared with the bulk-alt runs just before and
after it in its group (their mean when it sits between them), which cancels
a steady drift; a bulk run with a bulk-alt run on one side only is printed,
marked, and left out of the mean unless the group has no two-sided pair.
Start and end with bulk-alt (--configs "gen-alone bulk-alt bulk bulk-alt
bulk bulk-alt") and every bulk run has both. For each group (link, GRO,
qdisc, flows, train, encapsulation, and nexthops, vary, NAT, tap, headroom,
family where the points have them) it prints every pair, the mean of the
pairs and their spread, and the plain means (the mean of all bulk and of
all bulk-alt figures, drift included) beside them.
"""

import argparse
import json
import statistics
import sys

# What a group is made of beyond the table's first columns, with the value
# a point without the field has.
EXTRA = (("nexthops", 1), ("vary", "port"), ("nat", "none"), ("tap", "none"),
         ("headroom", 0), ("family", 4))


def load(path):
    """The points of one boot, in the order they ran."""
    points = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line.startswith("{"):
                continue
            try:
                p = json.loads(line)
            except json.JSONDecodeError:
                print(f"ab.py: {path}:{n}: not a point, skipped", file=sys.stderr)
                continue
            if "config" in p and "runs" in p:
                points.append(p)
    return points


def topology(p):
    return (p["link"], p.get("headroom", 0), p.get("family", 4), p.get("encap", "none"))


def group_of(p):
    return (p["link"], p["gro"], p.get("qdisc", "noqueue"), p["flows"], p.get("train", 1),
            p.get("encap", "none")) + tuple(p.get(k, d) for k, d in EXTRA)


def label(g):
    link, gro, qdisc, flows, train, encap = g[:6]
    s = f"{link}, GRO {gro}, {qdisc}, {flows} flow(s), train {train}, encap {encap}"
    for (k, d), v in zip(EXTRA, g[6:]):
        if v != d:
            s += f", {k} {v}"
    return s


def figure(p):
    return statistics.median(p["runs"])


def gen_alone(points):
    """gen-alone's figure per (topology, qdisc) and per topology."""
    by_q, by_t = {}, {}
    for p in points:
        if p["config"] == "gen-alone" and p.get("delivered", True) and p["runs"]:
            by_q.setdefault(topology(p) + (p.get("qdisc", "noqueue"),), []).append(figure(p))
            by_t.setdefault(topology(p), []).append(figure(p))
    return ({k: statistics.mean(v) for k, v in by_q.items()},
            {k: statistics.mean(v) for k, v in by_t.items()})


def pairs_of(seq):
    """(bulk figure, [bulk-alt figures on its sides], two-sided) of each
    bulk run of one group's sequence of (config, figure)."""
    out = []
    for i, (config, value) in enumerate(seq):
        if config != "bulk":
            continue
        sides = []
        if i > 0 and seq[i - 1][0] == "bulk-alt":
            sides.append(seq[i - 1][1])
        if i + 1 < len(seq) and seq[i + 1][0] == "bulk-alt":
            sides.append(seq[i + 1][1])
        if sides:
            out.append((value, sides, len(sides) == 2))
    return out


def fmt(x):
    return f"{x:.1f}"


def main():
    ap = argparse.ArgumentParser(
        description="A/B of bulk (the tree's module) against bulk-alt (another build) "
        "from a run's raw points, each bulk run against the bulk-alt runs beside it.")
    ap.add_argument("raw", nargs="+", metavar="RAW",
                    help="raw-N.jsonl or boot log of a run (one boot each)")
    args = ap.parse_args()

    groups = {}
    skipped = 0
    for boot, path in enumerate(args.raw):
        points = load(path)
        gen_q, gen_t = gen_alone(points)
        seqs = {}
        for p in points:
            if p["config"] not in ("bulk", "bulk-alt"):
                continue
            if not p.get("delivered", True) or not p["runs"]:
                print(f"ab.py: {path}: {p['config']} {label(group_of(p))}: "
                      f"not delivered ({p.get('status')}), left out", file=sys.stderr)
                skipped += 1
                continue
            g = group_of(p)
            gen = gen_q.get(topology(p) + (p.get("qdisc", "noqueue"),), gen_t.get(topology(p)))
            seqs.setdefault(g, []).append((p["config"], figure(p)))
            grp = groups.setdefault(g, {"bulk": [], "bulk-alt": [], "pairs": [], "gen": []})
            grp[p["config"]].append(figure(p))
            if gen is not None and gen not in grp["gen"]:
                grp["gen"].append(gen)
        for g, seq in seqs.items():
            groups[g]["pairs"] += [(boot,) + x for x in pairs_of(seq)]

    if not groups:
        sys.exit("ab.py: no bulk or bulk-alt points")
    print("Instructions per packet and router; delta = bulk - bulk-alt, per router\n"
          "((bulk - bulk-alt) / 2). Each bulk run is compared with the mean of the\n"
          "bulk-alt runs just before and after it in one boot, which cancels the drift\n"
          "of runs in turns (about +2 per configuration step); '(one side)' marks a\n"
          "bulk run with a bulk-alt run on one side only.")
    for g in groups:
        grp = groups[g]
        print()
        gen = statistics.mean(grp["gen"]) if grp["gen"] else None
        print(f"{label(g)}; gen-alone {fmt(gen) if gen is not None else 'none'}")
        if len(args.raw) > 1:
            print("  boot  bulk     bulk-alt before / after   delta/router")
        else:
            print("  bulk     bulk-alt before / after   delta/router")
        for boot, b, sides, two in grp["pairs"]:
            alt = statistics.mean(sides)
            d = (b - alt) / 2
            sides_s = " / ".join(fmt(x) for x in sides)
            head = f"  {boot + 1:>4}  " if len(args.raw) > 1 else "  "
            print(f"{head}{fmt(b):>8} {sides_s:>24}   {d:+8.1f}{'' if two else '   (one side)'}")
        both = [x for x in grp["pairs"] if x[3]]
        used = both or grp["pairs"]
        deltas = [(b - statistics.mean(sides)) / 2 for _, b, sides, _ in used]
        if deltas:
            spread = f"min {min(deltas):+.1f}, max {max(deltas):+.1f}"
            if len(deltas) > 1:
                spread += f", stdev {statistics.stdev(deltas):.1f}"
            how = "two-sided" if both else "one-sided only: the drift is not cancelled"
            print(f"  delta/router: mean {statistics.mean(deltas):+.1f} over {len(deltas)} "
                  f"pair(s) ({how}); {spread}")
        else:
            print("  delta/router: no bulk run next to a bulk-alt run")
        if grp["bulk"] and grp["bulk-alt"]:
            b, a = statistics.mean(grp["bulk"]), statistics.mean(grp["bulk-alt"])
            line = (f"  plain means (drift included): bulk {fmt(b)} ({len(grp['bulk'])} run(s)), "
                    f"bulk-alt {fmt(a)} ({len(grp['bulk-alt'])})")
            if gen is not None:
                line += (f"; per router bulk {fmt((b - gen) / 2)}, bulk-alt {fmt((a - gen) / 2)}")
            line += f"; delta/router {(b - a) / 2:+.1f}"
            print(line)
    if skipped:
        print(f"\n{skipped} point(s) not delivered, left out (see stderr)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
