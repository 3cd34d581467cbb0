#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Traffic generator, capture and comparison of the differential oracle.

  nfb_oracle.py run --seed N --ns C R S --out FILE [--cpu N]
                [--topology plain|vlan|bridge|pppoe] [--pppoe-session SID]
                [--attach FAMILY/TABLE/FLOWTABLE]
                [--ref FILE --verdicts FILE]
  nfb_oracle.py pair --seed N --ns C R S --dir DIR --attach F/T/FT
                --ruleset FILE [--cpu N] [--topology T] [--pppoe-session SID]
  nfb_oracle.py plan FILE         the run delivered what the plan says
  nfb_oracle.py compare REF FILE  FILE's run is the same as REF's run

"run" is one pass of the seeded traffic through one of the topologies of
nfb_oracle.sh (client C, router R, server S; the plain one is
tools/testing/lib/fastpath.sh's). One process drives both ends: it enters C
and S with setns() to open its AF_PACKET sockets there. It offloads every
flow first (warm-up packets both ways until R's conntrack table shows
[OFFLOAD]), then sends the measured packets from C in bursts, each burst as
one NAPI poll of the router (see send_burst()), and records in FILE what reaches S and the
ICMP errors that come back to C. Every measured packet carries, at the
start of its L4 payload, MAGIC, its flow id, its kind and its sequence
number in the flow.

--topology (TOPOLOGIES below) says which 802.1Q tags C and S send and must
receive (the tags are in the frames C and S send; what the captures see
is read both from skb->vlan_tci, PACKET_AUXDATA, and from the bytes),
whether C's frames travel in the PPPoE session --pppoe-session (both ways:
C sends its IP packets in session frames to R's real device, and the ICMP
errors must come back in that session), which
of R's devices holds the addresses on S's side (its MAC must be the source
of every frame at S, and its MTU is the egress MTU the ICMP errors must
carry), and how the module must count what it takes (taken_encap on
receive, taken_xmit). Every frame at S and every ICMP error at C is
recorded with its MAC addresses and tags, checked against the topology
("plan") and compared between the runs ("compare").

"pair" is what nfb_oracle.sh runs, both runs in one process (python starts
slowly under TCG): "run" without the module into DIR/stock.json, then a
new flowtable (R's table of the flowtable deleted, conntrack flushed until
empty, the ruleset FILE loaded again), then "run" with the module attached
into DIR/module.json, and the verdicts into DIR/verdicts: first one line
per run, then those of --ref below.

