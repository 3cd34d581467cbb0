#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Aggregate the benchmark's raw points (JSON lines, one file per boot).

  tools/bench/icount/report.py OUTDIR [--wall WALL.jsonl] RAW.jsonl...

Writes OUTDIR/results.json, OUTDIR/results.md and OUTDIR/plot.dat (for
tools/bench/icount/plot.gp), and prints the markdown table.

Per point the figure is the median of instructions per packet over every
run of every boot (3 boots x 3 runs) under icount; the spread is
(max - min) / median of those runs. On virtio-net links the hub moves
packets in host time, so a run's NAPI batching, and its cost, can move
either way: a median, not the least costly run. The generator alone is the
exception: it crosses no link and does the same work whatever the GRO,
qdisc or flow count, and only slab slow paths (which only add, depending on
the memory layout of the moment) move it, so its figure is the least costly
of all its runs on that link type, shared by the link's rows. A point any
boot of which did not deliver every packet is reported as not delivered and
gets no figure.

The headline figure, router CPU, per router (the topology has two): all a
router's CPU does for a forwarded packet, its receive (veth NAPI, GRO, the
ingress hooks), the forwarding and its transmit; not the generator, not the
sink. The total less the generator, the first hop and the receive at west
(drop-west covers all three) is the two routers' work plus the two later
hops; each later hop costs what the first does (drop-west - gen-alone) and
its receive is the next router's, or the sink's, which only the last one is:
    router CPU = (total - drop_west) / 2
(the total less drop-west leaves both routers' forwarding and transmit, two
hops and two receives: east's and the sink's, which costs what west's does).
The whole path (total, generator to sink) stands beside it. "Forwarding
only" leaves the routers' receive out of both sides, which inflates every
ratio; it is kept in the tables, labelled, for the method:
    forwarding only = (total - 3 * drop_west + 2 * gen_alone) / 2

Points with an encapsulation on the west - east link (guest.sh --encap:
802.1Q, PPPoE) are reported in a table of their own, each encapsulation
from its own runs (its gen-alone and drop-west included: they cross no
encapsulated link, but the topology is another); the plain-Ethernet table,
its points in results.json and its plot bars are what they were without
them. An encapsulated point also shows the fraction of the packets the
module took (taken / (2 routers x received)).

WALL.jsonl (tools/bench/icount/wall.sh, a guest without icount) adds a table of
packets per second and iperf3 TCP goodput: wall-clock figures that depend
on the host, reported beside the icount ones, never mixed with them.

  tools/bench/icount/report.py --from-json RESULTS.json OUTDIR [--readme README.md
                        [--hosts HOSTS.json]] [--plot PLOT.dat]
  tools/bench/icount/report.py --from-json --summary RESULTS.json

The --summary form prints the demo's side-by-side (stock / module: router
CPU, whole path, delivery) of a run.

