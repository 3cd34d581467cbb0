#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The TCP figures of make bench-tcp (tools/bench/icount/tcp.sh).

  tools/bench/icount/tcp_report.py OUTDIR LOG [--goodput CLOCK=LOG ...]
  tools/bench/icount/tcp_report.py --from-json TCP.json OUTDIR

LOG is what make bench-tcp printed (tcp.sh's JSON lines among the build's
and the guest's output). Writes OUTDIR/tcp.json (the run: kernel, module
commit, date, every transfer, the summaries), tcp.md and tcp.rst, and
prints the table. --from-json writes OUTDIR/NAME.md and NAME.rst again from
a JSON this script wrote (NAME: its base name; Documentation/perf/tcp.json).

--goodput adds the goodput pairs of tcp.sh --wall runs (stock and bulk
alternating) in another boot, CLOCK naming that boot: icount-sleep
(tools/vm/run --icount-sleep, one vCPU: instructions while the vCPU runs,
real time while it idles, so a delay the module adds shows and TCG's host
cost per instruction does not), real-time-1 or real-time-2 (no icount,
--smp 1 or 2: the host's time, TCG's cost per instruction included).

Per configuration, over the repetitions: the guest's busy instructions
(elapsed less idle) of the big transfer less the small one's, per MiB of
payload, per wire segment and per skb a router received; per router,
(configuration - direct) / 2. The stock / module ratio is given with the
spread of both sides: where the spreads overlap, the run shows no
difference between them.
"""

import datetime
import json
import os
import sys

from report import module_commit

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
CONFIG_ORDER = ["direct", "plain", "stock", "bulk"]
CONFIG_TITLE = {
    "direct": "direct (the two TCP ends, no router)",
    "plain": "plain forwarding",
    "stock": "stock flowtable",
    "bulk": "nf_flow_bulk",
}


def parse_log(path):
    """tcp.sh's JSON objects in a log, by kind."""
    runs, module = [], None
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.strip()
            start = line.find('{"kind":')
            if start < 0:
                continue
            try:
                obj = json.loads(line[start:])
            except json.JSONDecodeError as e:
                # A line the console split: a run lost would skew the pairs.
                sys.exit(f"tcp_report.py: {path}: a broken JSON line ({e}): {line[:80]}")
            kind = obj.get("kind")
            if kind == "tcp":
                runs.append(obj)
            elif kind == "tcp-module":
                module = obj
    if not runs:
        sys.exit(f"tcp_report.py: {path}: no tcp.sh run in it")
    return runs, module


