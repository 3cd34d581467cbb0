#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Aggregate the benchmark's raw points (JSON lines, one file per boot).

  tools/bench/report.py OUTDIR [--wall WALL.jsonl] RAW.jsonl...

Writes OUTDIR/results.json, OUTDIR/results.md and OUTDIR/plot.dat (for
tools/bench/plot.gp), and prints the markdown table.

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

Router cost, per router (the topology has two): the total minus the
generator, minus the first hop and the receive at west (drop-west covers
both), minus the two later hops and receives, which cost what the first does
(drop-west - gen-alone) and which every configuration pays alike:
    router = (total - 3 * drop_west + 2 * gen_alone) / 2

Points with an encapsulation on the west - east link (guest.sh --encap:
802.1Q, PPPoE) are reported in a table of their own, each encapsulation
from its own runs (its gen-alone and drop-west included: they cross no
encapsulated link, but the topology is another); the plain-Ethernet table,
its points in results.json and its plot bars are what they were without
them. An encapsulated point also shows the fraction of the packets the
module took (taken / (2 routers x received)).

WALL.jsonl (tools/bench/wall.sh, a guest without icount) adds a table of
packets per second and iperf3 TCP goodput: wall-clock figures that depend
on the host, reported beside the icount ones, never mixed with them.
"""
import json
import statistics
import sys
from collections import defaultdict

FORWARDING = ["plain", "stock", "bulk", "xdp"]
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
# XDP forwarding (guest.sh config xdp) counts as forwarded by XDP when the
# routers' IP stacks forwarded at most this share of the packets (the rest
# went through XDP_PASS: no neighbour yet, or a packet the program leaves
# to the stack).
XDP_STACK_SHARE = 0.01
# The encapsulation table's order (then link, GRO, qdisc, family, flows).
ENCAPS = ["none", "vlan", "pppoe", "pppoe-direct"]


def path_cost(total, gen_alone):
    """Per router, with the hops: the total less the generator, halved."""
    return (total - gen_alone) / 2


def router_cost(total, drop_west, gen_alone):
    """Per router: the total less the generator and three hops (module docstring)."""
    return (total - 3 * drop_west + 2 * gen_alone) / 2


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
    for k in ("offloaded_west", "offloaded_east", "bulk_mean", "kicks_per_packet"):
        vals = [s[k] for s in samples if s.get(k) is not None]
        if vals:
            out[k] = statistics.median(vals)
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


def main():
    args = sys.argv[1:]
    wall = None
    if len(args) > 2 and args[1] == "--wall":
        wall = args[2]
        del args[1:3]
    if len(args) < 2:
        sys.exit(__doc__)
    outdir, paths = args[0], args[1:]
    runs, meta = load(paths)
    points = []
    # Plain Ethernet first, then each encapsulation.
    def order(g):
        if g[ENCAP] == "none":
            return (0, g)
        rank = ENCAPS.index(g[ENCAP]) if g[ENCAP] in ENCAPS else len(ENCAPS)
        return (1, g[0], g[1], g[2], g[4], rank, g[ENCAP], g[3], g[TRAIN])
    groups = sorted({k[:CONFIG] for k in runs}, key=order)
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
             ["drop-west"] + FORWARDING if g + (c,) in runs}
        off = (g[0], "off") + g[2:]
        if g[1] in MERGING and off + ("drop-west",) in runs:
            s = {"drop-west": summarise(runs[off + ("drop-west",)]), **s}
        if (g[0], g[4], encap) in gen_alone:
            s = {"gen-alone": summarise(gen_alone[(g[0], g[4], encap)], least=True), **s}
        base = s.get("gen-alone", {}).get("median")
        drop = s.get("drop-west", {}).get("median")
        for c, v in s.items():
            if c in FORWARDING and base and "median" in v:
                # XDP's hops are not the stack's: its per-router figure
                # keeps them (path_cost), and so does the module's
                # beside it.
                if c in ("bulk", "xdp"):
                    v["path_per_router"] = path_cost(v["median"], base)
                if c != "xdp" and drop:
                    v["router"] = router_cost(v["median"], drop, base)
            where = dict(link=g[0], gro=g[1], qdisc=g[2], flows=g[3], family=g[4],
                         train=g[TRAIN])
            if encap != "none":
                where["encap"] = encap
            points.append(dict(where, config=c, **v))
        row = dict(link=g[0], gro=g[1], qdisc=g[2], flows=g[3], family=g[4], encap=encap,
                   train=g[TRAIN], s=s)
        table.append(row)

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

    ratios = []

    def render(rows, encap):
        """The markdown lines of a table of ROWS; ENCAP: the encapsulation
        table (an encap column after IP, the module's share before bulk
        size)."""
        head = ["link", "GRO", "egress qdisc", "flows", "train", "IP"]
        head += ["encap"] if encap else []
        head += ["gen alone", "drop at west", "plain", "stock", "bulk", "xdp",
                 "router: plain", "router: stock", "router: bulk",
                 "path per router: bulk", "path per router: xdp", "stock / bulk",
                 "saved per router",
                 "kicks/pkt stock", "kicks/pkt bulk"]
        head += ["taken by module"] if encap else []
        head += ["bulk size", "spread max"]
        out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        out += [render_row(r, encap) for r in rows]
        return out

    def render_row(r, encap):
        s = r["s"]
        cells = [r["link"], r["gro"], r["qdisc"], str(r["flows"]), str(r["train"]),
                 f"v{r['family']}"]
        if encap:
            cells.append(r["encap"])
        for c in ["gen-alone", "drop-west"] + FORWARDING:
            cells.append(fmt(s.get(c), "median"))
        for c in ("plain", "stock", "bulk"):
            cells.append(fmt(s.get(c), "router"))
        for c in ("bulk", "xdp"):
            cells.append(fmt(s.get(c), "path_per_router"))
        st, bk = s.get("stock", {}), s.get("bulk", {})
        if "router" in st and "router" in bk and bk["router"] > 0:
            ratio = st["router"] / bk["router"]
            where = dict(link=r["link"], gro=r["gro"], qdisc=r["qdisc"],
                         flows=r["flows"], family=r["family"], train=r["train"])
            if encap:
                where["encap"] = r["encap"]
            ratios.append(dict(where, stock_over_bulk=ratio))
            cells.append(f"{ratio:.2f}x")
        elif "router" in st and "router" in bk:
            # The module's batching also made the links cheaper than the
            # baseline's hops (virtio kicks, receive interrupts).
            cells.append("below zero")
        else:
            cells.append("—")
        if "median" in st and "median" in bk:
            cells.append(f"{(st['median'] - bk['median']) / 2:.0f}")
        else:
            cells.append("—")
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

    def peers(rows):
        """The peer table: per (link, qdisc, family, flows, train) of plain
        Ethernet, the whole path of stock and module in every receive mode,
        and the least costly of each side. Its router figures all take the
        GRO-off baselines (see MERGING), whatever the mode, so that they
        compare across modes: the receive work past a plain hop, GRO's
        included, is the routers'."""
        by = defaultdict(dict)
        off_base = {}
        for r in rows:
            k = (r["link"], r["qdisc"], r["family"], r["flows"], r["train"])
            if r["gro"] == "off":
                base = r["s"].get("gen-alone", {}).get("median")
                drop = r["s"].get("drop-west", {}).get("median")
                if base and drop:
                    off_base[k] = (base, drop)
            for c in ("stock", "bulk", "xdp"):
                v = r["s"].get(c)
                if v and v.get("delivered") and "median" in v:
                    if c == "xdp" and v.get("stack_share", 1) > XDP_STACK_SHARE:
                        continue
                    by[k][(c, r["gro"])] = v
        if not any(k[1] in MERGING for cells in by.values() for k in cells):
            return [], []
        head = ["link", "egress qdisc", "IP", "flows", "train"]
        head += [f"{c}, GRO {g}" for c, g in PEERS]
        head += ["best stock", "best module", "best stock / best module",
                 "router: best stock", "router: best module", "router: stock / module",
                 "path per router: best module", "path per router: best XDP",
                 "path: module / XDP"]
        out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        js = []
        for k in sorted(by):
            cells = [k[0], k[1], f"v{k[2]}", str(k[3]), str(k[4])]
            for p in PEERS:
                v = by[k].get(p)
                cells.append("—" if v is None else fmt(v, "median"))
            best = {}
            for side in ("stock", "bulk", "xdp"):
                cand = [(v["median"], g, v) for (c, g), v in by[k].items() if c == side]
                best[side] = min(cand, key=lambda t: t[0]) if cand else None
            for side in ("stock", "bulk"):
                b = best[side]
                cells.append("—" if b is None else f"{b[0]:.0f} (GRO {b[1]})")
            st, bk = best["stock"], best["bulk"]
            cells.append(f"{st[0] / bk[0]:.2f}x" if st and bk else "—")
            routers = {}
            for side, b in (("stock", st), ("bulk", bk)):
                if b is not None and k in off_base:
                    base, drop = off_base[k]
                    routers[side] = router_cost(b[0], drop, base)
                cells.append(f"{routers[side]:.0f}" if side in routers else "—")
            if routers.get("bulk", 0) > 0 and "stock" in routers:
                cells.append(f"{routers['stock'] / routers['bulk']:.2f}x")
            else:
                cells.append("—")
            # XDP against the module per router with the hops included
            # (path_cost): XDP's hops are not the stack's (a redirected
            # frame is received without an skb), so subtracting the
            # stack's hops from it, as router_cost does, would credit
            # XDP's cheaper receive to its router.
            xd = best["xdp"]
            paths = {}
            if k in off_base:
                for side, b in (("bulk", bk), ("xdp", xd)):
                    if b is not None:
                        paths[side] = path_cost(b[0], off_base[k][0])
            for side in ("bulk", "xdp"):
                cells.append(f"{paths[side]:.0f}" if side in paths else "—")
            if paths.get("xdp", 0) > 0 and "bulk" in paths:
                cells.append(f"{paths['bulk'] / paths['xdp']:.2f}x")
            else:
                cells.append("—")
            out.append("| " + " | ".join(cells) + " |")
            if st and bk:
                js.append(dict(link=k[0], qdisc=k[1], family=k[2], flows=k[3], train=k[4],
                               best_stock=dict(gro=st[1], whole_path=st[0],
                                               router=routers.get("stock"),
                                               misforwarded=st[2].get("misforwarded")),
                               best_bulk=dict(gro=bk[1], whole_path=bk[0],
                                              router=routers.get("bulk"),
                                              misforwarded=bk[2].get("misforwarded")),
                               best_stock_over_best_bulk=st[0] / bk[0],
                               path_per_router_bulk=paths.get("bulk"),
                               best_xdp=None if xd is None else dict(
                                   gro=xd[1], whole_path=xd[0],
                                   path_per_router=paths.get("xdp"),
                                   misforwarded=xd[2].get("misforwarded"))))
        return out, js

    plain_rows = [r for r in table if r["encap"] == "none"]
    misforwarded = sorted({f"{p['config']}, GRO {p['gro']}: {p['misforwarded']}"
                           for p in points if p.get("misforwarded")})
    encap_rows = [r for r in table if r["encap"] != "none"]
    md, rst_text = "", ""
    if plain_rows or not encap_rows:
        lines = render(plain_rows, False)
        md = "\n".join(lines) + "\n"
        rst_text = rst_table(lines, "Guest instructions per packet (medians of every run "
                             f"of {len(paths)} boot(s)); router columns per router")
    if encap_rows:
        lines = render(encap_rows, True)
        md += ("\n" if md else "") + "Encapsulation on the west - east link:\n\n"
        md += "\n".join(lines) + "\n"
        rst_text += ("\n" if rst_text else "") + rst_table(
            lines, "Encapsulation on the west - east link (vlan: 802.1Q id 100; pppoe: a "
            "PPPoE session): guest instructions per packet (medians of every run of "
            f"{len(paths)} boot(s)); router columns per router, encapsulation included")
    peer_lines, peer_js = peers(plain_rows)
    if peer_lines:
        md += ("\nThe module against every stock receive mode and XDP forwarding (whole "
               "path, instructions per packet; GRO list: fraglist GRO, udpfwd: UDP GRO "
               "forwarding, at the routers' receive; xdp: xdp_fwd on the routers' receive "
               "devices):\n\n" + "\n".join(peer_lines) + "\n")
        rst_text += "\n" + rst_table(
            peer_lines, "The module against every stock receive mode: whole path, "
            "generator to sink, guest instructions per packet (medians); the router "
            "columns per router, for the least costly mode of each side, over the "
            "GRO-off hops")
    if misforwarded:
        note = ("‡ every packet arrived, but not every one was forwarded right "
                "(the sink's TTL range and bad IPv4 header checksums): " + "; ".join(misforwarded))
        md += "\n" + note + "\n"
        rst_text += "\n" + note + "\n"
    wall_js = None
    if wall:
        wall_js, wall_md, wall_rst = wall_report(wall)
        md += "\nWall clock (multi-threaded TCG, host-dependent):\n\n" + "\n".join(wall_md) + "\n"
        rst_text += "\n" + "\n".join(wall_rst) + "\n"

    with open(f"{outdir}/results.json", "w", encoding="utf-8") as f:
        json.dump({"schema": 1, "meta": dict(meta, boots=len(paths),
                                            metric="guest instructions per packet (QEMU -icount shift=0)"),
                   "points": points, "stock_over_bulk": ratios, "peers": peer_js,
                   "wall": wall_js},
                  f, indent=2)
        f.write("\n")
    with open(f"{outdir}/results.md", "w", encoding="utf-8") as f:
        f.write(md)
    with open(f"{outdir}/results.rst", "w", encoding="utf-8") as f:
        f.write(rst_text)
    with open(f"{outdir}/plot.dat", "w", encoding="utf-8") as f:
        f.write("# label plain stock bulk (router instructions per packet)\n")
        for r in table:
            s = r["s"]
            vals = [s.get(c, {}).get("router") for c in ("plain", "stock", "bulk")]
            label = f"{r['link']}/gro-{r['gro']}/{r['qdisc']}/{r['flows']}fl/v{r['family']}"
            if r["train"] != 1:
                label += f"/train{r['train']}"
            if r["encap"] != "none":
                label += f"/{r['encap']}"
            f.write(label + " " + " ".join("NaN" if v is None else f"{v:.1f}" for v in vals) + "\n")
    print(md, end="")


if __name__ == "__main__":
    main()
