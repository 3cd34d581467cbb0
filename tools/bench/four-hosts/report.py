#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The four-host benchmark's figures (tools/bench/hosts writes raw.jsonl).

  tools/bench/four-hosts/report.py OUTDIR [--smoke=1]
  tools/bench/four-hosts/report.py --from-json RESULTS.json OUTDIR

A router's CPU time is all its CPU does for a forwarded packet (receive,
forwarding, transmit): the headline figure as it is. The summary table
gives, per point, the mean of the two routers with the module on both (the
RFC's configuration) against the stock flowtable, and XDP beside them.

Per point and router: CPU time per forwarded packet, from the router's own
clock and idle accounting (four-hosts/node.sh snap: /proc/timer_list, in
nanoseconds): the time its CPUs were not idle, less the rate at which they
are busy forwarding nothing (the quiet intervals at the start and the end
of the run), divided by the packets its send device transmitted. Runs whose
raw.jsonl has no "clock": "ns" were read from /proc/uptime and /proc/stat,
in 1/100 s. In the guests (QEMU icount, one nanosecond per instruction
while a vCPU runs) the time counts instructions.

Writes OUTDIR/results.json, results.md, results.rst and results.png (gnuplot), and
prints the table. --from-json writes OUTDIR/NAME.md and NAME.rst again from a
results.json this script wrote (NAME: its base name; Documentation/perf/hosts.json). With --smoke=1 it also fails (exit 1) unless every point
was delivered, and nf_flow_bulk took the traffic where it ran and nowhere
else: the checks of the four-guest selftest.
"""

import json
import os
import statistics
import subprocess
import sys
import time

# The run's module commit is read as the icount harness's report.py reads
# it: its folder goes first in the path, before this script's own, whose
# report.py is this file.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "icount"))
from report import module_commit  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

TICK_NS = 10_000_000  # USER_HZ = 100: the unit of runs without "clock": "ns"
FIELDS = ["up", "cpus", "idle", "softirq", "rx", "tx", "taken", "bulks"]
MODE_ORDER = ["plain", "stock", "fraglist", "udpfwd", "bulk-west", "bulk-east", "bulk", "xdp",
              "xdp-ft"]
MODE_TITLE = {
    "plain": "plain forwarding",
    "stock": "stock flowtable",
    "fraglist": "stock + fraglist GRO",
    "udpfwd": "stock + UDP GRO forwarding",
    "bulk-west": "nf_flow_bulk on west",
    "bulk-east": "nf_flow_bulk on east",
    "bulk": "nf_flow_bulk on both",
    "xdp": "XDP (xdp_fwd)",
    "xdp-ft": "XDP (xdp-forward, flowtable)",
}


def router(values, i):
    n = len(FIELDS)
    return dict(zip(FIELDS, values[i * n:(i + 1) * n]))


def delta(before, after, i):
    a, b = router(before, i), router(after, i)
    return {k: b[k] - a[k] for k in FIELDS if k != "cpus"} | {"cpus": b["cpus"]}


def busy_ticks(d):
    return d["cpus"] * d["up"] - d["idle"]


SUMMARY_CAPTION = ("Router CPU per forwarded packet, the mean of the two routers: "
                   "the stock flowtable on both, nf_flow_bulk on both, XDP on both (the kernel's "
                   "xdp_fwd sample; xdp-forward in flowtable mode where run)")


def summary_lines(meta, results, by, keys):
    """The summary's markdown rows: stock and module on both routers, XDP and
    the XDP flowtable peer."""
    unit = meta["unit"]
    # The XDP flowtable peer's columns where the run has it.
    ft = any(r["mode"] == "xdp-ft" for r in results)
    head = ["flows", "train", f"stock flowtable, {unit}", f"nf_flow_bulk on both, {unit}",
            "stock / module", f"XDP (xdp_fwd), {unit}", "module / XDP"]
    if ft:
        head += [f"XDP flowtable (xdp-forward), {unit}", "XDP flowtable / module"]
    head += ["repetitions", "notes"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for flows, train in keys:
        st, bk, xd, xf = (by.get((m, flows, train)) for m in ("stock", "bulk", "xdp", "xdp-ft"))
        if not st or not bk or not st["router"] or not bk["router"]:
            continue
        notes = []
        for name, r in (("stock", st), ("module", bk), ("XDP", xd), ("XDP flowtable", xf)):
            if r and r["delivered_min"] < 0.999:
                notes.append(f"{name} delivered {r['delivered_min']:.1%}")
        if min(bk["taken_west"], bk["taken_east"]) < 0.99:
            notes.append(f"module took {min(bk['taken_west'], bk['taken_east']):.1%}")
        reps = min(len(x["runs"]) for r in (st, bk) for x in (r["west"], r["east"]))
        lines.append("| " + " | ".join([
            str(flows), str(train), str(st["router"]), str(bk["router"]),
            f"{st['router'] / bk['router']:.2f}x",
            str(xd["router"]) if xd and xd["router"] else "-",
            f"{bk['router'] / xd['router']:.2f}x" if xd and xd["router"] else "-"]
            + ([str(xf["router"]) if xf and xf["router"] else "-",
                f"{xf['router'] / bk['router']:.2f}x" if xf and xf["router"] else "-"]
               if ft else [])
            + [str(reps), "; ".join(notes) or "-"]) + " |")
    return lines


def summary_table(meta, results, by, keys):
    lines = summary_lines(meta, results, by, keys)
    return "\nSummary, per router (the mean of west and east):\n\n" + "\n".join(lines) + "\n"


def render(meta, results, out, name):
    """Writes OUT/NAME.md and OUT/NAME.rst; returns the markdown."""
    unit = meta["unit"]
    modes = [m for m in MODE_ORDER if any(r["mode"] == m for r in results)]
    keys = sorted({(r["flows"], r["train"]) for r in results})
    by = {(r["mode"], r["flows"], r["train"]): r for r in results}
    where = ("four QEMU guests (icount)" if meta["unit"] == "instructions" else
             "four QEMU guests (real time)" if meta["guests"] else "four hosts")
    run = "".join(f"{meta[k]}, " for k in ("date",) if meta.get(k))
    if meta.get("module_commit"):
        run += f"module {meta['module_commit']}, "
    lines = [f"Four hosts, {where}, {run}kernel {meta['kernel']}, {meta['cpus']} CPUs per host, "
             f"{meta['len']}-byte UDP frames. Per router: {unit} per forwarded packet, "
             "west / east, median of the repetitions, and the repetition farthest from it.", ""]
    lines.append("| flows | train | " + " | ".join(MODE_TITLE[m] for m in modes) + " |")
    lines.append("|---|---|" + "---|" * len(modes))
    for flows, train in keys:
        cells = []
        for m in modes:
            r = by.get((m, flows, train))
            if not r or not r["west"] or not r["east"]:
                cells.append("-")
                continue
            mark = "" if r["delivered_min"] >= 0.999 else f", delivered {r['delivered_min']:.1%}"
            # The spread: the repetition farthest from its median.
            dev = max(max(abs(v - x["median"]) for v in x["runs"]) / x["median"]
                      for x in (r["west"], r["east"]) if x["median"])
            cells.append(f"{r['west']['median']} / {r['east']['median']} (±{dev:.1%}{mark})")
        lines.append(f"| {flows} | {train} | " + " | ".join(cells) + " |")
    md = "\n".join(lines) + "\n"
    md += summary_table(meta, results, by, keys)
    summary_rows = set(summary_lines(meta, results, by, keys)[2:])
    with open(os.path.join(out, f"{name}.md"), "w") as f:
        f.write(md)
    # The same table for the documentation (Documentation/perf/hosts.rst).
    rst = [".. csv-table:: " + lines[0], "   :header-rows: 1", "",
           "   " + ", ".join(['"flows"', '"train"'] + [f'"{MODE_TITLE[m]}"' for m in modes])]
    for row in lines[4:]:  # the main table's rows
        cells = [c.strip() for c in row.strip("|").split("|")]
        rst.append("   " + ", ".join(f'"{c}"' for c in cells))
    rst += ["", "Summary, per router (the mean of west and east):", ""]
    rst += [".. csv-table:: " + SUMMARY_CAPTION, "   :header-rows: 1", "",
            "   " + ", ".join(f'"{c.strip()}"' for c in
                              summary_lines(meta, results, by, keys)[0].strip("|").split("|"))]
    for row in md.split("\n"):
        if row.startswith("| ") and row in summary_rows:
            cells = [c.strip() for c in row.strip("|").split("|")]
            rst.append("   " + ", ".join(f'"{c}"' for c in cells))
    with open(os.path.join(out, f"{name}.rst"), "w") as f:
        f.write("\n".join(rst) + "\n")
    return md



def from_json(src, out):
    with open(src, encoding="utf-8") as f:
        res = json.load(f)
    render(res["meta"], res["points"], out, os.path.splitext(os.path.basename(src))[0])


def read_raw(out):
    """raw.jsonl's baselines and points; exits when it has no points."""
    rows = [json.loads(line) for line in open(os.path.join(out, "raw.jsonl")) if line.strip()]
    base = [r for r in rows if r["type"] == "baseline"]
    points = [r for r in rows if r["type"] == "point"]
    if not points:
        sys.exit("four-hosts/report.py: no points in raw.jsonl")
    return base, points


def quiet_rates(base):
    """Busy ticks per tick of uptime while nothing is forwarded, per router:
    the lower of the two quiet intervals (the agent's reads are in both)."""
    quiet = []
    for i in range(2):
        rates = []
        for b in base:
            d = delta(b["before"], b["after"], i)
            if d["up"] > 0:
                rates.append(max(0.0, busy_ticks(d) / d["up"]))
        quiet.append(min(rates) if rates else 0.0)
    return quiet


def group_points(points, quiet):
    """The repetitions of each (mode, flows, train): per router its cost per
    forwarded packet, what the module took and its bulk size, and the
    share delivered."""
    groups = {}
    for p in points:
        key = (p["mode"], p["flows"], p["train"])
        g = groups.setdefault(key, {"west": [], "east": [], "delivered": [], "count": p["count"],
                                    "taken": [[], []], "bulk": [[], []],
                                    "offloaded": p.get("offloaded", {})})
        for i, name in enumerate(["west", "east"]):
            d = delta(p["before"], p["after"], i)
            busy = (busy_ticks(d) - quiet[i] * d["up"]) * (1 if p.get("clock") == "ns" else TICK_NS)
            fwd = d["tx"]
            g[name].append(busy / fwd if fwd > 0 else None)
            g["taken"][i].append(d["taken"] / p["sent"])
            if d["bulks"] > 0:
                g["bulk"][i].append(d["taken"] / d["bulks"])
        g["delivered"].append(p["delivered"] / p["sent"])
    return groups


def summary(vals):
    """Median, extremes and every value of a router's repetitions."""
    vals = [v for v in vals if v is not None]
    if not vals:
        return None
    return {"median": round(statistics.median(vals)), "min": round(min(vals)),
            "max": round(max(vals)), "runs": [round(v) for v in vals]}


def results_of(groups):
    """results.json's points: one per (mode, flows, train), in MODE_ORDER."""
    results = []
    for (mode, flows, train), g in sorted(groups.items(), key=lambda kv: (
            MODE_ORDER.index(kv[0][0]), kv[0][1], kv[0][2])):
        w, e = summary(g["west"]), summary(g["east"])
        results.append({
            "mode": mode, "flows": flows, "train": train, "count": g["count"],
            "west": w, "east": e,
            "router": round((w["median"] + e["median"]) / 2) if w and e else None,
            # What a router running the mode costs: the module's router
            # alone where it runs on one (the other runs the stock path).
            "mode_router": (w["median"] if mode == "bulk-west" and w else
                            e["median"] if mode == "bulk-east" and e else
                            round((w["median"] + e["median"]) / 2) if w and e else None),
            "delivered_min": min(g["delivered"]),
            "taken_west": min(g["taken"][0]), "taken_east": min(g["taken"][1]),
            "bulk_size": [round(statistics.median(b), 1) if b else None for b in g["bulk"]],
        })
    return results


def write_chart(meta, results, out, unit):
    """OUT/plot.dat and OUT/results.png: the mean of the two routers against
    flows, a line a mode."""
    modes = [m for m in MODE_ORDER if any(r["mode"] == m for r in results)]
    keys = sorted({(r["flows"], r["train"]) for r in results})
    by = {(r["mode"], r["flows"], r["train"]): r for r in results}
    dat = os.path.join(out, "plot.dat")
    with open(dat, "w") as f:
        f.write("# x flows " + " ".join(modes) + "\n")
        for x, (flows, train) in enumerate(k for k in keys if k[1] == keys[0][1]):
            vals = []
            for m in modes:
                r = by.get((m, flows, train))
                vals.append(str(r["mode_router"]) if r and r["mode_router"] is not None else "NaN")
            f.write(f"{x} {flows} " + " ".join(vals) + "\n")
    plot = ";".join([
        'set terminal pngcairo size 1100,600 font ",10" noenhanced',
        f"set output '{os.path.join(out, 'results.png')}'",
        f"set title 'Four hosts ({meta['kernel']}): {unit} per packet of a router running the mode; lower is better'",
        "set xlabel 'flows'", f"set ylabel '{unit} per packet'", "set yrange [0:*]",
        "set grid ytics", "set key outside right", "set datafile missing 'NaN'",
        "plot " + ", ".join(
            f"'{dat}' using 1:{i + 3}:xtic(2) with linespoints title '{MODE_TITLE[m]}'"
            for i, m in enumerate(modes)),
    ])
    try:
        subprocess.run(["gnuplot", "-e", plot], check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"four-hosts/report.py: no chart: {e}", file=sys.stderr)


def smoke_checks(results):
    """--smoke=1: exits 1 unless every point was delivered and nf_flow_bulk
    took the traffic where it ran and nowhere else."""
    failed = []
    for r in results:
        name = f"{r['mode']} flows={r['flows']} train={r['train']}"
        # XDP_REDIRECT drops what a full transmit ring cannot take (no
        # qdisc to wait in): 99.7 % at 4 flows in one smoke run.
        if r["delivered_min"] < (0.95 if r["mode"] in ("xdp", "xdp-ft") else 0.99):
            failed.append(f"{name}: delivered {r['delivered_min']:.1%}")
        want_w = r["mode"] in ("bulk", "bulk-west")
        want_e = r["mode"] in ("bulk", "bulk-east")
        for side, want, took in (("west", want_w, r["taken_west"]), ("east", want_e, r["taken_east"])):
            if want and took < 0.9:
                failed.append(f"{name}: nf_flow_bulk on {side} took {took:.1%}")
            if not want and took > 0:
                failed.append(f"{name}: nf_flow_bulk took {took:.1%} on {side}, where it is not attached")
        if not r["west"] or not r["east"]:
            failed.append(f"{name}: no cost measured")
    for f_ in failed:
        print(f"four-hosts/report.py: FAIL: {f_}", file=sys.stderr)
    if failed:
        sys.exit(1)
    print(f"four-hosts/report.py: smoke checks passed ({len(results)} points)")


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--from-json":
        return from_json(sys.argv[2], sys.argv[3])
    out = sys.argv[1]
    smoke = any(a == "--smoke=1" for a in sys.argv[2:])
    base, points = read_raw(out)
    quiet = quiet_rates(base)
    unit = "instructions" if points[0].get("icount") else "ns"
    results = results_of(group_points(points, quiet))
    meta = {"kernel": points[0]["kernel"], "cpus": points[0]["cpus"],
            "guests": points[0].get("guests"), "unit": unit, "len": points[0]["len"],
            "quiet_busy_share": [round(q, 4) for q in quiet],
            "date": time.strftime("%Y-%m-%d", time.gmtime()),
            "module_commit": module_commit(REPO)}
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump({"meta": meta, "points": results}, f, indent=1)

    md = render(meta, results, out, "results")
    print(md)
    write_chart(meta, results, out, unit)
    if smoke:
        smoke_checks(results)


if __name__ == "__main__":
    main()