Writes OUTDIR/NAME.md and OUTDIR/NAME.rst (NAME: RESULTS.json's base name)
again from a results.json this script wrote (Documentation/perf/*.json),
and with --readme replaces the block between README's "figures:status"
markers with the status table of that run (readme_block), with a row of the
four-host run of HOSTS.json (tools/bench/four-hosts/report.py's results.json).
tools/bench/figures runs it for every published run; tools/check-figures
checks that nothing was edited by hand.
"""
import datetime
import json
import os
import statistics
import subprocess
import sys
from collections import defaultdict

FORWARDING = ["plain", "stock", "bulk", "xdp"]
# XDP forwarders: their hops are not the stack's. xdp-ft (xdp-forward in
# flowtable mode, guest.sh; Linux 6.10 and later) has its columns in a run's
# tables only when the run has a point of it that ran (not unavailable).
XDP = ("xdp", "xdp-ft")
# A group is (link, gro, qdisc, flows, family, encap, train); a key adds
# the config.
ENCAP = 5
TRAIN = 6
CONFIG = 7
# The GRO modes that merge a train (tools/testing/lib/topology.sh topo_gro): the
# sink would count a merged skb as one packet, so their points have no
# baselines of their own. They take those of GRO off: a hop then costs what
# the cheapest way across a link costs (the per-CPU backlog, no GRO), and
# the merging and the cutting up count as the routers' work, which their
# CPUs do.
MERGING = ("list", "udpfwd")
# The peer table's columns: the stock alternatives and the module, each in
# every receive mode.
PEERS = [("stock", "on"), ("stock", "off"), ("stock", "list"), ("stock", "udpfwd"),
         ("bulk", "on"), ("bulk", "off"), ("bulk", "list"), ("bulk", "udpfwd"),
         ("xdp", "on"), ("xdp", "off")]
# The same for a run with xdp-ft points (has_config).
PEERS_FT = [("xdp-ft", "on"), ("xdp-ft", "off")]
# XDP forwarding (guest.sh config xdp) counts as forwarded by XDP when the
# routers' IP stacks forwarded at most this share of the packets (the rest
# went through XDP_PASS: no neighbour yet, or a packet the program leaves
# to the stack).
XDP_STACK_SHARE = 0.01
# xdp-ft passes what it does not forward to the stock flowtable, which no
# stack counter shows: its point counts as XDP's when the routers' receive
# devices redirected at least this share of two frames per packet
# (xdp_redirected, veth's counters; guest.sh warns below it too).
XDP_REDIRECTED_SHARE = 0.99
# The encapsulation table's order (then link, GRO, qdisc, family, flows).
ENCAPS = ["none", "vlan", "pppoe", "pppoe-direct"]


def path_cost(total, gen_alone):
    """Per router, with the hops: the total less the generator, halved."""
    return (total - gen_alone) / 2


def router_cost(total, drop_west, gen_alone):
    """Forwarding only, per router: the total less the generator, three hops
    and the three receives (module docstring). Not a headline figure."""
    return (total - 3 * drop_west + 2 * gen_alone) / 2


def router_cpu(total, drop_west):
    """Router CPU, per router: its receive, forwarding and transmit (module
    docstring). The headline figure."""
    return (total - drop_west) / 2


def load(paths):
    runs = defaultdict(list)
    meta = {}
    for boot, path in enumerate(paths):
        with open(path, encoding="utf-8") as f:
            for line in f:
                line = line.strip()
                if not line.startswith("{"):
                    continue
                p = json.loads(line)
                # Packets built in page fragments (guest.sh --headroom)
                # are another generator: their own rows and baselines.
                link = p["link"] + (f"/headroom {p['headroom']}" if p.get("headroom") else "")
                key = (link, p["gro"], p.get("qdisc", "noqueue"), p["flows"],
                       p["family"], p.get("encap", "none"), p.get("train", 1), p["config"])
                p["boot"] = boot
                runs[key].append(p)
                meta = {k: p[k] for k in ("kernel", "len", "burst")}
    return runs, meta


def summarise(samples, least=False):
    delivered = all(s["delivered"] for s in samples)
    statuses = sorted({s["status"] for s in samples})
    out = {
        "boots": len(samples),
        "delivered": delivered,
        "status": statuses[0] if len(statuses) == 1 else ",".join(statuses),
        "sent": [s["sent"] for s in samples],
        "received": [s["received"] for s in samples],
        "reordered": sum(s["reordered"] for s in samples),
    }
    # Delivered, but not forwarded right (a TTL left as it came, a bad
    # header checksum): the figure stands, marked.
    wrong = sorted({s["misforwarded"] for s in samples if s.get("misforwarded")})
    if wrong:
        out["misforwarded"] = "; ".join(wrong)
    if delivered:
        ipp = [r for s in samples for r in (s.get("runs") or [s["instructions_per_packet"]])]
        med = min(ipp) if least else statistics.median(ipp)
        out.update(median=med, min=min(ipp), max=max(ipp),
                   spread_pct=100.0 * (max(ipp) - min(ipp)) / med)
    # Forwarded by the routers' IP stacks, per packet and router (plain:
    # 1; a flowtable or XDP: the share they left to the stack).
    shares = [s["stack_forwarded"] / (2 * s["received"]) for s in samples
              if s.get("stack_forwarded") is not None and s.get("received")]
    if shares:
        out["stack_share"] = max(shares)
    # Frames the routers' receive devices redirected from XDP, per packet
    # and router (guest.sh xdp_redirected; veth only).
    redirected = [s["xdp_redirected"] / (2 * s["received"]) for s in samples
                  if s["config"] in XDP and s.get("xdp_redirected") is not None
                  and s.get("received") and s["link"] == "veth"]
    if redirected:
        out["xdp_redirected_share"] = min(redirected)
    for k in ("offloaded_west", "offloaded_east", "bulk_mean", "kicks_per_packet"):
        vals = [s[k] for s in samples if s.get(k) is not None]
        if vals:
            out[k] = statistics.median(vals)
    # guest.sh --events: calls per packet in softirq context, by name.
    events = defaultdict(list)
    for smp in samples:
        for name, n in (smp.get("events") or {}).items():
            if n is not None:
                events[name].append(n)
    if events:
        out["events"] = {name: statistics.median(v) for name, v in sorted(events.items())}
    if samples[0].get("encap", "none") != "none":
        vals = [s["taken_fraction"] for s in samples if s.get("taken_fraction") is not None]
        if vals:
            out["taken_fraction"] = min(vals)
        # What the module took per encapsulation and sent per packet
        # (warm-up included), summed over the boots.
        module = defaultdict(int)
        for smp in samples:
            for name, n in (smp.get("module") or {}).items():
                module[name] += n
        if module:
            out["module"] = dict(sorted(module.items()))
    return out


def wall_report(path):
    """The wall-clock table: (json, markdown lines, rst lines)."""
    with open(path, encoding="utf-8") as f:
        pts = [json.loads(line) for line in f if line.startswith("{")]
    return wall_render(pts)


def wall_render(pts):
    """wall_report's tables from the points of a wall.sh run."""
    pps = {(p["config"], p["flows"]): p for p in pts if p.get("kind") == "pps"}
    goodput = {p["config"]: p for p in pts if p.get("kind") == "goodput"}
    taken = next((p["taken"] for p in pts if p.get("kind") == "taken"), None)
    flows = sorted({f for _, f in pps})
    header = (["configuration"] + [f"Mpps, {f} flow{'s' if f > 1 else ''}" for f in flows]
              + ["TCP goodput, Gbit/s"])

    def mpps(c, f):
        p = pps.get((c, f))
        if p is None:
            return None, "—"
        if not p["delivered"]:
            return None, "not delivered"
        return p["pps"] / 1e6, f"{p['pps'] / 1e6:.3f}"

    def gbps(c):
        p = goodput.get(c)
        if p is None or p.get("bits_per_second") is None:
            return None, "—"
        return p["bits_per_second"] / 1e9, f"{p['bits_per_second'] / 1e9:.2f}"

    rows, vals = [], {}
    for c in FORWARDING:
        cells = [c]
        for f in flows:
            v, text = mpps(c, f)
            vals[(c, f)] = v
            cells.append(text)
        v, text = gbps(c)
        vals[(c, "tcp")] = v
        cells.append(text)
        rows.append(cells)
    ratio = ["bulk / stock"]
    for k in [*flows, "tcp"]:
        st, bk = vals.get(("stock", k)), vals.get(("bulk", k))
        ratio.append(f"{bk / st:.2f}x" if st and bk else "—")
    rows.append(ratio)
    js = {"points": pts, "taken_by_module": taken}
    md = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    md += ["| " + " | ".join(r) + " |" for r in rows]
    rst = [".. csv-table:: Wall clock, multi-threaded TCG, 2 vCPUs (host-dependent); "
           "veth, GRO on, 128-byte UDP, best of the runs; iperf3 TCP",
           "   :header: " + ", ".join(f'"{c}"' for c in header), ""]
    rst += ["   " + ", ".join(f'"{c}"' for c in r) for r in rows]
    return js, md, rst


def build_table(runs):
    """Points and table rows of the raw runs of every boot."""
    points = []
    groups = sorted({k[:CONFIG] for k in runs}, key=group_order)
    table = []
    # The generator alone does the same work whatever the link's GRO,
    # qdisc or flow count: one figure per link and family (and
    # encapsulation: its own topology), from all its runs.
    gen_alone = defaultdict(list)
    for k, samples in runs.items():
        if k[CONFIG] == "gen-alone":
            gen_alone[(k[0], k[4], k[ENCAP])] += samples
    for g in groups:
        encap = g[ENCAP]
        s = {c: summarise(runs[g + (c,)]) for c in
             ["drop-west"] + FORWARDING + ["xdp-ft"] if g + (c,) in runs}
        off = (g[0], "off") + g[2:]
        if g[1] in MERGING and off + ("drop-west",) in runs:
            s = {"drop-west": summarise(runs[off + ("drop-west",)]), **s}
        if (g[0], g[4], encap) in gen_alone:
            s = {"gen-alone": summarise(gen_alone[(g[0], g[4], encap)], least=True), **s}
        base = s.get("gen-alone", {}).get("median")
        drop = s.get("drop-west", {}).get("median")
        for c, v in s.items():
            if (c in FORWARDING or c in XDP) and base and "median" in v:
                # XDP's hops are not the stack's: its per-router figure
                # keeps them (path_cost), and so does the module's
                # beside it.
                if c in ("bulk",) + XDP:
                    v["path_per_router"] = path_cost(v["median"], base)
                if c not in XDP and drop:
                    v["router_cpu"] = router_cpu(v["median"], drop)
                    v["router"] = router_cost(v["median"], drop, base)
            where = dict(link=g[0], gro=g[1], qdisc=g[2], flows=g[3], family=g[4],
                         train=g[TRAIN])
            if encap != "none":
                where["encap"] = encap
            points.append(dict(where, config=c, **v))
        table.append(dict(link=g[0], gro=g[1], qdisc=g[2], flows=g[3], family=g[4],
                          encap=encap, train=g[TRAIN], s=s))
    return points, table


def group_order(g):
    """Plain Ethernet first, then each encapsulation."""
    if g[ENCAP] == "none":
        return (0, g)
    rank = ENCAPS.index(g[ENCAP]) if g[ENCAP] in ENCAPS else len(ENCAPS)
    return (1, g[0], g[1], g[2], g[4], rank, g[ENCAP], g[3], g[TRAIN])


def table_from_points(points):
    """The table rows of a results.json's points (build_table's output)."""
    rows = {}
    for p in points:
        g = (p["link"], p["gro"], p["qdisc"], p["flows"], p["family"],
             p.get("encap", "none"), p.get("train", 1))
        v = {k: x for k, x in p.items() if k not in
             ("link", "gro", "qdisc", "flows", "family", "encap", "train", "config")}
        row = rows.setdefault(g, dict(link=g[0], gro=g[1], qdisc=g[2], flows=g[3],
                                      family=g[4], encap=g[ENCAP], train=g[TRAIN], s={}))
        row["s"][p["config"]] = v
    for row in rows.values():
        s = row["s"]
        base = s.get("gen-alone", {}).get("median")
        drop = s.get("drop-west", {}).get("median")
        for c, v in s.items():
            # Runs published before the router CPU figure existed.
            if c in FORWARDING and c != "xdp" and base and drop and "median" in v:
                v["router_cpu"] = router_cpu(v["median"], drop)
    return [rows[g] for g in sorted(rows, key=group_order)]


def fmt(v, key):
    if v is None:
        return "—"
    if v.get("status") not in ("ok", None):
        return v["status"]
    if not v["delivered"]:
        return "not delivered"
    if key not in v:
        return "—"
    return f"{v[key]:.0f}" + (" ‡" if v.get("misforwarded") else "")


def ratio_cell(st, bk, key):
    """stock / bulk of KEY, or why there is none."""
    if key in st and key in bk and bk[key] > 0:
        return f"{st[key] / bk[key]:.2f}x", st[key] / bk[key]
    if key in st and key in bk:
        # Forwarding only, virtio-net: the module's batching also made
        # the links cheaper than the baseline's hops (kicks, interrupts).
        return "below zero", None
    return "—", None


def provenance(meta):
    """Where a run's figures come from, for the tables' captions."""
    parts = []
    if meta.get("date"):
        parts.append(meta["date"])
    if meta.get("module_commit"):
        parts.append(f"module {meta['module_commit']}")
    parts.append(f"kernel {meta.get('kernel', '?')}")
    parts.append(f"{meta.get('boots', '?')} boot(s)")
    return ", ".join(parts)


def has_config(rows, config):
    """Whether ROWS (table rows) have a point of CONFIG that ran: xdp-ft's
    columns are only in the tables of a run whose kernel has it."""
    return any(r["s"].get(config, {}).get("status") not in (None, "unavailable")
               for r in rows)


def table_head(encap, ft=False):
    """The columns of a run's table; ENCAP: the encapsulation table's (an
    encap column after IP, the module's share before bulk size); FT: with
    xdp-ft's (whole path, path per router) beside xdp's."""
    head = ["link", "GRO", "egress qdisc", "flows", "train", "IP"]
    head += ["encap"] if encap else []
    head += ["gen alone", "drop at west", "plain", "stock", "bulk", "xdp"]
    head += ["xdp-ft"] if ft else []
    head += ["router CPU: plain", "router CPU: stock", "router CPU: bulk",
             "router CPU: stock / bulk", "whole path: stock / bulk",
             "path per router: bulk", "path per router: xdp"]
    head += ["path per router: xdp-ft"] if ft else []
    head += ["saved per router",
             "forwarding only: stock", "forwarding only: bulk",
             "forwarding only: stock / bulk",
             "kicks/pkt stock", "kicks/pkt bulk"]
    head += ["taken by module"] if encap else []
    head += ["bulk size", "spread max"]
    return head


def render_table(rows, encap, ratios):
    """The markdown lines of a table of ROWS (table_head); each row's
    stock / bulk ratios are appended to RATIOS."""
    ft = has_config(rows, "xdp-ft")
    head = table_head(encap, ft)
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += [render_row(r, encap, ratios, ft) for r in rows]
    return out


def render_row(r, encap, ratios, ft=False):
    """The markdown line of one row of render_table (FT: table_head's)."""
    s = r["s"]
    xdps = XDP if ft else XDP[:1]
    cells = [r["link"], r["gro"], r["qdisc"], str(r["flows"]), str(r["train"]),
             f"v{r['family']}"]
    if encap:
        cells.append(r["encap"])
    for c in ["gen-alone", "drop-west"] + FORWARDING + list(xdps[1:]):
        cells.append(fmt(s.get(c), "median"))
    for c in ("plain", "stock", "bulk"):
        cells.append(fmt(s.get(c), "router_cpu"))
    st, bk = s.get("stock", {}), s.get("bulk", {})
    text, cpu = ratio_cell(st, bk, "router_cpu")
    cells.append(text)
    cells.append(ratio_cell(st, bk, "median")[0])
    for c in ("bulk",) + xdps:
        cells.append(fmt(s.get(c), "path_per_router"))
    if "median" in st and "median" in bk:
        cells.append(f"{(st['median'] - bk['median']) / 2:.0f}")
    else:
        cells.append("—")
    for c in ("stock", "bulk"):
        cells.append(fmt(s.get(c), "router"))
    text, fwd = ratio_cell(st, bk, "router")
    cells.append(text)
    if cpu is not None:
        where = dict(link=r["link"], gro=r["gro"], qdisc=r["qdisc"],
                     flows=r["flows"], family=r["family"], train=r["train"])
        if encap:
            where["encap"] = r["encap"]
        ratios.append(dict(where, router_cpu_stock_over_bulk=cpu,
                           forwarding_only_stock_over_bulk=fwd))
    for v in (st, bk):
        k = v.get("kicks_per_packet")
        cells.append("—" if k is None else f"{k:.3f}")
    if encap:
        t = bk.get("taken_fraction")
        cells.append("—" if t is None else f"{100 * t:.1f} %")
    m = bk.get("bulk_mean")
    cells.append("—" if m is None else f"{m:.1f}")
    spreads = [v.get("spread_pct") for v in s.values() if v.get("spread_pct") is not None]
    cells.append(f"{max(spreads):.2f} %" if spreads else "—")
    return "| " + " | ".join(cells) + " |"


def rst_table(lines, caption):
    """The same table for the rst documentation (Documentation/perf/results.rst)."""
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in lines]
    rst = [f".. csv-table:: {caption}",
           "   :header: " + ", ".join(f'"{c}"' for c in rows[0]), ""]
    for r in rows[2:]:
        rst.append("   " + ", ".join(f'"{c}"' for c in r))
    return "\n".join(rst) + "\n"


def peer_points(rows):
    """The peer table's input: per (link, qdisc, family, flows, train), the
    delivered stock, module and XDP points by (config, GRO), and the GRO-off
    (gen-alone, drop-west) figures."""
    by = defaultdict(dict)
    off_drop = {}
    for r in rows:
        k = (r["link"], r["qdisc"], r["family"], r["flows"], r["train"])
        if r["gro"] == "off":
            base = r["s"].get("gen-alone", {}).get("median")
            drop = r["s"].get("drop-west", {}).get("median")
            if base and drop:
                off_drop[k] = (base, drop)
        for c in ("stock", "bulk") + XDP:
            v = r["s"].get(c)
            if v and v.get("delivered") and "median" in v:
                if c == "xdp" and v.get("stack_share", 1) > XDP_STACK_SHARE:
                    continue
                if c in XDP and v.get("xdp_redirected_share", 1) < XDP_REDIRECTED_SHARE:
                    continue
                by[k][(c, r["gro"])] = v
    return by, off_drop


def peer_head(ft=False):
    """The peer table's columns (FT: with xdp-ft's beside xdp's)."""
    head = ["link", "egress qdisc", "IP", "flows", "train"]
    head += [f"{c}, GRO {g}" for c, g in PEERS + (PEERS_FT if ft else [])]
    head += ["best stock", "best module", "whole path: best stock / best module",
             "router CPU: best stock", "router CPU: best module",
             "router CPU: stock / module",
             "path per router: best module", "path per router: best XDP",
             "path: module / XDP"]
    head += ["path per router: best xdp-ft", "path: module / xdp-ft"] if ft else []
    return head


def peer_best(modes):
    """Per side (stock, bulk, xdp, xdp-ft), its least costly mode of MODES:
    (whole path, GRO, point), or None."""
    best = {}
    for side in ("stock", "bulk") + XDP:
        cand = [(v["median"], g, v) for (c, g), v in modes.items() if c == side]
        best[side] = min(cand, key=lambda t: t[0]) if cand else None
    return best


def peer_row(k, modes, off_drop, ft=False):
    """One row of the peer table: (markdown line, results.json entry or
    None). MODES: the row's points by (config, GRO) (peer_points); FT:
    peer_head's."""
    cells = [k[0], k[1], f"v{k[2]}", str(k[3]), str(k[4])]
    for p in PEERS + (PEERS_FT if ft else []):
        v = modes.get(p)
        cells.append("—" if v is None else fmt(v, "median"))
    best = peer_best(modes)
    for side in ("stock", "bulk"):
        b = best[side]
        cells.append("—" if b is None else f"{b[0]:.0f} (GRO {b[1]})")
    st, bk = best["stock"], best["bulk"]
    cells.append(f"{st[0] / bk[0]:.2f}x" if st and bk else "—")
    routers = {}
    for side, b in (("stock", st), ("bulk", bk)):
        if b is not None and k in off_drop:
            routers[side] = router_cpu(b[0], off_drop[k][1])
        cells.append(f"{routers[side]:.0f}" if side in routers else "—")
    if routers.get("bulk", 0) > 0 and "stock" in routers:
        cells.append(f"{routers['stock'] / routers['bulk']:.2f}x")
    else:
        cells.append("—")
    # XDP against the module per router with the hops included
    # (path_cost): XDP's hops are not the stack's (a redirected
    # frame is received without an skb), so subtracting the
    # stack's receive from it would credit XDP's cheaper receive
    # to its router.
    paths = {}
    if k in off_drop:
        for side in ("bulk",) + XDP:
            if best[side] is not None:
                paths[side] = path_cost(best[side][0], off_drop[k][0])
    for side in ("bulk", "xdp"):
        cells.append(f"{paths[side]:.0f}" if side in paths else "—")
    for side in XDP if ft else XDP[:1]:
        if side != "xdp":
            cells.append(f"{paths[side]:.0f}" if side in paths else "—")
        if paths.get(side, 0) > 0 and "bulk" in paths:
            cells.append(f"{paths['bulk'] / paths[side]:.2f}x")
        else:
            cells.append("—")
    js = peer_json(k, best, routers, paths) if st and bk else None
    return "| " + " | ".join(cells) + " |", js


def peer_json(k, best, routers, paths):
    """results.json's entry of a peer row (peer_row) with both sides."""
    st, bk, xd = best["stock"], best["bulk"], best["xdp"]
    ft = best["xdp-ft"]
    extra = {} if ft is None else dict(best_xdp_ft=dict(
        gro=ft[1], whole_path=ft[0], path_per_router=paths.get("xdp-ft"),
        misforwarded=ft[2].get("misforwarded")))
    return dict(link=k[0], qdisc=k[1], family=k[2], flows=k[3], train=k[4],
                best_stock=dict(gro=st[1], whole_path=st[0],
                                router_cpu=routers.get("stock"),
                                misforwarded=st[2].get("misforwarded")),
                best_bulk=dict(gro=bk[1], whole_path=bk[0],
                               router_cpu=routers.get("bulk"),
                               misforwarded=bk[2].get("misforwarded")),
                best_stock_over_best_bulk=st[0] / bk[0],
                path_per_router_bulk=paths.get("bulk"),
                best_xdp=None if xd is None else dict(
                    gro=xd[1], whole_path=xd[0],
                    path_per_router=paths.get("xdp"),
                    misforwarded=xd[2].get("misforwarded")), **extra)


def peers(rows):
    """The peer table: per (link, qdisc, family, flows, train) of plain
    Ethernet, the whole path of stock and module in every receive mode,
    and the least costly of each side. Its router CPU figures all take
    the GRO-off drop-west (see MERGING), whatever the mode, so that they
    compare across modes: the receive work past a plain hop, GRO's
    included, is the routers'."""
    by, off_drop = peer_points(rows)
    if not any(k[1] in MERGING for cells in by.values() for k in cells):
        return [], []
    ft = has_config(rows, "xdp-ft")
    head = peer_head(ft)
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    js = []
    for k in sorted(by):
        line, entry = peer_row(k, by[k], off_drop, ft)
        out.append(line)
        if entry is not None:
            js.append(entry)
    return out, js


def main_tables(plain_rows, encap_rows, where, nboots, ratios):
    """The plain-Ethernet table and the encapsulation table: (markdown,
    rst)."""
    md, rst_text = "", ""
    if plain_rows or not encap_rows:
        lines = render_table(plain_rows, False, ratios)
        md += "\n".join(lines) + "\n"
        rst_text = rst_table(lines, f"Guest instructions per packet ({where}; medians of "
                             f"every run of {nboots} boot(s)); router CPU and forwarding-only "
                             "columns per router")
    if encap_rows:
        lines = render_table(encap_rows, True, ratios)
        md += "\nEncapsulation on the west - east link:\n\n"
        md += "\n".join(lines) + "\n"
        rst_text += ("\n" if rst_text else "") + rst_table(
            lines, "Encapsulation on the west - east link (vlan: 802.1Q id 100; pppoe: a "
            f"PPPoE session): guest instructions per packet ({where}; medians of every "
            f"run of {nboots} boot(s)); router columns per router, encapsulation included")
    return md, rst_text


def table_section(lines, md_intro, rst_caption):
    """A table's section: its markdown under @md_intro and its rst under
    @rst_caption, (markdown, rst); empty without a table."""
    if not lines:
        return "", ""
    md = "\n" + md_intro + ":\n\n" + "\n".join(lines) + "\n"
    return md, "\n" + rst_table(lines, rst_caption)


def peers_section(peer_lines, where):
    """The peer table's section: (markdown, rst), empty without one."""
    ft = "; xdp-ft: xdp-forward in flowtable mode beside the stock flowtable" \
        if peer_lines and "xdp-ft" in peer_lines[0] else ""
    return table_section(
        peer_lines, "The module against every stock receive mode and XDP forwarding "
        "(whole path, instructions per packet; GRO list: fraglist GRO, udpfwd: UDP GRO "
        "forwarding, at the routers' receive; xdp: xdp_fwd on the routers' receive "
        f"devices{ft})",
        f"The module against every stock receive mode ({where}): whole "
        "path, generator to sink, guest instructions per packet (medians); router "
        "CPU per router, for the least costly mode of each side, over the GRO-off "
        "drop-west")


def events_section(table, where):
    """The events table's section (guest.sh --events): (markdown, rst),
    empty without one."""
    return table_section(
        events_table(table), "What an instruction count cannot see (guest.sh --events): "
        "kernel function calls in softirq context per forwarded packet and router, "
        "(config - drop at west) / 2 as router CPU, one generator run after the "
        "measured ones",
        f"Kernel function calls in softirq context per forwarded packet "
        f"and router ({where}; guest.sh --events)")


def misforwarded_note(points):
    """The note on misforwarded points (‡), the same in both texts; empty
    without one."""
    misforwarded = sorted({f"{p['config']}, GRO {p['gro']}: {p['misforwarded']}"
                           for p in points if p.get("misforwarded")})
    if not misforwarded:
        return "", ""
    note = ("‡ every packet arrived, but not every one was forwarded right "
            "(the sink's TTL range and bad IPv4 header checksums): " + "; ".join(misforwarded))
    return "\n" + note + "\n", "\n" + note + "\n"


def wall_section(wall_js):
    """The wall-clock table's section: (markdown, rst), empty without a
    wall-clock run."""
    if not wall_js:
        return "", ""
    _, wall_md, wall_rst = wall_render(wall_js["points"])
    md = "\nWall clock (multi-threaded TCG, host-dependent):\n\n" + "\n".join(wall_md) + "\n"
    return md, "\n" + "\n".join(wall_rst) + "\n"


def render_all(table, points, meta, wall_js):
    """The markdown and rst texts of a run, its ratios and its peer rows."""
    nboots = meta.get("boots", 1)
    ratios = []
    plain_rows = [r for r in table if r["encap"] == "none"]
    encap_rows = [r for r in table if r["encap"] != "none"]
    where = provenance(meta)
    md, rst_text = main_tables(plain_rows, encap_rows, where, nboots, ratios)
    md = f"The run: {where}.\n\n" + md
    peer_lines, peer_js = peers(plain_rows)
    for sec_md, sec_rst in (peers_section(peer_lines, where), events_section(table, where),
                            misforwarded_note(points), wall_section(wall_js)):
        md += sec_md
        rst_text += sec_rst
    return md, rst_text, ratios, peer_js


# guest.sh --events: the names, in the table's order.
EVENTS = ["spin_locks", "route_releases", "neigh_xmit", "napi_schedules", "qdisc_runs",
          "doorbells"]


def events_table(table):
    """Per router, stock beside the module, each event of guest.sh --events:
    (config - drop-west) / 2, as router CPU."""
    head = ["link", "GRO", "egress qdisc", "encap", "flows", "train", "IP"]
    for e in EVENTS:
        head += [f"{e}: stock", f"{e}: bulk"]
    out = []
    for r in table:
        s = r["s"]
        drop = s.get("drop-west", {}).get("events")
        if not drop or not any(s.get(c, {}).get("events") for c in ("stock", "bulk")):
            continue
        cells = [r["link"], r["gro"], r["qdisc"], r["encap"], str(r["flows"]), str(r["train"]),
                 f"v{r['family']}"]
        for e in EVENTS:
            for c in ("stock", "bulk"):
                ev = s.get(c, {}).get("events") or {}
                cells.append("—" if e not in ev or e not in drop
                             else f"{(ev[e] - drop[e]) / 2:.2f}")
        out.append("| " + " | ".join(cells) + " |")
    if not out:
        return []
    return ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)] + out


README_FLOWS = (1, 10, 100, 10000)


def readme_cell(peer, module, key):
    """A status-table cell: the peer's KEY / the module's, or why not."""
    if not peer or not module:
        return "not run"
    for v in (peer, module):
        if v.get("status") not in ("ok", None):
            return v["status"]
        if not v.get("delivered"):
            return "not delivered"
    if peer.get("xdp_redirected_share", 1) < XDP_REDIRECTED_SHARE:
        return "not forwarded by XDP"
    if key not in peer or key not in module:
        return "—"
    return f"{peer[key]:.0f} / {module[key]:.0f} = {peer[key] / module[key]:.2f}x"


def hosts_cells(hosts):
    """The status table's four-host row (Documentation/perf/hosts.json):
    router CPU, the mean of the two routers, stock / the module on both;
    a point not fully delivered (four-hosts/report.py's notes) has no figure."""
    by = {(p["mode"], p["flows"]): p for p in hosts["points"] if p["train"] == 1}
    cells = []
    for flows in README_FLOWS:
        st, bk = by.get(("stock", flows)), by.get(("bulk", flows))
        if not st or not bk:
            cells.append("not run")
        elif min(st["delivered_min"], bk["delivered_min"]) < 0.999:
            cells.append("not all delivered")
        else:
            cells.append(f"{st['router']} / {bk['router']} = {st['router'] / bk['router']:.2f}x")
    return cells


def hosts_provenance(hosts):
    """The four-host run's caption: date, module, kernel, repetitions, the
    flow counts it has that the status table's columns do not."""
    meta = hosts["meta"]
    reps = min(len(p[r]["runs"]) for p in hosts["points"] for r in ("west", "east")
               if p.get(r))
    other = sorted({p["flows"] for p in hosts["points"]} - set(README_FLOWS))
    parts = [meta.get("date"), f"module {meta['module_commit']}" if meta.get("module_commit")
             else None, f"kernel {meta['kernel']}", f"{reps} repetitions a point"]
    text = ", ".join(p for p in parts if p)
    if other:
        text += "; " + " and ".join(f"{f:,}" for f in other) + " flows in hosts.md"
    return text


def readme_block(table, meta, hosts=None):
    """README's status table: one row a comparison, the peer's figure over
    the module's (above 1.00x the module costs less), one column a flow
    count: router CPU and whole path against the stock flowtable with GRO
    on at both (Debian's default) and GRO off at both (stock's least costly
    mode that forwards every packet right), veth, round-robin flows; the
    XDP flowtable peer (xdp-ft) with GRO off at both (XDP forwards before
    GRO: GRO on only adds the sink's receive work, and what XDP passes on):
    path per router, as XDP's hops are not the stack's; and, from HOSTS (the four-host run's
    results.json), stock against the module on both routers."""
    by = {}
    for r in table:
        if (r["encap"] == "none" and r["link"].startswith("veth") and r["qdisc"] == "noqueue"
                and r["family"] == 4 and r["train"] == 1 and r["gro"] in ("on", "off")):
            by[(r["gro"], r["flows"])] = r["s"]
    rows = []
    for gro in ("on", "off"):
        for key, what in (("router_cpu", "router CPU"), ("median", "whole path")):
            rows.append([f"{what}, stock / module, GRO {gro}"] + [
                readme_cell(by.get((gro, f), {}).get("stock"),
                            by.get((gro, f), {}).get("bulk"), key) for f in README_FLOWS])
    if has_config(table, "xdp-ft"):
        rows.append(["path per router, xdp-ft / module, GRO off"] + [
            readme_cell(by.get(("off", f), {}).get("xdp-ft"),
                        by.get(("off", f), {}).get("bulk"), "path_per_router")
            for f in README_FLOWS])
    if hosts:
        rows.append(["four hosts: router CPU, stock / module on both routers"]
                    + hosts_cells(hosts))
    out = [f"Instructions per packet, peer / module: above 1.00x the module costs less. "
           f"veth: the peers run ({provenance(meta)}; QEMU -icount, 128-byte UDP in "
           "bursts of 32, round-robin flows)."]
    if hosts:
        out[0] += (" Four hosts: four QEMU guests, virtio-net "
                   f"({hosts_provenance(hosts)}).")
    out += ["", "| peer / module | " + " | ".join(
        f"{f:,} flow{'s' if f > 1 else ''}" for f in README_FLOWS) + " |",
        "| --- |" + " --- |" * len(README_FLOWS)]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return out


def delivery(v):
    """A configuration's delivery over its boots: received of sent."""
    if not v:
        return "—"
    sent, received = sum(v.get("sent", [])), sum(v.get("received", []))
    text = f"{received} of {sent}"
    if v.get("reordered"):
        text += f", {v['reordered']} out of order"
    if v.get("misforwarded"):
        text += ", misforwarded"
    return text


def summary_block(table, meta):
    """The demo's side-by-side: per plain-Ethernet point, stock / module
    router CPU and whole path, and what each delivered."""
    out = [f"Guest instructions per packet, stock flowtable / nf_flow_bulk ({provenance(meta)}):",
           "", "| link | GRO | egress qdisc | flows | router CPU | whole path | delivered: stock "
           "| delivered: module |", "|---|---|---|---|---|---|---|---|"]
    for r in table:
        s = r["s"]
        st, bk = s.get("stock"), s.get("bulk")
        if r["encap"] != "none" or not st or not bk:
            continue
        cells = [r["link"], r["gro"], r["qdisc"], str(r["flows"])]
        for key in ("router_cpu", "median"):
            if key in st and key in bk:
                cells.append(f"{st[key]:.0f} / {bk[key]:.0f} = {st[key] / bk[key]:.2f}x")
            else:
                cells.append("not delivered" if not (st["delivered"] and bk["delivered"])
                             else "—")
        cells += [delivery(st), delivery(bk)]
        out.append("| " + " | ".join(cells) + " |")
    return out


def replace_block(path, name, lines):
    """Replace the lines between README's figures:NAME markers."""
    begin, end = f"<!-- figures:{name} begin -->", f"<!-- figures:{name} end -->"
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if begin not in text or end not in text:
        sys.exit(f"report.py: {path} has no {begin} ... {end} block")
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    with open(path, "w", encoding="utf-8") as f:
        f.write(head + begin + "\n" + "\n".join(lines) + "\n" + end + tail)


def write_plot(table, path):
    """tools/bench/icount/plot.gp's data: router CPU of plain, stock and bulk."""
    with open(path, "w", encoding="utf-8") as f:
        f.write("# label plain stock bulk (router CPU, instructions per packet)\n")
        for r in table:
            s = r["s"]
            vals = [s.get(c, {}).get("router_cpu") for c in ("plain", "stock", "bulk")]
            label = f"{r['link']}/gro-{r['gro']}/{r['qdisc']}/{r['flows']}fl/v{r['family']}"
            if r["train"] != 1:
                label += f"/train{r['train']}"
            if r["encap"] != "none":
                label += f"/{r['encap']}"
            f.write(label + " " + " ".join("NaN" if v is None else f"{v:.1f}" for v in vals)
                    + "\n")


def module_commit(repo):
    """The last commit that changed module/, -dirty when module/ has changes
    of its own: the module the run measured."""
    try:
        rev = subprocess.run(["git", "-C", repo, "log", "-1", "--format=%h", "--", "module"],
                             capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", repo, "diff", "--quiet", "HEAD", "--", "module"],
                               check=False).returncode != 0
    except (OSError, subprocess.CalledProcessError):
        return None
    return rev + ("-dirty" if dirty else "")


def from_json(args):
    opts = {"--readme": None, "--plot": None, "--summary": None, "--hosts": None}
    for opt in opts:
        if opt in args:
            i = args.index(opt)
            opts[opt] = args[i + 1]
            del args[i:i + 2]
    readme, plot = opts["--readme"], opts["--plot"]
    if opts["--summary"] is not None:
        # The demo's short table, printed; nothing written.
        with open(opts["--summary"], encoding="utf-8") as f:
            res = json.load(f)
        print("\n".join(summary_block(table_from_points(res["points"]), res["meta"])))
        return 0
    if len(args) != 2:
        sys.exit(__doc__)
    src, outdir = args
    with open(src, encoding="utf-8") as f:
        res = json.load(f)
    table = table_from_points(res["points"])
    md, rst_text, _, _ = render_all(table, res["points"], res["meta"], res.get("wall"))
    name = os.path.splitext(os.path.basename(src))[0]
    with open(os.path.join(outdir, f"{name}.md"), "w", encoding="utf-8") as f:
        f.write(md)
    with open(os.path.join(outdir, f"{name}.rst"), "w", encoding="utf-8") as f:
        f.write(rst_text)
    if readme:
        hosts = None
        if opts["--hosts"]:
            with open(opts["--hosts"], encoding="utf-8") as f:
                hosts = json.load(f)
        replace_block(readme, "status", readme_block(table, res["meta"], hosts))
    if plot:
        write_plot(table, plot)


def main():
    args = sys.argv[1:]
    if args and args[0] == "--from-json":
        return from_json(args[1:])
    wall = None
    if len(args) > 2 and args[1] == "--wall":
        wall = args[2]
        del args[1:3]
    if len(args) < 2:
        sys.exit(__doc__)
    outdir, paths = args[0], args[1:]
    runs, meta = load(paths)
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    meta = dict(meta, boots=len(paths),
                date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
                module_commit=module_commit(repo),
                metric="guest instructions per packet (QEMU -icount shift=0)")
    points, table = build_table(runs)
    wall_js = None
    if wall:
        wall_js, _, _ = wall_report(wall)
    md, rst_text, ratios, peer_js = render_all(table, points, meta, wall_js)

    with open(f"{outdir}/results.json", "w", encoding="utf-8") as f:
        json.dump({"schema": 1, "meta": meta, "points": points,
                   "stock_over_bulk": ratios, "peers": peer_js, "wall": wall_js},
                  f, indent=2)
        f.write("\n")
    with open(f"{outdir}/results.md", "w", encoding="utf-8") as f:
        f.write(md)
    with open(f"{outdir}/results.rst", "w", encoding="utf-8") as f:
        f.write(rst_text)
    write_plot(table, f"{outdir}/plot.dat")
    print(md, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