--attach attaches the module to the flowtable in R first (the statistics
of R's module are then in FILE). With --ref (the reference run's FILE), the
verdicts are written to --verdicts, one "ok|fail NAME" line each, and the
differences printed: all of "plan" for both runs, "compare", and the
module's counters (it took the packets, bursts reached it, it declined the
slow-path packets). "plan" and "compare" print what differs, the first
difference per flow, and exit 1 on a difference.
"""
import argparse
import fcntl
import hashlib
import json
import os
import random
import select
import socket
import struct
import subprocess
import sys
import time

sys.dont_write_bytecode = True
# The test library: nfb_test, and nfb_genl when the run attaches.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "tools", "testing", "lib"))
from nfb_test import setns  # noqa: E402

MAGIC = b"NFBO"
ETH_P_ALL, ETH_P_IP, ETH_P_IPV6 = 0x0003, 0x0800, 0x86DD
ETH_P_8021Q, ETH_P_8021AD, ETH_P_PPP_SES = 0x8100, 0x88A8, 0x8864
PPP_IP, PPP_IPV6 = 0x0021, 0x0057
SOL_PACKET, PACKET_AUXDATA, PACKET_IGNORE_OUTGOING = 263, 8, 23
TP_STATUS_VLAN_VALID, TP_STATUS_VLAN_TPID_VALID = 0x10, 0x40
SO_RCVBUFFORCE, SIOCGIFMTU = 33, 0x8921

C4, S4 = "10.0.1.1", "10.0.2.1"
C6, S6 = "fd00:1::1", "fd00:2::1"
DPORT, SPORT, SPORT_NAT = 9000, 20000, 30000   # NAT: sport 30000-39999

# The topologies of nfb_oracle.sh. c_tag / s_tag: the 802.1Q id C's and
# S's frames carry, both ways (None: untagged); pppoe: C's frames are in
# the PPPoE session of --pppoe-session, both ways; r_c / r_s: R's devices
# whose MAC addresses are the source of what C and S receive from R (the
# ones that hold the addresses on C's and S's side, or the real device
# under R's PPP device); r_s's MTU is the egress MTU, 1280; encap / xmit:
# the module's taken_encap and taken_xmit counters the C -> S packets it
# takes land in; data: data packets per flow (lo, hi) in the plan;
# slow_ends_burst: see make_plan().
TOPOLOGIES = {
    "plain": {"c_tag": None, "s_tag": None, "pppoe": False, "r_c": "r0",
              "r_s": "r1", "encap": "none", "xmit": "neigh",
              "data": (18, 30), "slow_ends_burst": False},
    # Tag pop on receive (10), push on transmit (20): a rewrite.
    "vlan": {"c_tag": 10, "s_tag": 20, "pppoe": False, "r_c": "r0.10",
             "r_s": "r1.20", "encap": "vlan", "xmit": "neigh",
             "data": (8, 16), "slow_ends_burst": False},
    # S behind R's bridge br0, port r1: FLOW_OFFLOAD_XMIT_DIRECT.
    "bridge": {"c_tag": None, "s_tag": None, "pppoe": False, "r_c": "r0",
               "r_s": "br0", "encap": "none", "xmit": "direct",
               "data": (8, 16), "slow_ends_burst": False},
    # C's side a PPPoE session (R's PPP device on r0): PPPoE pop on
    # receive, plain Ethernet on transmit.
    "pppoe": {"c_tag": None, "s_tag": None, "pppoe": True, "r_c": "r0",
              "r_s": "r1", "encap": "pppoe", "xmit": "neigh",
              "data": (8, 16), "slow_ends_burst": True},
}

# Kinds of measured packets. "taken" ones are for the module; the others
# it must decline (and the stock flowtable too) to the slow path.
DATA, OPTIONS, FRAG, MTU_DF, MTU6, TTL1, FIN, RST = range(1, 9)
KIND = {DATA: "data", OPTIONS: "ipv4-options", FRAG: "over-mtu-fragmented",
        MTU_DF: "over-mtu-df", MTU6: "ipv6-over-mtu", TTL1: "ttl-1",
        FIN: "tcp-fin", RST: "tcp-rst"}
ARRIVES = {DATA, OPTIONS, FRAG, FIN, RST}
ICMP_EXPECTED = {MTU_DF: (4, 3, 4), MTU6: (6, 2, 0), TTL1: None}

def csum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


class Flow:
    def __init__(self, fid, fam, proto, nat):
        self.id, self.fam, self.proto, self.nat = fid, fam, proto, nat
        self.sport = (SPORT_NAT if nat else SPORT) + fid
        self.dport = DPORT + fid
        self.csrc, self.sdst = (C4, S4) if fam == 4 else (C6, S6)
        self.s_view = None      # (src, sport) as S sees them (after NAT)
        self.seq = self.ack = 0

    def name(self):
        return "%s%d%s %s:%d > %s:%d" % (
            self.proto, self.fam, " nat" if self.nat else "",
            self.csrc, self.sport, self.sdst, self.dport)

    def todict(self):
        return {"id": self.id, "name": self.name()}


def ip_header(fam, src, dst, proto, l4len, ttl, ident, df, opts=b""):
    if fam == 4:
        hl = 20 + len(opts)
        h = struct.pack("!BBHHHBBH4s4s", 0x40 | hl // 4, 0, hl + l4len, ident,
                        0x4000 if df else 0, ttl, proto, 0,
                        socket.inet_pton(socket.AF_INET, src),
                        socket.inet_pton(socket.AF_INET, dst)) + opts
        return h[:10] + struct.pack("!H", csum(h)) + h[12:]
    return struct.pack("!IHBB16s16s", 0x60000000, l4len, proto, ttl,
                       socket.inet_pton(socket.AF_INET6, src),
                       socket.inet_pton(socket.AF_INET6, dst))


def pseudo(fam, src, dst, proto, length):
    if fam == 4:
        return (socket.inet_pton(socket.AF_INET, src) +
                socket.inet_pton(socket.AF_INET, dst) +
                struct.pack("!BBH", 0, proto, length))
    return (socket.inet_pton(socket.AF_INET6, src) +
            socket.inet_pton(socket.AF_INET6, dst) +
            struct.pack("!IxxxB", length, proto))


def l4_segment(fam, src, dst, proto, sport, dport, payload, seq=0, ack=0,
               flags=0x18, tcpopts=b""):
    if proto == "udp":
        seg = struct.pack("!HHHH", sport, dport, 8 + len(payload), 0) + payload
        c = csum(pseudo(fam, src, dst, 17, len(seg)) + seg) or 0xFFFF
        return 17, seg[:6] + struct.pack("!H", c) + seg[8:]
    doff = (20 + len(tcpopts)) // 4
    seg = struct.pack("!HHIIBBHHH", sport, dport, seq & 0xFFFFFFFF,
                      ack & 0xFFFFFFFF, doff << 4, flags, 65535, 0, 0)
    seg += tcpopts + payload
    c = csum(pseudo(fam, src, dst, 6, len(seg)) + seg)
    return 6, seg[:16] + struct.pack("!H", c) + seg[18:]


def packet(fam, src, dst, proto, sport, dport, payload, ttl=64, ident=0,
           df=False, opts=b"", **tcp):
    pnum, seg = l4_segment(fam, src, dst, proto, sport, dport, payload, **tcp)
    return ip_header(fam, src, dst, pnum, len(seg), ttl, ident, df, opts) + seg


def parse_l3(l3):
    """(fam, src, dst, proto, fragment (id, off, mf) or None, l4 offset)."""
    if len(l3) >= 20 and l3[0] >> 4 == 4:
        hl = (l3[0] & 15) * 4
        ident, fo = struct.unpack_from("!HH", l3, 4)
        src = socket.inet_ntop(socket.AF_INET, l3[12:16])
        dst = socket.inet_ntop(socket.AF_INET, l3[16:20])
        frag = None
        if fo & 0x3FFF:
            frag = (ident, (fo & 0x1FFF) * 8, bool(fo & 0x2000))
        return 4, src, dst, l3[9], frag, hl
    if len(l3) >= 40 and l3[0] >> 4 == 6:
        src = socket.inet_ntop(socket.AF_INET6, l3[8:24])
        dst = socket.inet_ntop(socket.AF_INET6, l3[24:40])
        return 6, src, dst, l3[6], None, 40
    return None


def l4_payload(proto, seg):
    """(sport, dport, flags, payload) of a TCP or UDP segment."""
    if proto == 17 and len(seg) >= 8:
        sp, dp = struct.unpack_from("!HH", seg)
        return sp, dp, 0, seg[8:]
    if proto == 6 and len(seg) >= 20:
        sp, dp = struct.unpack_from("!HH", seg)
        return sp, dp, seg[13], seg[(seg[12] >> 4) * 4:]
    return None


def tag_of(payload):
    if len(payload) >= 12 and payload[:4] == MAGIC:
        flow, kind, _, seq = struct.unpack_from("!BBHI", payload, 4)
        return flow, kind, seq
    return None


def sha(data):
    return hashlib.sha256(data).hexdigest()[:16]


def mac_str(mac):
    return ":".join("%02x" % b for b in mac)


def l2_str(src, dst, tags):
    """A frame's L2 header as recorded: "SRC > DST TAGS", each tag as
    "vlan TPID:TCI" (TCI in decimal, priority bits included), outer
    first, or "untagged"; a PPPoE session header, (ETH_P_PPP_SES, sid),
    as "pppoe SID", a malformed one, (ETH_P_PPP_SES, sid, ver_type, code,
    length), with "bad VER_TYPE:CODE:LENGTH"."""
    def one(t):
        if t[0] != ETH_P_PPP_SES:
            return "vlan %04x:%d" % t
        return "pppoe %d" % t[1] + ("" if len(t) == 2 else
                                    " bad %02x:%d:%d" % t[2:])
    return "%s > %s %s" % (mac_str(src), mac_str(dst), " ".join(
        one(t) for t in tags) or "untagged")


def l2_parse(fr, tag):
    """(l2_str, ethertype, L3 bytes) of a captured frame, or None. TAG is
    (tpid, tci) from skb->vlan_tci (PACKET_AUXDATA) or None; tags still in
    the bytes follow it, then maybe a PPPoE session header: its PPP
    protocol IPv4 or IPv6 gives the ethertype (None for any other), its
    length the end of the L3 bytes."""
    if len(fr) < 14:
        return None
    tags = [tag] if tag else []
    et, off = struct.unpack_from("!H", fr, 12)[0], 14
    while et in (ETH_P_8021Q, ETH_P_8021AD) and len(fr) >= off + 4:
        tags.append((et, struct.unpack_from("!H", fr, off)[0]))
        et = struct.unpack_from("!H", fr, off + 2)[0]
        off += 4
    end = len(fr)
    if et == ETH_P_PPP_SES and len(fr) >= off + 8:
        vt, code, sid, plen, proto = struct.unpack_from("!BBHHH", fr, off)
        if vt != 0x11 or code != 0 or plen < 2 or off + 6 + plen > end:
            tags.append((ETH_P_PPP_SES, sid, vt, code, plen))
        else:
            tags.append((ETH_P_PPP_SES, sid))
            end = off + 6 + plen
        et = {PPP_IP: ETH_P_IP, PPP_IPV6: ETH_P_IPV6}.get(proto)
        off += 8
    return l2_str(fr[6:12], fr[:6], tags), et, fr[off:end]


class Capture:
    """An AF_PACKET socket on DEV of the current namespace, incoming only.

    A tag the kernel keeps in skb->vlan_tci (veth does, as a NIC with
    receive VLAN offload) is not in the bytes recv() returns: it comes
    with PACKET_AUXDATA."""

    def __init__(self, dev):
        self.sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW,
                                  socket.htons(ETH_P_ALL))
        self.sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 16 << 20)
        self.sock.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
        self.sock.setsockopt(SOL_PACKET, PACKET_AUXDATA, 1)
        self.sock.bind((dev, ETH_P_ALL))
        self.sock.setblocking(False)
        self.mac = self.sock.getsockname()[4]

    def frames(self):
        """[(bytes, (tpid, tci) of skb->vlan_tci or None)]"""
        out = []
        while True:
            try:
                data, anc, _, _ = self.sock.recvmsg(
                    65536, socket.CMSG_SPACE(20))
            except BlockingIOError:
                return out
            tag = None
            for level, ctype, cdata in anc:
                if level != SOL_PACKET or ctype != PACKET_AUXDATA or \
                        len(cdata) < 20:
                    continue
                # struct tpacket_auxdata
                status, _, _, _, _, tci, tpid = struct.unpack_from(
                    "=IIIHHHH", cdata)
                if status & TP_STATUS_VLAN_VALID:
                    if not status & TP_STATUS_VLAN_TPID_VALID:
                        tpid = ETH_P_8021Q
                    tag = (tpid, tci)
            out.append((data, tag))


def if_mac(dev):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
    s.bind((dev, 0))
    mac = s.getsockname()[4]
    s.close()
    return mac


def if_mtu(dev):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        ifr = fcntl.ioctl(s, SIOCGIFMTU, struct.pack("16si12x",
                                                      dev.encode(), 0))
        return struct.unpack_from("i", ifr, 16)[0]
    finally:
        s.close()


def eth_header(dst, src, tag, fam, sid=None, l3len=0):
    """Ethernet header, with the 802.1Q tag TAG (an id) inline unless
    None, and the PPPoE session header of session SID for L3LEN bytes of
    IP unless SID is None."""
    if sid is None:
        et = struct.pack("!H", ETH_P_IP if fam == 4 else ETH_P_IPV6)
    else:
        et = struct.pack("!HBBHHH", ETH_P_PPP_SES, 0x11, 0, sid, 2 + l3len,
                         PPP_IP if fam == 4 else PPP_IPV6)
    if tag is not None:
        et = struct.pack("!HH", ETH_P_8021Q, tag) + et
    return dst + src + et


class Run:
    def __init__(self, args):
        self.args = args
        self.topo = TOPOLOGIES[args.topology]
        self.c_sid = args.pppoe_session if self.topo["pppoe"] else None
        if self.topo["pppoe"] and self.c_sid is None:
            raise SystemExit("topology pppoe: --pppoe-session SID missing")
        self.rng = random.Random(args.seed)
        self.flows = {}
        fid = 1
        for fam in (4, 6):
            for proto in ("udp", "tcp"):
                for nat in (False, True):
                    self.flows[fid] = Flow(fid, fam, proto, nat)
                    fid += 1
        self.ident = self.rng.randrange(1 << 16)
        self.s_events, self.c_events, self.frags = [], [], {}
        self.warm_s, self.warm_c = {}, {}
        self.plan, self.bursts = [], []

    # -- namespaces and sockets ------------------------------------------
    def open(self):
        me = "/proc/self/ns/net"
        home = os.open(me, os.O_RDONLY)
        ns = {n: "/run/netns/" + v for n, v in
              zip("CRS", self.args.ns)}
        try:
            setns(ns["R"])
            self.rc_mac = if_mac(self.topo["r_c"])
            self.rs_mac = if_mac(self.topo["r_s"])
            # The route's MTU towards S, which the stock flowtable takes
            # for the flow (flow_offload_fill_route()) and the stack puts
            # in its ICMP errors.
            self.mtu = if_mtu(self.topo["r_s"])
            # R's conntrack table (the file stays bound to R's namespace;
            # without it, "conntrack -L", two processes a look).
            try:
                self.ct_proc = open("/proc/self/net/nf_conntrack")
            except OSError:
                self.ct_proc = None
            self.nl = None
            if self.args.attach:
                import nfb_genl
                self.genl = nfb_genl
                self.nl = nfb_genl.Genl()
                self.nl.do(nfb_genl.CMD["attach"], nfb_genl.ft_attrs(
                    *self.args.attach.split("/")))
            setns(ns["C"])
            self.c_cap = Capture("c0")
            self.c_tx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
            self.c_tx.bind(("c0", 0))
            setns(ns["S"])
            self.s_cap = Capture("s0")
            self.s_tx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
            self.s_tx.bind(("s0", 0))
        finally:
            try:
                setns(home)
            finally:
                os.close(home)

    def send_c(self, fam, l3):
        self.c_tx.send(eth_header(self.rc_mac, self.c_cap.mac,
                                  self.topo["c_tag"], fam, self.c_sid,
                                  len(l3)) + l3)

    def send_s(self, fam, l3):
        self.s_tx.send(eth_header(self.rs_mac, self.s_cap.mac,
                                  self.topo["s_tag"], fam) + l3)

    def expect(self):
        """What the frames at S and the ICMP errors at C must look like."""
        def tags(tag):
            return [(ETH_P_8021Q, tag)] if tag is not None else []
        t = self.topo
        c_sess = [(ETH_P_PPP_SES, self.c_sid)] if t["pppoe"] else []
        return {"s_l2": l2_str(self.rs_mac, self.s_cap.mac, tags(t["s_tag"])),
                "c_l2": l2_str(self.rc_mac, self.c_cap.mac,
                               tags(t["c_tag"]) + c_sess),
                "egress_mtu": self.mtu, "encap": t["encap"],
                "xmit": t["xmit"]}

    def next_ident(self):
        self.ident = (self.ident + 1) & 0xFFFF
        return self.ident

    # -- capture ---------------------------------------------------------
    def poll(self):
        for fr, tag in self.s_cap.frames():
            self.at_s(fr, tag)
        for fr, tag in self.c_cap.frames():
            self.at_c(fr, tag)

    def at_s(self, fr, tag):
        e = l2_parse(fr, tag)
        if not e or e[1] not in (ETH_P_IP, ETH_P_IPV6):
            return
        l2, _, l3 = e
        p = parse_l3(l3)
        if not p:
            return
        fam, src, dst, proto, frag, off = p
        if fam == 4:
            l3 = l3[:struct.unpack_from("!H", l3, 2)[0]]
        else:
            l3 = l3[:40 + struct.unpack_from("!H", l3, 4)[0]]
        if frag:
            key = (src, dst, proto, frag[0])
            if frag[1] != 0:
                ev = self.frags.get(key)
                if ev is None:
                    self.s_events.append({"orphan": True, "l3": [l3.hex()],
                                          "l2": [l2]})
                else:
                    ev["l3"].append(l3.hex())
                    ev["l2"].append(l2)
                    ev["payload"] += l3[off:]
                    if not frag[2]:
                        ev["payload_sha"] = sha(ev.pop("payload")[ev.pop(
                            "l4hdr"):])
                        del self.frags[key]
                return
        lp = l4_payload(proto, l3[off:])
        if not lp:
            return
        sport, dport, flags, payload = lp
        t = tag_of(payload)
        if t is None:
            fid = dport - DPORT
            if fid in self.flows and not frag:
                self.warm_s.setdefault(fid, []).append(
                    (src, sport, flags, payload))
            return
        ev = {"flow": t[0], "kind": t[1], "seq": t[2], "l3": [l3.hex()],
              "l2": [l2], "payload_sha": sha(payload)}
        if frag:
            ev["payload"] = l3[off:]
            ev["l4hdr"] = len(l3) - off - len(payload)
            del ev["payload_sha"]
            self.frags[(src, dst, proto, frag[0])] = ev
        self.s_events.append(ev)

    def at_c(self, fr, tag):
        e = l2_parse(fr, tag)
        if not e or e[1] not in (ETH_P_IP, ETH_P_IPV6):
            return
        l2, _, l3 = e
        p = parse_l3(l3)
        if not p:
            return
        fam, src, dst, proto, _, off = p
        if (fam, proto) in ((4, 1), (6, 58)):
            msg = l3[off:]
            if len(msg) < 8 or (fam == 4 and msg[0] not in (3, 11)) or \
                    (fam == 6 and msg[0] not in (1, 2, 3)):
                return
            q = parse_l3(msg[8:])
            if not q:
                return
            lp = l4_payload(q[3], msg[8 + q[5]:])
            t = tag_of(lp[3]) if lp else None
            if t is None:
                return
            self.c_events.append({
                "flow": t[0], "kind": t[1], "seq": t[2], "src": src,
                "dst": dst, "type": msg[0], "code": msg[1],
                "info": struct.unpack_from("!I", msg, 4)[0],
                "icmp": msg.hex(), "l2": [l2]})
            return
        lp = l4_payload(proto, l3[off:])
        if lp and lp[0] - DPORT in self.flows:
            self.warm_c.setdefault(lp[0] - DPORT, []).append(lp)

    def wait(self, cond, timeout):
        end = time.monotonic() + timeout
        while True:
            self.poll()
            if cond():
                return True
            left = end - time.monotonic()
            if left <= 0:
                return False
            select.select([self.s_cap.sock, self.c_cap.sock], [], [],
                          min(left, 0.05))

    # -- warm-up ---------------------------------------------------------
    def c_to_s(self, f, payload, flags=0x18, tcpopts=b""):
        pkt = packet(f.fam, f.csrc, f.sdst, f.proto, f.sport, f.dport,
                     payload, ident=self.next_ident(), df=f.proto == "tcp",
                     seq=f.seq, ack=f.ack, flags=flags, tcpopts=tcpopts) \
            if f.proto == "tcp" else \
            packet(f.fam, f.csrc, f.sdst, f.proto, f.sport, f.dport, payload,
                   ident=self.next_ident())
        self.send_c(f.fam, pkt)

    def s_to_c(self, f, payload, flags=0x18, tcpopts=b""):
        src, sport = f.s_view
        tcp = {}
        if f.proto == "tcp":
            tcp = {"seq": f.s_seq, "ack": f.seq, "flags": flags,
                   "tcpopts": tcpopts}
        pkt = packet(f.fam, f.sdst, src, f.proto, f.dport, sport, payload,
                     ident=self.next_ident(), **tcp)
        self.send_s(f.fam, pkt)

    def warm_step(self, what, send, side, n):
        for f in self.flows.values():
            send(f)
        ok = self.wait(lambda: all(len(side.get(i, [])) >= n
                                   for i in self.flows), 10)
        if not ok:
            missing = [self.flows[i].name() for i in self.flows
                       if len(side.get(i, [])) < n]
            raise SystemExit("warm-up %s: nothing arrived for %s"
                             % (what, ", ".join(missing)))

    def warm_up(self):
        synopt = struct.pack("!BBHBBBB", 2, 4, 1460, 1, 3, 3, 7)
        for f in self.flows.values():
            f.seq = self.rng.randrange(1 << 32)
            f.s_seq = self.rng.randrange(1 << 32)
        # C -> S: SYN (TCP) or a first datagram (UDP).
        self.warm_step("first packet", lambda f: self.c_to_s(
            f, b"" if f.proto == "tcp" else b"warm-up 1", flags=0x02,
            tcpopts=synopt), self.warm_s, 1)
        for f in self.flows.values():
            src, sport = self.warm_s[f.id][0][:2]
            f.s_view = (src, sport)
            if f.proto == "tcp":
                f.seq += 1
        # S -> C: SYN-ACK or the reply.
        self.warm_step("reply", lambda f: self.s_to_c(
            f, b"" if f.proto == "tcp" else b"warm-up 2", flags=0x12,
            tcpopts=synopt), self.warm_c, 1)
        for f in self.flows.values():
            if f.proto == "tcp":
                f.s_seq += 1
                f.ack = f.s_seq
        # C -> S: the handshake's ACK / a datagram; then data both ways.
        self.warm_step("established", lambda f: self.c_to_s(
            f, b"" if f.proto == "tcp" else b"warm-up 3", flags=0x10),
            self.warm_s, 2)
        self.warm_step("data", lambda f: self.c_to_s(f, b"warm-up 4"),
                       self.warm_s, 3)
        for f in self.flows.values():
            if f.proto == "tcp":
                f.seq += len(b"warm-up 4")
        self.warm_step("reply data", lambda f: self.s_to_c(f, b"warm-up 5"),
                       self.warm_c, 2)
        for f in self.flows.values():
            if f.proto == "tcp":
                f.s_seq += len(b"warm-up 5")
                f.ack = f.s_seq
        end = time.monotonic() + 20
        while True:
            left = self.not_offloaded()
            if not left:
                return
            if time.monotonic() > end:
                raise SystemExit("warm-up: not offloaded after 20 s: " +
                                 ", ".join(f.name() for f in left))
            time.sleep(0.1)

    def not_offloaded(self):
        out = ""
        if self.ct_proc:
            self.ct_proc.seek(0)
            out = self.ct_proc.read()
        else:
            for fam in ("ipv4", "ipv6"):
                out += subprocess.run(
                    ["ip", "netns", "exec", self.args.ns[1], "conntrack",
                     "-L", "-f", fam], capture_output=True, text=True,
                    check=True).stdout
        left = []
        for f in self.flows.values():
            key = "sport=%d dport=%d " % (f.sport, f.dport)
            if not any(key in ln and "[OFFLOAD]" in ln
                       for ln in out.splitlines()):
                left.append(f)
        return left

    # -- the measured traffic --------------------------------------------
    def make_plan(self):
        rng = self.rng
        per_flow = {}
        lo, hi = self.topo["data"]
        for f in self.flows.values():
            kinds = [DATA] * rng.randrange(lo, hi)
            specials = [TTL1, TTL1]
            if f.fam == 4:
                specials += [OPTIONS, OPTIONS, OPTIONS, FRAG, FRAG, MTU_DF]
            else:
                specials += [MTU6, MTU6]
            for k in specials:
                kinds.insert(rng.randrange(2, len(kinds) + 1), k)
            if f.proto == "tcp":
                kinds.append(FIN if (f.id + rng.randrange(2)) % 2 else RST)
            per_flow[f.id] = kinds
        order = []
        left = {i: list(k) for i, k in per_flow.items()}
        seqs = {i: 0 for i in per_flow}
        while left:
            ids = sorted(left)
            i = rng.choices(ids, [len(left[x]) for x in ids])[0]
            kind = left[i].pop(0)
            if not left[i]:
                del left[i]
            seqs[i] += 1
            order.append((i, kind, seqs[i]))
        # Bursts: one NAPI poll each (at most 64 packets, veth's budget).
        # slow_ends_burst (pppoe): R's PPPoE receive hands what its stock
        # flowtable passes to the slow path to the PPP device through
        # netif_rx(), the backlog, which runs after the poll: a flow's
        # later packets of the same poll that the flowtable forwards at
        # once overtake it, in the stock run as in the module run, in an
        # order that depends on when the backlog and the module's queue
        # run. So there a burst ends before a flow's data packet that
        # follows one of its packets for the slow path (all but data).
        pos = 0
        while pos < len(order):
            n = rng.randrange(6, 40)
            burst = order[pos:pos + n]
            if self.topo["slow_ends_burst"]:
                slow = set()
                for i, (fid, kind, _) in enumerate(burst):
                    if kind != DATA:
                        slow.add(fid)
                    elif fid in slow:
                        burst = burst[:i]
                        break
            self.bursts.append(burst)
            pos += len(burst)
        # Each UDP flow ends with a data packet in a last burst: a fence.
        fence = []
        for f in self.flows.values():
            if f.proto == "udp":
                seqs[f.id] += 1
                fence.append((f.id, DATA, seqs[f.id]))
        self.bursts.append(fence)

    def build(self, fid, kind, seq):
        f, rng = self.flows[fid], self.rng
        hdr = 20 if f.fam == 4 else 40
        l4 = 8 if f.proto == "udp" else 20
        if kind in (FRAG, MTU_DF, MTU6):
            size = rng.randrange(self.mtu + 20, 1480) - hdr - l4
        else:
            size = rng.randrange(16, 1200)
        payload = MAGIC + struct.pack("!BBHI", fid, kind, 0, seq)
        payload += rng.randbytes(size - len(payload))
        ttl = 1 if kind == TTL1 else rng.choice((64, 2, 255))
        opts = b"\x01\x01\x01\x00" if kind == OPTIONS else b""
        df = kind == MTU_DF or (f.proto == "tcp" and kind != FRAG)
        tcp = {}
        if f.proto == "tcp":
            flags = {FIN: 0x19, RST: 0x14}.get(kind, 0x18)
            tcp = {"seq": f.seq, "ack": f.ack, "flags": flags}
            f.seq += len(payload) + (kind == FIN)
        pkt = packet(f.fam, f.csrc, f.sdst, f.proto, f.sport, f.dport,
                     payload, ttl=ttl, ident=self.next_ident(), df=df,
                     opts=opts, **tcp)
        return pkt, sha(payload)

    def send_burst(self, frames):
        """Send FRAMES from C so that R receives them in one NAPI poll.

        r0's NAPI is threaded and its kthread is pinned to our CPU: while
        we run SCHED_FIFO it cannot run, so every frame waits in veth's
        ring; when we sleep, it polls them all at once (up to 64).
        """
        if self.args.cpu >= 0:
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))
        try:
            for fam, pkt in frames:
                self.send_c(fam, pkt)
        finally:
            if self.args.cpu >= 0:
                os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))

    def pin(self):
        if self.args.cpu < 0:
            return 0
        os.sched_setaffinity(0, {self.args.cpu})
        n = 0
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                with open("/proc/%s/comm" % pid) as fh:
                    comm = fh.read().strip()
                if comm.startswith(("napi/r0-", "napi/r1-")):
                    os.sched_setaffinity(int(pid), {self.args.cpu})
                    n += 1
            except (OSError, ValueError):
                pass
        return n

    def measure(self):
        want_s = want_c = 0
        timeouts = 0
        for b, burst in enumerate(self.bursts):
            frames = []
            for fid, kind, seq in burst:
                pkt, psha = self.build(fid, kind, seq)
                frames.append((self.flows[fid].fam, pkt))
                self.plan.append({"flow": fid, "kind": kind, "seq": seq,
                                  "burst": b, "payload_sha": psha})
                want_s += kind in ARRIVES
                want_c += kind in ICMP_EXPECTED
            self.send_burst(frames)
            if not self.wait(lambda: len(self.s_events) >= want_s and
                             len(self.c_events) >= want_c and
                             not self.frags, 2):
                timeouts += 1
        return timeouts

    def run(self):
        self.open()
        napi_threads = self.pin()
        t0 = time.monotonic()
        self.warm_up()
        t1 = time.monotonic()
        self.make_plan()
        timeouts = self.measure()
        t2 = time.monotonic()
        for ev in self.frags.values():     # a fragment never came
            del ev["payload"], ev["l4hdr"]
            ev["payload_sha"] = "incomplete"
        out = {"seed": self.args.seed, "kernel": os.uname().release,
               "topology": self.args.topology, "expect": self.expect(),
               "flows": [f.todict() for f in self.flows.values()],
               "plan": self.plan, "s": self.s_events, "c": self.c_events,
               "bursts": len(self.bursts), "timeouts": timeouts,
               "napi_threads": napi_threads,
               "opportunities": opportunities(self.bursts)}
        if self.nl:
            out["module"] = self.genl.stats(self.nl)["total"]
        self.close()
        with open(self.args.out, "w") as fh:
            json.dump(out, fh)
        print("INFO: %s: %d packets in %d bursts (%d where a declined packet "
              "follows a taken one of its flow in one burst), %d arrived at "
              "S, %d ICMP errors at C, %d burst waits timed out; warm-up "
              "%.1f s, traffic %.1f s; %d NAPI threads pinned"
              % (self.args.topology, len(self.plan), len(self.bursts),
                 out["opportunities"],
                 len(self.s_events), len(self.c_events), timeouts, t1 - t0,
                 t2 - t1, napi_threads))
        return out


    def close(self):
        for s in (self.c_cap.sock, self.c_tx, self.s_cap.sock, self.s_tx,
                  self.ct_proc, self.nl and self.nl.sock):
            if s:
                s.close()


# Between the two runs of "pair", in R: the stock run's flowtable and flows
# go with their table, no conntrack entry is left (offloaded ones go when
# the flowtable's garbage collector has freed their flows), the same
# ruleset again.
RESET = """
nft delete table "$1" "$2"
conntrack -F >/dev/null 2>&1
conntrack -F -f ipv6 >/dev/null 2>&1
n=0
until [ "$(sysctl -n net.netfilter.nf_conntrack_count)" = 0 ]; do
	n=$((n + 1))
	[ $n -le 200 ] || { echo "conntrack table not empty after 10 s" >&2; exit 1; }
	sleep 0.05
