#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""How long the module's rescans hold RTNL while many namespaces churn.

Run inside a guest (make bench-rtnl, or tools/vm/run --icount --
tools/bench/icount/rtnl.py). Issue 22's attack, as a container's root could run
it: in each of --ns namespaces, --attachments flowtables on one veth
device are attached (flowbulk -f, hook early_ingress), then deleted, so the
module's hooks stay and decline; --dummies more devices each carry a
netdev chain of their own (foreign hooks every walk of the namespace's
devices passes). Then, for --seconds, round after round, in every namespace: a netdev chain
is added on the veth, a packet enters it, the chain is deleted, a packet
enters it. Every packet finds the hook list changed and may ask for a
rescan (at most ten a second per namespace).

The figures: function_graph on nfb_rescan_all() (called with RTNL held,
nothing else of the module takes RTNL during the churn): calls, total and
longest time. Under QEMU -icount one nanosecond is one guest instruction,
so the figures count instructions, not a crowded host's time. One JSON line
and a summary.
"""
import argparse
import ctypes
import fcntl
import json
import os
import re
import socket
import struct
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
TRACING = "/sys/kernel/tracing"
CLONE_NEWNET = 0x40000000
TRACED = "nfb_rescan_all"
SIOCGIFHWADDR = 0x8927

libc = ctypes.CDLL(None, use_errno=True)
nftlib = ctypes.CDLL("libnftables.so.1")
nftlib.nft_ctx_new.restype = ctypes.c_void_p
nftlib.nft_ctx_new.argtypes = [ctypes.c_uint32]
nftlib.nft_ctx_buffer_error.argtypes = [ctypes.c_void_p]
nftlib.nft_ctx_get_error_buffer.restype = ctypes.c_char_p
nftlib.nft_ctx_get_error_buffer.argtypes = [ctypes.c_void_p]
nftlib.nft_run_cmd_from_buffer.argtypes = [ctypes.c_void_p, ctypes.c_char_p]


def sh(*args, **kw):
    return subprocess.run(args, check=True, **kw)


def setns(name):
    fd = os.open(f"/run/netns/{name}" if name else "/proc/1/ns/net", os.O_RDONLY)
    try:
        if libc.setns(fd, CLONE_NEWNET) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"setns {name}: {os.strerror(err)}")
    finally:
        os.close(fd)


class Nft:
    """A libnftables context whose netlink socket lives in one namespace."""

    def __init__(self):
        self.ctx = nftlib.nft_ctx_new(0)
        nftlib.nft_ctx_buffer_error(self.ctx)
        # The socket opens with the first command: open it here, in the
        # namespace we are in.
        self.run("list tables")

    def run(self, cmd):
        if nftlib.nft_run_cmd_from_buffer(self.ctx, cmd.encode()) != 0:
            err = nftlib.nft_ctx_get_error_buffer(self.ctx).decode()
            raise RuntimeError(f"nft {cmd!r}: {err}")


class Namespace:
    def __init__(self, name, attachments, dummies):
        self.name = name
        sh("ip", "netns", "add", name)
        lines = ["link set lo up", "link add name va type veth peer name vb",
                 "link set va up", "link set vb up"]
        for d in range(dummies):
            lines += [f"link add name d{d} type dummy", f"link set d{d} up"]
        sh("ip", "-n", name, "-batch", "-", input="\n".join(lines).encode())
        ruleset = []
        for k in range(attachments):
            ruleset.append(f"table ip t{k} {{\nflowtable ft {{ hook early_ingress priority 0; "
                           "devices = { va }; }\n}")
        chains = "".join(f"chain d{d} {{ type filter hook ingress device d{d} priority 0; }}\n"
                         for d in range(dummies))
        ruleset.append(f"table netdev foreign {{\n{chains}}}")
        sh("ip", "netns", "exec", name, f"{REPO}/build/userspace/flowbulk", "-f", "-",
           input="\n".join(ruleset).encode(), stdout=subprocess.DEVNULL)
        setns(name)
        try:
            self.nft = Nft()
            self.tx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
            self.tx.bind(("vb", 0))
            ifreq = fcntl.ioctl(self.tx, SIOCGIFHWADDR, struct.pack("256s", b"va"))
            mac = ifreq[18:24]
        finally:
            setns(None)
        # An IPv4 UDP datagram to va's MAC: it enters va's ingress hooks.
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 28, 0, 0, 64, 17, 0,
                         bytes([10, 0, 0, 2]), bytes([10, 0, 0, 1]))
        self.frame = mac + bytes(6) + b"\x08\x00" + ip + struct.pack("!HHHH", 1, 2, 8, 0)

    def delete_flowtables(self, attachments):
        for k in range(attachments):
            self.nft.run(f"delete flowtable ip t{k} ft")

    def churn(self):
        self.nft.run("add chain netdev foreign x { type filter hook ingress device va priority 0; }")
        self.tx.send(self.frame)
        self.nft.run("delete chain netdev foreign x")
        self.tx.send(self.frame)


def tracefs(name, value):
    with open(f"{TRACING}/{name}", "w") as f:
        f.write(value)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ns", type=int, default=100)
    ap.add_argument("--attachments", type=int, default=4)
    ap.add_argument("--dummies", type=int, default=16)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--label", default="")
    args = ap.parse_args()

    if not os.path.isdir(TRACING) or not os.listdir(TRACING):
        sh("mount", "-t", "tracefs", "nodev", TRACING)
    sh("bash", "-c", f"source {REPO}/tools/testing/lib/nfb.sh && nfb_load_module")
    with open(f"{TRACING}/available_filter_functions") as f:
        if not any(line.split()[0] == TRACED for line in f):
            sys.exit(f"rtnl.py: {TRACED} cannot be traced (inlined?)")

    t0 = time.monotonic()
    spaces = [Namespace(f"nfbr{i}", args.attachments, args.dummies) for i in range(args.ns)]
    setup_s = time.monotonic() - t0
    for ns in spaces:
        ns.delete_flowtables(args.attachments)
    # Let the rescans of the deletions pass before the trace starts.
    time.sleep(1)

    tracefs("tracing_on", "0")
    tracefs("current_tracer", "nop")
    tracefs("buffer_size_kb", "8192")
    tracefs("set_graph_function", TRACED)
    tracefs("max_graph_depth", "1")
    tracefs("current_tracer", "function_graph")
    tracefs("trace", "")
    tracefs("tracing_on", "1")
    t0 = time.monotonic()
    rounds = 0
    while time.monotonic() - t0 < args.seconds:
        for ns in spaces:
            ns.churn()
        rounds += 1
    churn_s = time.monotonic() - t0
    # Rescans asked for during the last round run within a tenth of a second.
    time.sleep(1)
    tracefs("tracing_on", "0")
    with open(f"{TRACING}/trace") as f:
        trace = f.read()
    tracefs("current_tracer", "nop")
    us = [float(m.group(1)) for m in re.finditer(
        r"([0-9.]+) us\s+\|\s+" + TRACED, trace)]
    if not us:
        sys.exit("rtnl.py: no rescan traced\n" + trace[-2000:])
    result = {
        "label": args.label, "kernel": os.uname().release,
        "namespaces": args.ns, "attachments": args.attachments,
        "dummies": args.dummies, "rounds": rounds,
        "setup_s": round(setup_s, 1), "churn_s": round(churn_s, 2),
        "rescans": len(us), "rtnl_total_ms": round(sum(us) / 1000, 2),
        "rtnl_mean_us": round(sum(us) / len(us), 1),
        "rtnl_median_us": round(sorted(us)[len(us) // 2], 1),
        "rtnl_longest_us": [round(x, 1) for x in sorted(us)[-5:]],
        "rtnl_max_us": round(max(us), 1),
        "rtnl_share": round(sum(us) / 1e6 / (churn_s + 1), 3),
    }
    print(json.dumps(result))
    print(f"{args.ns} namespaces x {args.attachments} attachments, {args.dummies} "
          f"more devices each, {rounds} rounds: {len(us)} rescans held RTNL "
          f"{result['rtnl_total_ms']} ms in all, {result['rtnl_mean_us']} us on "
          f"average, {result['rtnl_max_us']} us at most ({churn_s:.1f} s of churn)")
    for ns in spaces:
        ns.tx.close()
        sh("ip", "netns", "del", ns.name)


if __name__ == "__main__":
    main()