def stat(values):
    """Median (the upper one of an even count, as tcp.sh's summary), extremes
    and spread."""
    v = sorted(values)
    med = v[len(v) // 2]
    return {"median": int(med), "min": int(v[0]), "max": int(v[-1]),
            "spread": round((v[-1] - v[0]) / med, 3) if med else 0.0}


def summarize(runs):
    """Per configuration, each repetition's big transfer less its small one,
    paired in the order they ran (the printed runs: no warm-up among them)."""
    out = []
    configs = [c for c in CONFIG_ORDER if any(r["config"] == c for r in runs)]
    for config in configs:
        mine = [r for r in runs if r["config"] == config]
        sizes = sorted({r["bytes"] for r in mine})
        small = [r for r in mine if r["bytes"] == sizes[0]]
        big = [r for r in mine if r["bytes"] == sizes[-1]]
        mib = (sizes[-1] - sizes[0]) >> 20
        if len(small) != len(big):
            sys.exit(f"tcp_report.py: {config}: {len(small)} small and {len(big)} big transfers")
        pairs = [{"busy": b["busy"] - s["busy"], "segs": b["segs_out"] - s["segs_out"],
                  "skbs": b["w0_skbs"] - s["w0_skbs"]} for s, b in zip(small, big)]
        out.append({
            "config": config,
            "per_mb": stat([p["busy"] / mib for p in pairs]),
            "per_segment": stat([p["busy"] / p["segs"] for p in pairs]),
            "per_router_skb": stat([p["busy"] / p["skbs"] for p in pairs]),
            "segments_per_router_skb": stat([p["segs"] / p["skbs"] for p in pairs]),
            "pairs": pairs,
            "taken": sum(b["taken"] for b in big),
            "dropped": sum(b["dropped"] for b in big),
            "dev_drops": sum(b["dev_drops"] for b in big),
            "retrans": sum(b["retrans"] + b["retrans_back"] for b in big),
        })
    return out


def rows(res):
    """The summaries in CONFIG_ORDER, each with its per-router figure:
    (configuration - direct) / 2 per MiB."""
    by_config = {s["config"]: s for s in res["summaries"]}
    direct = by_config.get("direct", {}).get("per_mb", {}).get("median")
    out = []
    for config in CONFIG_ORDER:
        s = by_config.get(config)
        if not s:
            continue
        router = None
        if direct is not None and config != "direct":
            router = int((s["per_mb"]["median"] - direct) / 2)
        out.append(dict(s, per_router_per_mb=router, repetitions=len(s["pairs"])))
    return out


def ratio(res):
    """stock / module per router per MiB, and whether the spreads overlap."""
    by = {r["config"]: r for r in rows(res)}
    if "stock" not in by or "bulk" not in by or by["bulk"]["per_router_per_mb"] in (None, 0):
        return None
    st, bk = by["stock"]["per_mb"], by["bulk"]["per_mb"]
    return {"stock": by["stock"]["per_router_per_mb"], "bulk": by["bulk"]["per_router_per_mb"],
            "ratio": round(by["stock"]["per_router_per_mb"] / by["bulk"]["per_router_per_mb"], 2),
            "stock_whole": by["stock"]["per_mb"]["median"],
            "bulk_whole": by["bulk"]["per_mb"]["median"],
            "ratio_whole": round(by["stock"]["per_mb"]["median"] / by["bulk"]["per_mb"]["median"], 2),
            "overlap": not (st["max"] < bk["min"] or bk["max"] < st["min"])}


def fmt_stat(stat):
    return f"{stat['median']:,} (spread {stat['spread'] * 100:.1f}%)"


def caption(meta):
    return (f"TCP through both routers, one icount boot ({meta['date']}, module "
            f"{meta['module_commit']}, kernel {meta['kernel']}; veth, {meta['features']}): "
            f"iperf3 from sunset to sunrise, the configurations in blocks in the order "
            f"{', '.join(meta['order'])}, {meta['reps']} repetitions a block, each "
            f"{meta['small_mib']} MiB then {meta['bytes_mib']} MiB, the difference counted. "
            "Guest instructions, median of the repetitions and their spread "
            "((max - min) / median). Per router: (configuration - direct) / 2.")


def table(res):
    head = ["configuration", "whole guest, per MiB", "per router, per MiB",
            "whole guest, per wire segment", "whole guest, per skb west received",
            "segments per skb",
            "repetitions", "retransmissions", "taken by the module"]
    body = []
    for r in rows(res):
        body.append([CONFIG_TITLE[r["config"]], fmt_stat(r["per_mb"]),
                     "-" if r["per_router_per_mb"] is None else f"{r['per_router_per_mb']:,}",
                     fmt_stat(r["per_segment"]), fmt_stat(r["per_router_skb"]),
                     f"{r['segments_per_router_skb']['median']:.0f}", str(r["repetitions"]),
                     str(r["retrans"]), f"{r['taken']:,}"])
    return head, body


def verdict(res):
    rt = ratio(res)
    if rt is None:
        return "No stock / module figure: the run lacks one of them."
    text = (f"Whole guest, per MiB, stock / module: {rt['stock_whole']:,} / "
            f"{rt['bulk_whole']:,} = {rt['ratio_whole']:.2f}x; per router, per MiB: "
            f"{rt['stock']:,} / {rt['bulk']:,} = {rt['ratio']:.2f}x")
    if rt["overlap"]:
        text += (": the two configurations' repetitions overlap, so this run shows no "
                 "difference between them.")
    else:
        text += "."
    return text


CLOCKS = {
    "icount-sleep": "one vCPU, guest time: icount with sleep=on (instructions while "
                    "running, real time while idle)",
    "real-time-1": "one vCPU, the host's time (TCG without icount)",
    "real-time-2": "two vCPUs, the host's time (multi-threaded TCG without icount)",
}


def goodput_pairs(res):
    """Per clock, the (stock, bulk) goodput pairs in the order they ran."""
    out = []
    for clock in dict.fromkeys(g["clock"] for g in res.get("goodput", [])):
        runs = [g for g in res["goodput"] if g["clock"] == clock]
        stock = [g for g in runs if g["config"] == "stock"]
        bulk = [g for g in runs if g["config"] == "bulk"]
        for i, (a, b) in enumerate(zip(stock, bulk), 1):
            out.append((clock, i, a, b))
    return out


def goodput_table(res):
    head = ["boot's clock", "pair", "seconds", "stock, Mbit/s", "nf_flow_bulk, Mbit/s",
            "module / stock"]
    body = [[CLOCKS.get(clock, clock), str(i), str(a["seconds"]),
             f"{a['bits_per_second'] / 1e6:.0f}",
             f"{b['bits_per_second'] / 1e6:.0f}",
             f"{b['bits_per_second'] / a['bits_per_second']:.2f}x"]
            for clock, i, a, b in goodput_pairs(res)]
    return head, body


def goodput_caption():
    return ("iperf3 goodput, tcp.sh --wall SECONDS (one connection for SECONDS of the "
            "boot's clock), stock and the module alternating, three pairs a boot, in the "
            "order they ran; the same kernel and module.")


def render_md(res):
    head, body = table(res)
    lines = [caption(res["meta"]), "", "| " + " | ".join(head) + " |",
             "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r) + " |" for r in body]
    lines += ["", verdict(res), ""]
    if res.get("goodput"):
        head, body = goodput_table(res)
        lines += [goodput_caption(), "", "| " + " | ".join(head) + " |",
                  "|" + "---|" * len(head)]
        lines += ["| " + " | ".join(r) + " |" for r in body]
        lines.append("")
    return "\n".join(lines)


def rst_table(head, body):
    lines = [".. list-table::", "   :header-rows: 1", ""]
    for r in [head] + body:
        lines.append("   * - " + r[0])
        lines += [f"     - {c}" for c in r[1:]]
    return lines


def render_rst(res):
    head, body = table(res)
    lines = [caption(res["meta"]), ""] + rst_table(head, body) + ["", verdict(res), ""]
    if res.get("goodput"):
        head, body = goodput_table(res)
        lines += [goodput_caption(), ""] + rst_table(head, body) + [""]
    return "\n".join(lines)


def parse_goodput(spec):
    """CLOCK=LOG: the goodput lines of LOG, each marked with CLOCK."""
    clock, _, path = spec.partition("=")
    if clock not in CLOCKS or not path:
        sys.exit(f"tcp_report.py: --goodput {spec}: CLOCK=LOG, CLOCK one of {', '.join(CLOCKS)}")
    out = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            start = line.find('{"kind":"goodput"')
            if start >= 0:
                out.append(dict(json.loads(line[start:]), clock=clock))
    if not out:
        sys.exit(f"tcp_report.py: {path}: no goodput line in it")
    return out


def write(res, outdir, name):
    with open(os.path.join(outdir, f"{name}.md"), "w", encoding="utf-8") as f:
        f.write(render_md(res))
    with open(os.path.join(outdir, f"{name}.rst"), "w", encoding="utf-8") as f:
        f.write(render_rst(res))


def main():
    args = sys.argv[1:]
    if len(args) == 3 and args[0] == "--from-json":
        with open(args[1], encoding="utf-8") as f:
            res = json.load(f)
        write(res, args[2], os.path.splitext(os.path.basename(args[1]))[0])
        return 0
    goodput = []
    while "--goodput" in args:
        i = args.index("--goodput")
        if i + 1 >= len(args):
            sys.exit(__doc__)
        goodput += parse_goodput(args[i + 1])
        del args[i:i + 2]
    if len(args) != 2:
        sys.exit(__doc__)
    outdir, log = args
    runs, module = parse_log(log)
    summaries = summarize(runs)
    sizes = sorted({r["bytes"] for r in runs})
    # The blocks in the order they ran (tcp.sh --configs), and the
    # repetitions of one block.
    order = [r["config"] for i, r in enumerate(runs)
             if r["bytes"] == sizes[0] and (i == 0 or runs[i - 1]["config"] != r["config"])]
    reps = sum(1 for r in runs if r["bytes"] == sizes[-1]) // len(order)
    meta = {"kernel": runs[0]["kernel"], "link": runs[0]["link"], "features": runs[0]["features"],
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
            "module_commit": module_commit(REPO), "reps": reps, "order": order,
            "small_mib": sizes[0] >> 20, "bytes_mib": sizes[-1] >> 20,
            "metric": "guest instructions, busy (elapsed less idle), QEMU -icount shift=0"}
    res = {"schema": 1, "meta": meta, "runs": runs, "summaries": summaries, "module": module,
           "goodput": goodput}
    with open(os.path.join(outdir, "tcp.json"), "w", encoding="utf-8") as f:
        json.dump(res, f, indent=2)
        f.write("\n")
    write(res, outdir, "tcp")
    print(render_md(res), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