done
nft -f "$3"
"""


def pair(args):
    path = os.path.join(args.dir, "verdicts")
    fam, table, _ = args.attach.split("/")
    attach = args.attach
    open(path, "w").close()

    def verdict(name, ok):
        with open(path, "a") as fh:
            fh.write("%s %s\n" % ("ok" if ok else "fail", name))
    runs = {}
    for name in ("stock", "module"):
        args.out = os.path.join(args.dir, name + ".json")
        args.attach = attach if name == "module" else None
        what = {"stock": "stock flowtable run", "module": "module run"}[name]
        try:
            runs[name] = Run(args).run()
        except (OSError, SystemExit, subprocess.CalledProcessError) as e:
            print("%s: %s: %s" % (args.topology, what, e), file=sys.stderr)
            verdict(what, False)
            return 1
        verdict(what, True)
        if name == "stock":
            subprocess.run(["ip", "netns", "exec", args.ns[1], "sh", "-ec",
                            RESET, "reset", fam, table, args.ruleset],
                           check=True)
    for name, ok in verdicts(runs["stock"], runs["module"]):
        verdict(name, ok)
    return 0


def opportunities(bursts):
    n = 0
    for burst in bursts:
        taken = set()
        for fid, kind, _ in burst:
            if kind == DATA:
                taken.add(fid)
            elif kind in ARRIVES and fid in taken:
                n += 1
    return n


# -- comparison -------------------------------------------------------------
def load(path):
    with open(path) as fh:
        return json.load(fh)


def by_flow(events):
    out = {}
    for e in events:
        out.setdefault(e.get("flow"), []).append(e)
    return out


def describe(e, plan=None):
    if e is None:
        return "nothing"
    if e.get("orphan"):
        return "a fragment without its first part"
    s = "seq %d %s" % (e["seq"], KIND.get(e["kind"], e["kind"]))
    if plan and (e["flow"], e["seq"]) in plan:
        s += " (burst %d)" % plan[(e["flow"], e["seq"])]["burst"]
    if "l3" in e:
        l3 = bytes.fromhex(e["l3"][0])
        p = parse_l3(l3)
        lp = l4_payload(p[3], l3[p[5]:]) if p else None
        if p and lp:
            s += ", %s:%d > %s:%d, %d bytes%s" % (
                p[1], lp[0], p[2], lp[1], len(l3),
                " in %d fragments" % len(e["l3"]) if len(e["l3"]) > 1 else "")
    if "type" in e:
        s += ", ICMP%s type %d code %d info %d from %s" % (
            "v6" if ":" in e["src"] else "", e["type"], e["code"], e["info"],
            e["src"])
    if e.get("l2"):
        # Every fragment's own header when they differ.
        s += ", %s" % " / ".join(sorted(set(e["l2"]), key=e["l2"].index))
    return s


def first_diff(a, b, same):
    for i in range(max(len(a), len(b))):
        x = a[i] if i < len(a) else None
        y = b[i] if i < len(b) else None
        if x is None or y is None or not same(x, y):
            return i, x, y
    return None


def seqs(events):
    return [(e["seq"], e["kind"]) for e in events]


def report(kind, flows, fid, n_a, n_b, diff, plan, names):
    i, x, y = diff
    print("  %s, flow %s (%s): %d against %d; first difference at #%d:"
          % (kind, fid, flows.get(fid, "?"), n_a, n_b, i), file=sys.stderr)
    print("    %-8s %s" % (names[0] + ":", describe(x, plan)), file=sys.stderr)
    print("    %-8s %s" % (names[1] + ":", describe(y, plan)), file=sys.stderr)


def check_plan(r):
    """The run delivered, per flow and in order, what the plan says, with
    the MAC addresses and tags of its topology."""
    flows = {f["id"]: f["name"] for f in r["flows"]}
    plan = {(p["flow"], p["seq"]): p for p in r["plan"]}
    exp = r.get("expect", {})
    mtu = exp.get("egress_mtu", 1280)
    bad = 0

    def l2_ok(want, y):
        return want is None or all(h == want for h in y.get("l2", []))

    def with_l2(p, want):
        return dict(p, l2=[want]) if want else p
    exp_s = by_flow([with_l2(p, exp.get("s_l2")) for p in r["plan"]
                     if p["kind"] in ARRIVES])
    got_s = by_flow(r["s"])
    for fid in sorted(set(exp_s) | set(got_s), key=str):
        a, b = exp_s.get(fid, []), got_s.get(fid, [])
        d = first_diff(a, b, lambda x, y: not y.get("orphan") and
                       (x["seq"], x["kind"], x["payload_sha"]) ==
                       (y["seq"], y["kind"], y.get("payload_sha")) and
                       l2_ok(exp.get("s_l2"), y))
        if d:
            bad += 1
            report("at S", flows, fid, len(a), len(b), d, plan,
                   ("sent", "received"))
    exp_c = by_flow([with_l2(p, exp.get("c_l2")) for p in r["plan"]
                     if p["kind"] in ICMP_EXPECTED])
    got_c = by_flow(r["c"])
    for fid in sorted(set(exp_c) | set(got_c), key=str):
        a, b = exp_c.get(fid, []), got_c.get(fid, [])

        def same(x, y):
            want = ICMP_EXPECTED[x["kind"]]
            if want is None:        # time exceeded
                want = (4, 11, 0) if ":" not in y["src"] else (6, 3, 0)
            ok = (x["seq"], x["kind"]) == (y["seq"], y["kind"]) and \
                (y["type"], y["code"]) == want[1:] and \
                l2_ok(exp.get("c_l2"), y)
            if x["kind"] in (MTU_DF, MTU6):
                ok = ok and (y["info"] & 0xFFFF) == mtu
            return ok
        d = first_diff(a, b, same)
        if d:
            bad += 1
            report("ICMP errors at C", flows, fid, len(a), len(b), d, plan,
                   ("sent", "received"))
    return bad


def compare(ref, run):
    """The two runs gave the same packets at S and the same ICMP errors,
    with the same MAC addresses and tags."""
    flows = {f["id"]: f["name"] for f in ref["flows"]}
    plan = {(p["flow"], p["seq"]): p for p in run["plan"]}
    if [(p["flow"], p["seq"], p["payload_sha"]) for p in ref["plan"]] != \
            [(p["flow"], p["seq"], p["payload_sha"]) for p in run["plan"]]:
        print("  the two runs did not send the same packets", file=sys.stderr)
        return 1
    bad = 0
    for what, key, fields in (("at S", "s", ("seq", "kind", "l3", "l2")),
                              ("ICMP errors at C", "c",
                               ("seq", "kind", "src", "dst", "icmp", "l2"))):
        a, b = by_flow(ref[key]), by_flow(run[key])
        for fid in sorted(set(a) | set(b), key=str):
            x, y = a.get(fid, []), b.get(fid, [])
            d = first_diff(x, y, lambda p, q: all(
                p.get(k) == q.get(k) for k in fields + ("orphan",)))
            if d:
                bad += 1
                report(what, flows, fid, len(x), len(y), d, plan,
                       ("stock", "module"))
                p, q = d[1], d[2]
                if p and q and (p.get("seq"), p.get("kind")) == \
                        (q.get("seq"), q.get("kind")):
                    print("    same packet, different bytes: %s"
                          % byte_diff(p, q), file=sys.stderr)
                else:
                    print("    order stock:  %s\n    order module: %s"
                          % (short(x, d[0]), short(y, d[0])), file=sys.stderr)
    return bad


def short(events, i):
    lo = max(0, i - 3)
    s = " ".join("%s%s" % (e.get("seq", "?"),
                           "" if e.get("kind") == DATA else
                           "(%s)" % KIND.get(e.get("kind"), "frag"))
                 for e in events[lo:i + 6])
    return ("... " if lo else "") + s + (" ..." if i + 6 < len(events) else "")


def byte_diff(p, q):
    if p.get("l2") != q.get("l2"):
        return "L2 header: %s against %s" % (" / ".join(p.get("l2", [])),
                                              " / ".join(q.get("l2", [])))
    for k in ("l3", "icmp"):
        if k in p and p.get(k) != q.get(k):
            x = bytes.fromhex("".join(p[k]) if k == "l3" else p[k])
            y = bytes.fromhex("".join(q[k]) if k == "l3" else q[k])
            for i in range(max(len(x), len(y))):
                if i >= len(x) or i >= len(y) or x[i] != y[i]:
                    return "%s: %d against %d bytes, first differing byte " \
                        "at offset %d" % (k, len(x), len(y), i)
    return "addresses"


def module_counters(run):
    t = run.get("module")
    if not t:
        return []
    exp = run.get("expect", {})
    encap, xmit = exp.get("encap", "none"), exp.get("xmit", "neigh")
    d = t["decline"]
    big = sum(v for k, v in t["hist"].items() if int(k) >= 2)

    def nonzero(c):
        return " ".join("%s %d" % kv for kv in c.items() if kv[1]) or "-"
    print("INFO: %s: module: %d packets taken in %d bulks (sizes %s); "
          "taken_encap: %s; taken_xmit: %s; declined: options %d, mtu %d, "
          "ttl %d, tcp flags %d, encap %d" % (
              run.get("topology", "plain"), t["packets"], t["bulks"],
              " ".join("%s:%d" % kv for kv in t["hist"].items() if kv[1]),
              nonzero(t["taken_encap"]), nonzero(t["taken_xmit"]),
              d["options"], d["mtu"], d["ttl"], d["tcp_flags"], d["encap"]))
    want = sum(p["kind"] == DATA for p in run["plan"])
    return [
        ("the module took the offloaded flows' data packets (%d of %d)"
         % (t["packets"], want), t["packets"] >= want),
        ("the module took them as encapsulation %s on receive (taken_encap "
         "%s: %d of %d)" % (encap, encap, t["taken_encap"].get(encap, 0),
                            want), t["taken_encap"].get(encap, 0) >= want),
        ("the module transmitted them as %s (taken_xmit %s: %d of %d)"
         % (xmit, xmit, t["taken_xmit"].get(xmit, 0), want),
         t["taken_xmit"].get(xmit, 0) >= want),
        ("bursts reached the module: %d bulks of 2 or more" % big, big > 0),
        ("the module declined the slow-path packets (options, mtu, ttl, "
         "tcp flags)", min(d["options"], d["mtu"], d["ttl"],
                           d["tcp_flags"]) > 0)]


def verdicts(ref, run):
    out = module_counters(run)
    topo = run.get("topology", "plain")
    exp = run.get("expect", {})
    l2 = "MACs and tags: at S %s, at C %s" % (exp.get("s_l2"),
                                              exp.get("c_l2"))
    print("%s: stock run against the plan (%s):" % (topo, l2),
          file=sys.stderr)
    out.append(("stock run: what had to arrive at S did, once, in order per "
                "flow; the expected ICMP errors at C; MACs and tags",
                not check_plan(ref)))
    print("%s: module run against the plan:" % topo, file=sys.stderr)
    out.append(("module run: what had to arrive at S did, once, in order per "
                "flow; the expected ICMP errors at C; MACs and tags",
                not check_plan(run)))
    print("%s: module run against the stock run:" % topo, file=sys.stderr)
    out.append(("module run identical to the stock run (packets at S, order "
                "per flow, ICMP errors at C, MACs and tags)",
                not compare(ref, run)))
    return out


def main(argv):
    sys.stdout.reconfigure(line_buffering=True)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    q = sub.add_parser("pair")
    for x in (r, q):
        x.add_argument("--seed", type=int, required=True)
        x.add_argument("--ns", nargs=3, required=True,
                       metavar=("C", "R", "S"))
        x.add_argument("--cpu", type=int, default=-1)
        x.add_argument("--topology", choices=sorted(TOPOLOGIES),
                       default="plain")
        x.add_argument("--pppoe-session", type=int, metavar="SID")
    r.add_argument("--out", required=True)
    r.add_argument("--attach", metavar="FAMILY/TABLE/FLOWTABLE")
    r.add_argument("--ref")
    r.add_argument("--verdicts")
    q.add_argument("--dir", required=True)
    q.add_argument("--attach", metavar="FAMILY/TABLE/FLOWTABLE",
                   required=True)
    q.add_argument("--ruleset", required=True)
    p = sub.add_parser("plan")
    p.add_argument("file")
    c = sub.add_parser("compare")
    c.add_argument("ref")
    c.add_argument("file")
    args = ap.parse_args(argv)
    if args.cmd == "run":
        out = Run(args).run()
        if args.ref:
            with open(args.verdicts, "w") as fh:
                for name, ok in verdicts(load(args.ref), out):
                    fh.write("%s %s\n" % ("ok" if ok else "fail", name))
        return 0
    if args.cmd == "pair":
        return pair(args)
    if args.cmd == "plan":
        return 1 if check_plan(load(args.file)) else 0
    return 1 if compare(load(args.ref), load(args.file)) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
