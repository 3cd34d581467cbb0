#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Malformed packets at the module's fast path (nfb_fuzz_packets.sh).

  nfb_fuzz_packets.py C_NS S_NS TABLE FLOWTABLE
                        (in the router's namespace; the module is attached
                        to the inet flowtable TABLE FLOWTABLE)

Sets up four flows from the client C to the server S through the router
(UDP and TCP, IPv4 and IPv6, ports 40000 -> 7000 and 40001 -> 7001), makes C
and S drop everything their stacks receive or send (so that nothing else
crosses the router; AF_PACKET sockets bypass that), then sends from c0,
with an AF_PACKET socket, frames that match or nearly match the flows'
tuples but are malformed: fixed cases, then seeded random mutations.
Each frame is classified by an oracle: "must decline" (the normal stack
would drop it or it is not the flow's: lying lengths, IHL, version, IPv4
header checksum, fragments, TTL, protocol, truncated L4 header, FIN/RST,
VLAN/QinQ/PPPoE, a destination MAC address not the router's...) or "may take" (well-formed at IP level:
bad L4 checksum, lying UDP length or TCP data offset, Ethernet padding
after the IP packet...). Frames go in chunks of one class, each
closed by a marker frame; after each chunk:
  - the module's counters account for every frame that reached its hook:
    packets taken + declines (all reasons) went up by exactly that many;
  - a "must decline" chunk: nothing taken (culprits are then found one by
    one and printed, and sent again with the module detached, to tell
    whether the stock flowtable forwards them too);
  - every few chunks a valid packet of each flow is taken (the flows stay
    offloaded, so "nothing taken" means something).
At the end valid datagrams of the UDP flows (IPv4 and IPv6) are all taken
and arrive at S intact: payload, TTL - 1, checksums.

Environment: NFB_FUZZ_SEED (1), NFB_FUZZ_COUNT (random frames, 3000),
NFB_FUZZ_TIME (seconds for the random frames, 20).
"""
import fcntl
import os
import random
import re
import select
import socket
import struct
import subprocess
import sys
import time

sys.dont_write_bytecode = True
# The test library (tools/testing/lib).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "tools", "testing", "lib"))
import nfb_genl  # noqa: E402
from nfb_test import check, out, setns  # noqa: E402
import nfb_test  # noqa: E402

from scapy.layers.inet import IP, TCP, UDP, ICMP  # noqa: E402
from scapy.layers.inet6 import (IPv6, IPv6ExtHdrDestOpt,  # noqa: E402
                                IPv6ExtHdrFragment, IPv6ExtHdrHopByHop,
                                IPv6ExtHdrRouting)
from scapy.layers.l2 import Dot1AD, Dot1Q, Ether  # noqa: E402
from scapy.layers.ppp import PPP, PPPoE  # noqa: E402
from scapy.packet import Raw  # noqa: E402

ETH_P_ALL = 3
MARKER_TYPE = 0x88b5

C4, S4, C6, S6 = "10.0.1.1", "10.0.2.1", "fd00:1::1", "fd00:2::1"
UDP_SPORT, UDP_DPORT, TCP_SPORT, TCP_DPORT = 40000, 7000, 40001, 7001
FLOWS = {
    (4, 17): (C4, S4, UDP_SPORT, UDP_DPORT),
    (4, 6): (C4, S4, TCP_SPORT, TCP_DPORT),
    (6, 17): (C6, S6, UDP_SPORT, UDP_DPORT),
    (6, 6): (C6, S6, TCP_SPORT, TCP_DPORT),
}

def mac_of(dev):
    """MAC address of dev in the current network namespace (SIOCGIFHWADDR;
    /sys belongs to the namespace it was mounted in)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        r = fcntl.ioctl(s.fileno(), 0x8927,
                        struct.pack("256s", dev.encode()[:15]))
    finally:
        s.close()
    return ":".join("%02x" % b for b in r[18:24])


def v4(l3, tot=None, ihl=None, opts=b""):
    """IPv4 bytes with options inserted, IHL / total length set and the
    header checksum fixed."""
    b = bytearray(l3[:20] + opts + l3[20:])
    b[0] = 0x40 | (ihl if ihl is not None else 5 + len(opts) // 4)
    b[2:4] = struct.pack("!H", len(b) if tot is None else tot)
    b[10:12] = b"\0\0"
    hl = min(len(b), (b[0] & 15) * 4)
    b[10:12] = struct.pack("!H", (0xffff - csum16(bytes(b[:hl]))) & 0xffff)
    return bytes(b)


def v6(l3, plen=None):
    b = bytearray(l3)
    b[4:6] = struct.pack("!H", len(b) - 40 if plen is None else plen)
    return bytes(b)


def teardown_risk(frame):
    """Would the stock flowtable tear a TCP flow down on this frame (FIN or
    RST on the tuple, whatever else is wrong)? Such frames are kept for
    the end of the run."""
    etype = struct.unpack("!H", frame[12:14])[0]
    l3 = frame[14:]
    if etype == 0x0800 and len(l3) >= 34 and l3[0] & 15 == 5 and \
            l3[9] == 6 and not struct.unpack("!H", l3[6:8])[0] & 0x3fff:
        seg = l3[20:]
    elif etype == 0x86dd and len(l3) >= 54 and l3[6] == 6:
        seg = l3[40:]
    else:
        return False
    return struct.unpack("!HH", seg[:4]) == (TCP_SPORT, TCP_DPORT) and \
        bool(seg[13] & 0x05)


# --------------------------------------------------------------------------
# The oracle


def csum16(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return s


def l4_csum_ok(src, dst, proto, seg):
    pseudo = src + dst + struct.pack("!HH", proto, len(seg)) \
        if len(src) == 4 else \
        src + dst + struct.pack("!IxxxB", len(seg), proto)
    if proto == 17 and len(seg) >= 8 and seg[6:8] == b"\0\0" and len(src) == 4:
        return True
    return csum16(pseudo + seg) == 0xffff


def classify(frame, router_mac):
    """("must"|"may", what): must the module decline this frame?"""
    if len(frame) < 14:
        return "must", "short ethernet"
    etype = struct.unpack("!H", frame[12:14])[0]
    if etype in (0x8100, 0x88a8):
        return "must", "vlan"
    if etype in (0x8863, 0x8864):
        return "must", "pppoe"
    l3 = frame[14:]
    notes = []
    if frame[:6] != router_mac:
        # not for this host: ip_rcv() drops PACKET_OTHERHOST
        return "must", "destination mac not the router's"
    if etype == 0x0800:
        if len(l3) < 20:
            return "must", "short ipv4 header"
        ver, ihl = l3[0] >> 4, l3[0] & 15
        if ver != 4:
            return "must", "ipv4 version %d" % ver
        if ihl < 5:
            return "must", "ihl < 5"
        if ihl > 5:
            return "must", "ipv4 options"
        tot = struct.unpack("!H", l3[2:4])[0]
        if tot > len(l3):
            return "must", "ipv4 total length beyond the frame"
        if csum16(l3[:20]) != 0xffff:
            return "must", "bad ipv4 header checksum"
        if struct.unpack("!H", l3[6:8])[0] & 0x3fff:
            return "must", "ipv4 fragment"
        if l3[8] <= 1:
            return "must", "ttl <= 1"
        proto = l3[9]
        if proto not in (6, 17):
            return "must", "ipv4 protocol %d" % proto
        hdr = 20 if proto == 6 else 8
        if tot < 20 + hdr:
            return "must", "ipv4 total length cuts the l4 header"
        if tot < len(l3):
            notes.append("frame longer than total length")
        src, dst, seg = l3[12:16], l3[16:20], l3[20:tot]
        fam = 4
    elif etype == 0x86dd:
        if len(l3) < 40:
            return "must", "short ipv6 header"
        if l3[0] >> 4 != 6:
            return "must", "ipv6 version %d" % (l3[0] >> 4)
        plen = struct.unpack("!H", l3[4:6])[0]
        if 40 + plen > len(l3):
            return "must", "ipv6 payload length beyond the frame"
        proto = l3[6]
        if proto not in (6, 17):
            return "must", "ipv6 next header %d" % proto
        if l3[7] <= 1:
            return "must", "hop limit <= 1"
        hdr = 20 if proto == 6 else 8
        if plen < hdr:
            return "must", "ipv6 payload length cuts the l4 header"
        if 40 + plen < len(l3):
            notes.append("frame longer than payload length")
        src, dst, seg = l3[8:24], l3[24:40], l3[40:40 + plen]
        fam = 6
    else:
        return "must", "not ip (ethertype 0x%04x)" % etype
    want = FLOWS[(fam, proto)]
    sport, dport = struct.unpack("!HH", seg[:4])
    af = socket.AF_INET if fam == 4 else socket.AF_INET6
    if (socket.inet_ntop(af, src), socket.inet_ntop(af, dst), sport,
            dport) != want:
        return "must", "not the flow's tuple"
    if proto == 6:
        if seg[13] & 0x05:
            return "must", "tcp fin/rst"
        doff = seg[12] >> 4
        if doff < 5 or doff * 4 > len(seg):
            notes.append("lying tcp data offset")
    else:
        ulen = struct.unpack("!H", seg[4:6])[0]
        if ulen != len(seg):
            notes.append("lying udp length")
    if not l4_csum_ok(src, dst, proto, seg):
        notes.append("bad l4 checksum")
    return "may", ", ".join(notes) or "well-formed"


# --------------------------------------------------------------------------
# Frames


class Frames:
    def __init__(self, cmac, rmac):
        self.cmac, self.rmac = cmac, rmac

    def eth(self, etype=None):
        if etype is None:
            return Ether(src=self.cmac, dst=self.rmac)
        return Ether(src=self.cmac, dst=self.rmac, type=etype)

    def ip4(self, proto="udp", payload=b"p" * 32, **kw):
        kw.setdefault("ttl", 64)
        ip = IP(src=C4, dst=S4, **kw)
        if proto == "udp":
            return ip / UDP(sport=UDP_SPORT, dport=UDP_DPORT) / Raw(payload)
        return ip / TCP(sport=TCP_SPORT, dport=TCP_DPORT, flags="A",
                        seq=1000, ack=1000) / Raw(payload)

    def ip6(self, proto="udp", payload=b"p" * 32, **kw):
        kw.setdefault("hlim", 64)
        ip = IPv6(src=C6, dst=S6, **kw)
        if proto == "udp":
            return ip / UDP(sport=UDP_SPORT, dport=UDP_DPORT) / Raw(payload)
        return ip / TCP(sport=TCP_SPORT, dport=TCP_DPORT, flags="A",
                        seq=1000, ack=1000) / Raw(payload)

    def valid(self, fam, proto, payload=b"p" * 32):
        if fam == 4:
            return bytes(self.eth() / self.ip4(proto, payload))
        return bytes(self.eth() / self.ip6(proto, payload))

    def cases(self):
        """(category, frame bytes) of the fixed cases."""
        E = self.eth
        out = []

        def add(cat, pkt):
            out.append((cat, pkt if isinstance(pkt, bytes) else bytes(pkt)))

        for proto in ("udp", "tcp"):
            hdr = 8 if proto == "udp" else 20
            good = bytes(self.ip4(proto))
            n = len(good)
            # total length larger / smaller than the frame
            for tl in (n + 1, n + 20, 1500, 0xffff):
                add("ipv4 total length > frame", E() / self.ip4(proto, len=tl))
            for tl in (0, 1, 19, 20, 20 + hdr - 1):
                add("ipv4 total length < headers", E() / self.ip4(proto, len=tl))
            add("ipv4 total length < frame (padding)",
                E() / self.ip4(proto, len=20 + hdr))
            # IHL
            for ihl in (0, 1, 4):
                add("ipv4 ihl < 5", E() / self.ip4(proto, ihl=ihl))
            add("ipv4 ihl with options",
                bytes(E(0x0800)) + v4(good, opts=b"\x01\x01\x01\x00"))
            add("ipv4 ihl with options",
                bytes(E(0x0800)) + v4(good, opts=b"\x94\x04\0\0"))  # alert
            add("ipv4 ihl 15, options beyond the frame",
                bytes(E(0x0800)) + v4(good, ihl=15))
            add("ipv4 ihl 15, frame shorter than 60 bytes",
                bytes(E(0x0800)) + bytes([0x4f]) + good[1:24])
            for ver in (0, 5, 6, 15):
                add("ipv4 version", E() / self.ip4(proto, version=ver))
            # truncated L4 header, the IPv4 total length telling the truth
            for k in range(hdr):
                add("truncated l4 header",
                    bytes(E(0x0800)) + v4(bytes(self.ip4(proto, payload=b""))
                                    [:20 + k]))
            add("truncated l4 header (frame cut, length lying)",
                bytes(E(0x0800)) + good[:20 + hdr - 2])
            # checksums
            add("bad ipv4 header checksum", E() / self.ip4(proto, chksum=0x1234))
            add("bad ipv4 header checksum", E() / self.ip4(proto, chksum=0))
            p = self.ip4(proto)
            p[proto.upper() if proto == "udp" else "TCP"].chksum = 0x1234
            add("bad l4 checksum", E() / p)
            # fragments
            for fl, off in (("MF", 0), (0, 1), ("MF", 100), (0, 8191)):
                add("ipv4 fragment", E() / self.ip4(proto, flags=fl, frag=off))
            add("ipv4 DF (valid)", E() / self.ip4(proto, flags="DF"))
            # TTL, protocol
            for ttl in (0, 1):
                add("ttl <= 1", E() / self.ip4(proto, ttl=ttl))
            for pr in (0, 1, 47, 132, 255):
                b = bytearray(good)
                b[9] = pr
                add("ipv4 protocol not tcp/udp",
                    bytes(E(0x0800)) + v4(bytes(b)))
            # zero-length payload (valid)
            add("zero-length payload (valid)", E() / self.ip4(proto, payload=b""))
            # encapsulations
            inner = self.ip4(proto)
            add("802.1Q", E(0x8100) / Dot1Q(vlan=10, type=0x0800) / inner)
            add("802.1Q priority tag", E(0x8100) / Dot1Q(vlan=0, type=0x0800)
                / inner)
            add("802.1Q lying type", E(0x8100) / Dot1Q(vlan=10, type=0x86dd)
                / inner)
            add("802.1Q truncated", bytes(E(0x8100)) + b"\0\x0a")
            add("802.1Q truncated", bytes(E(0x8100)) + b"\0\x0a\x08\0")
            add("802.1ad + 802.1Q", E(0x88a8) / Dot1AD(vlan=20, type=0x8100)
                / Dot1Q(vlan=10, type=0x0800) / inner)
            add("802.1ad alone", E(0x88a8) / Dot1AD(vlan=20, type=0x0800)
                / inner)
            add("double 802.1Q", E(0x8100) / Dot1Q(vlan=20, type=0x8100)
                / Dot1Q(vlan=10, type=0x0800) / inner)
            ilen = len(bytes(inner))
            for plen in (ilen + 2, 0, 1, ilen + 100, 0xffff):
                add("pppoe session, lying length",
                    E(0x8864) / PPPoE(sessionid=1, len=plen) /
                    PPP(proto=0x0021) / inner)
            add("pppoe session, ipv6 protocol with ipv4 inside",
                E(0x8864) / PPPoE(sessionid=1) / PPP(proto=0x0057) / inner)
            add("pppoe session, lcp protocol", E(0x8864) / PPPoE(sessionid=1)
                / PPP(proto=0xc021) / inner)
            add("pppoe session, truncated", bytes(E(0x8864)) + b"\x11\0\0\1")
            add("pppoe discovery", E(0x8863) / PPPoE(code=0x09) / inner)
            add("802.1Q + pppoe", E(0x8100) / Dot1Q(vlan=10, type=0x8864)
                / PPPoE(sessionid=1) / PPP(proto=0x0021) / inner)
            # L2 destination not the router
            for dst in ("02:00:00:00:00:99", "ff:ff:ff:ff:ff:ff",
                        "01:00:5e:00:00:01"):
                add("destination mac not the router's",
                    Ether(src=self.cmac, dst=dst) / self.ip4(proto))
            # near misses of the tuple
            add("tuple near miss", E() / IP(src="10.0.1.2", dst=S4) /
                (UDP(sport=UDP_SPORT, dport=UDP_DPORT) if proto == "udp" else
                 TCP(sport=TCP_SPORT, dport=TCP_DPORT, flags="A")))
            add("tuple near miss", E() / IP(src=C4, dst=S4) /
                (UDP(sport=UDP_SPORT + 2, dport=UDP_DPORT) if proto == "udp"
                 else TCP(sport=TCP_SPORT + 2, dport=TCP_DPORT, flags="A")))
            # short frames
            for k in (0, 1, 10, 19):
                add("short ipv4 header", bytes(E(0x0800)) + good[:k])
            if proto == "tcp":
                add("tcp syn", E() / IP(src=C4, dst=S4) /
                    TCP(sport=TCP_SPORT, dport=TCP_DPORT, flags="S"))
                for doff in (0, 4, 15):
                    add("tcp lying data offset", E() / IP(src=C4, dst=S4) /
                        TCP(sport=TCP_SPORT, dport=TCP_DPORT, flags="A",
                            dataofs=doff))
            else:
                for ulen in (0, 7, 9, 200):
                    add("udp lying length", E() / IP(src=C4, dst=S4) /
                        UDP(sport=UDP_SPORT, dport=UDP_DPORT, len=ulen) /
                        Raw(b"u" * 16))

            # IPv6
            good6 = bytes(self.ip6(proto))
            n6 = len(good6)
            for pl in (n6 - 40 + 1, n6, 1500, 0xffff):
                add("ipv6 payload length > frame", E() / self.ip6(proto, plen=pl))
            for pl in (0, 1, hdr - 1):
                add("ipv6 payload length < l4 header",
                    E() / self.ip6(proto, plen=pl))
            add("ipv6 payload length < frame (padding)",
                E() / self.ip6(proto, plen=hdr))
            for ver in (0, 4, 15):
                add("ipv6 version", E() / self.ip6(proto, version=ver))
            for k in range(hdr):
                add("truncated l4 header",
                    bytes(E(0x86dd)) + v6(bytes(self.ip6(proto, payload=b""))
                                          [:40 + k]))
            for ext in (IPv6ExtHdrFragment(m=1), IPv6ExtHdrFragment(offset=5),
                        IPv6ExtHdrFragment(), IPv6ExtHdrHopByHop(),
                        IPv6ExtHdrRouting(), IPv6ExtHdrDestOpt()):
                l4 = (UDP(sport=UDP_SPORT, dport=UDP_DPORT) if proto == "udp"
                      else TCP(sport=TCP_SPORT, dport=TCP_DPORT, flags="A"))
                add("ipv6 extension header", E() / IPv6(src=C6, dst=S6) /
                    ext / l4 / Raw(b"e" * 16))
            for hl in (0, 1):
                add("hop limit <= 1", E() / self.ip6(proto, hlim=hl))
            for nh in (0, 58, 59, 132):
                b = bytearray(good6)
                b[6] = nh
                add("ipv6 next header not tcp/udp", bytes(E(0x86dd)) + b)
            for k in (0, 1, 39):
                add("short ipv6 header", bytes(E(0x86dd)) + good6[:k])
            add("802.1Q ipv6", E(0x8100) / Dot1Q(vlan=10, type=0x86dd)
                / self.ip6(proto))
            add("pppoe ipv6", E(0x8864) / PPPoE(sessionid=1) /
                PPP(proto=0x0057) / self.ip6(proto))
            p = self.ip6(proto)
            p[proto.upper() if proto == "udp" else "TCP"].chksum = 0x1234
            add("bad l4 checksum", E() / p)
            add("zero-length payload (valid)", E() / self.ip6(proto, payload=b""))
        return out

    def teardown(self):
        """FIN and RST on the TCP flows: declined by the module, then the
        stock flowtable tears the flow down. Sent last."""
        out = []
        for fl in ("FA", "R", "RA", "F"):
            out.append(("tcp fin/rst", bytes(
                self.eth() / IP(src=C4, dst=S4) /
                TCP(sport=TCP_SPORT, dport=TCP_DPORT, flags=fl))))
            out.append(("tcp fin/rst", bytes(
                self.eth() / IPv6(src=C6, dst=S6) /
                TCP(sport=TCP_SPORT, dport=TCP_DPORT, flags=fl))))
        return out


class Mutator:
    """Seeded random mutations of valid and encapsulated frames."""

    INTERESTING = (0, 1, 4, 5, 6, 0x11, 0x40, 0x45, 0x46, 0x4f, 0x60, 0x7f,
                   0x80, 0xfe, 0xff)

    def __init__(self, seed, frames):
        self.r = random.Random(seed)
        self.bases = []
        for fam in (4, 6):
            for proto in ("udp", "tcp"):
                for payload in (b"", b"m" * 8, b"m" * 200):
                    self.bases.append(frames.valid(fam, proto, payload))
        inner = frames.ip4("udp")
        self.bases += [
            bytes(frames.eth(0x8100) / Dot1Q(vlan=10, type=0x0800) / inner),
            bytes(frames.eth(0x88a8) / Dot1AD(vlan=1, type=0x8100) /
                  Dot1Q(vlan=2, type=0x0800) / inner),
            bytes(frames.eth(0x8864) / PPPoE(sessionid=7) /
                  PPP(proto=0x0021) / inner),
        ]

    def frame(self):
        r = self.r
        plain = len(self.bases) - 3
        b = bytearray(r.choice(self.bases[:plain]) if r.randrange(10) else
                      r.choice(self.bases[plain:]))
        for _ in range(r.choice((1, 1, 1, 2, 2, 3, 4))):
            k = r.randrange(20)
            if k < 9 and len(b) > 14:
                # a byte of the headers (ethertype up to the L4 header)
                hi = min(len(b), 14 + 8 + 40 + 20)
                b[r.randrange(12, hi)] = (r.choice(self.INTERESTING)
                                          if r.randrange(2) else
                                          r.randrange(256))
            elif k < 11 and len(b) > 14:
                b[r.randrange(14, len(b))] ^= 1 << r.randrange(8)
            elif k == 11 and len(b) > 15:
                del b[r.randrange(15, len(b)):]
            elif k == 12:
                b += bytes(r.randrange(256) for _ in range(r.randrange(1, 40)))
            elif k < 16 and len(b) >= 18:
                # an IPv4/IPv6 length field
                off = 16 if b[12:14] == b"\x08\x00" else 18
                v = r.choice((0, 1, 19, 20, 27, 28, 39, 40, 41, len(b) - 14,
                              len(b) - 13, len(b) - 15, 0xffff,
                              r.randrange(0x10000)))
                b[off:off + 2] = struct.pack("!H", v & 0xffff)
            elif k == 16 and len(b) >= 22 and b[12:14] == b"\x08\x00":
                # fragment bits
                b[20:22] = struct.pack("!H", r.choice((0x2000, 0x0001, 0x2001,
                                                      0x1fff, 0x4000)))
            elif k == 17 and len(b) >= 14:
                # push an 802.1Q / 802.1ad tag
                tag = r.choice((b"\x81\x00", b"\x88\xa8"))
                b[12:12] = tag + struct.pack("!H", r.randrange(4096))
        # Half the time the IPv4 header checksum is fixed after the
        # changes, so that the oracle's later checks are reached too.
        ihl = (b[14] & 15) * 4 if len(b) > 14 else 0
        if b[12:14] == b"\x08\x00" and 20 <= ihl <= len(b) - 14 and \
                r.randrange(2):
            b[24:26] = b"\0\0"
            b[24:26] = struct.pack("!H", (0xffff - csum16(
                bytes(b[14:14 + ihl]))) & 0xffff)
        if len(b) < 14:
            b += b"\0" * (14 - len(b))
        return bytes(b[:1514])


# --------------------------------------------------------------------------
# The run


class Rig:
    def __init__(self, c_ns, s_ns):
        self.nl = nfb_genl.Genl()
        self.rmac = mac_of("r0")
        self.rmac_b = bytes.fromhex(self.rmac.replace(":", ""))
        os.sched_setaffinity(0, {0})
        setns(c_ns)
        self.cmac = mac_of("c0")
        self.tx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
        self.tx.bind(("c0", 0))
        setns(s_ns)
        self.rx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW,
                                socket.htons(ETH_P_ALL))
        self.rx.bind(("s0", 0))
        self.rx.setsockopt(socket.SOL_SOCKET, 33, 4 << 20)  # SO_RCVBUFFORCE
        self.c_ns, self.s_ns = c_ns, s_ns
        self.frames = Frames(self.cmac, self.rmac)
        self.keep = []
        self.marker = (self.rmac_b + bytes.fromhex(self.cmac.replace(":", ""))
                       + struct.pack("!H", MARKER_TYPE) + b"marker" * 8)

    def stats(self):
        return nfb_genl.stats(self.nl)["total"]

    @staticmethod
    def seen(t):
        return t["packets"] + sum(t["decline"].values())

    def establish(self):
        """The four flows, through real sockets, then S drops everything."""
        for fam, c, s in ((socket.AF_INET, C4, S4), (socket.AF_INET6, C6, S6)):
            setns(self.s_ns)
            su = socket.socket(fam, socket.SOCK_DGRAM)
            su.bind((s, UDP_DPORT))
            st = socket.socket(fam, socket.SOCK_STREAM)
            st.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            st.bind((s, TCP_DPORT))
            st.listen(1)
            setns(self.c_ns)
            cu = socket.socket(fam, socket.SOCK_DGRAM)
            cu.bind((c, UDP_SPORT))
            cu.settimeout(2)
            for _ in range(30):
                cu.sendto(b"hello", (s, UDP_DPORT))
                r, _, _ = select.select([su], [], [], 1)
                if r:
                    d, peer = su.recvfrom(100)
                    su.sendto(d, peer)
                    try:
                        cu.recv(100)
                    except socket.timeout:
                        pass
                    break
            for _ in range(3):
                cu.sendto(b"again", (s, UDP_DPORT))
                d, peer = su.recvfrom(100)
                su.sendto(d, peer)
                cu.recv(100)
            ct = socket.socket(fam, socket.SOCK_STREAM)
            ct.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            ct.bind((c, TCP_SPORT))
            ct.settimeout(10)
            ct.connect((s, TCP_DPORT))
            conn, _ = st.accept()
            for _ in range(3):
                ct.send(b"ping")
                conn.recv(100)
                conn.send(b"pong")
                ct.recv(100)
            self.keep += [su, st, cu, ct, conn]
        # Let the last ACKs pass, then C and S drop everything they
        # receive and send, so that nothing but the test's frames crosses
        # the router: no answer to a forwarded frame comes back. AF_PACKET
        # sockets bypass netfilter: c0 still sends, s0 still sees.
        time.sleep(0.5)
        for ns in (self.c_ns, self.s_ns):
            subprocess.run(["ip", "netns", "exec", ns, "nft", "-f", "-"],
                           input=b"table inet nfb_fuzz_drop { chain pre { "
                           b"type filter hook prerouting priority -500; "
                           b"policy drop; }; chain out { type filter hook "
                           b"output priority -500; policy drop; }; }",
                           check=True)

    def send(self, frames):
        for f in frames:
            try:
                self.tx.send(f)
            except OSError as e:
                raise RuntimeError("send of %s: %s" % (f.hex(), e))

    def reaches_hook(self, f):
        """False for what the stack drops before ingress hooks."""
        etype = struct.unpack("!H", f[12:14])[0]
        if etype in (0x8100, 0x88a8) and len(f) - 14 < 6:
            return False    # skb_vlan_untag() needs the tag + 2 bytes
        return True

    def run_chunk(self, frames):
        """Send frames + marker; returns (stats before, after, expected
        seen, ok)."""
        want = sum(1 for f in frames if self.reaches_hook(f)) + 1
        before = self.stats()
        b0 = self.seen(before)
        self.send(frames)
        self.send([self.marker])
        deadline = time.monotonic() + 5
        while True:
            after = self.stats()
            if self.seen(after) >= b0 + want or time.monotonic() > deadline:
                break
            time.sleep(0.002)
        return before, after, want, self.seen(after) - b0 == want


def delta(before, after):
    d = {"taken": after["packets"] - before["packets"]}
    for grp in ("decline", "drop"):
        for k, v in after[grp].items():
            x = v - before[grp].get(k, 0)
            if x:
                d["%s:%s" % (grp, k)] = x
    return d


def merge(acc, d):
    for k, v in d.items():
        acc[k] = acc.get(k, 0) + v


def main(argv):
    if len(argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    seed = int(os.environ.get("NFB_FUZZ_SEED", "1"))
    count = int(os.environ.get("NFB_FUZZ_COUNT", "3000"))
    seconds = float(os.environ.get("NFB_FUZZ_TIME", "20"))
    rig = Rig(argv[0], argv[1])
    rig.establish()

    controls = [rig.frames.valid(f, p) for f in (4, 6) for p in ("udp", "tcp")]
    ok_ctrl = 0
    for _ in range(100):
        b, a, want, _ = rig.run_chunk(controls)
        if a["packets"] - b["packets"] == len(controls):
            ok_ctrl += 1
            break
        time.sleep(0.1)
    check("the four flows are offloaded: a valid packet of each is taken",
          ok_ctrl == 1, "taken %d of 4" % (a["packets"] - b["packets"]))

    per_cat = {}           # category -> {"n":, deltas...}
    bad_taken = []         # (what, frame) taken although "must"
    more_taken = 0         # more of them, counted per chunk only
    mismatches = []
    ctrl_fail = []
    n_must = n_may = 0

    def culprits(chunk):
        for what, f in chunk:
            b, a, _, _ = rig.run_chunk([f])
            if a["packets"] > b["packets"]:
                bad_taken.append((what, f))

    def do_chunk(label, cls, chunk):
        nonlocal n_must, n_may, more_taken
        b, a, want, ok = rig.run_chunk([f for _, f in chunk])
        d = delta(b, a)
        if not ok:
            mismatches.append("%s: %d frames reached the hook, the module "
                              "counted %d (%s)" % (label, want,
                                                   rig.seen(a) - rig.seen(b),
                                                   d))
        if cls == "must":
            n_must += len(chunk)
            # Finding the culprits one by one is slow under TCG: after 80
            # of them, the rest is only counted.
            if d["taken"] and len(bad_taken) < 80:
                culprits(chunk)
            elif d["taken"]:
                more_taken += d["taken"]
        else:
            n_may += len(chunk)
        return d

    def controls_taken(when):
        b, a, _, _ = rig.run_chunk(controls)
        if a["packets"] - b["packets"] != len(controls):
            ctrl_fail.append("%s: %d of %d valid packets taken (%s)" %
                             (when, a["packets"] - b["packets"],
                              len(controls), delta(b, a)))

    # Fixed cases, one chunk per category and class.
    cases = rig.frames.cases()
    assert not any(teardown_risk(f) for _, f in cases)
    groups = {}
    for cat, f in cases:
        cls, what = classify(f, rig.rmac_b)
        groups.setdefault((cat, cls), []).append(("%s [%s]" % (cat, what), f))
    for i, ((cat, cls), chunk) in enumerate(sorted(groups.items())):
        d = do_chunk(cat, cls, chunk)
        acc = per_cat.setdefault("%s (%s)" % (cat, cls), {"n": 0})
        acc["n"] += len(chunk)
        merge(acc, d)
        if i % 8 == 7:
            controls_taken("after '%s'" % cat)
    controls_taken("after the fixed cases")
    for cat, acc in sorted(per_cat.items()):
        out("INFO", "%s: %s" % (cat, ", ".join("%s %d" % kv for kv in
                                               acc.items())))
    out("INFO", "fixed cases: %d frames" % len(cases))

    # Random mutations.
    mut = Mutator(seed, rig.frames)
    deadline = time.monotonic() + seconds
    n = 0
    pend = {"must": [], "may": []}
    rnd = {"must": {}, "may": {}}
    whats = {}
    chunks = 0
    while n < count and time.monotonic() < deadline:
        f = mut.frame()
        while teardown_risk(f):
            f = mut.frame()
        cls, what = classify(f, rig.rmac_b)
        whats[(cls, what)] = whats.get((cls, what), 0) + 1
        pend[cls].append(("random %d [%s]" % (n, what), f))
        n += 1
        for c in ("must", "may"):
            if len(pend[c]) >= 32:
                merge(rnd[c], do_chunk("random %s" % c, c, pend[c]))
                pend[c] = []
                chunks += 1
                if chunks % 8 == 0:
                    controls_taken("after random frame %d" % n)
    for c in ("must", "may"):
        if pend[c]:
            merge(rnd[c], do_chunk("random %s" % c, c, pend[c]))
    controls_taken("after the random frames")
    for c in ("must", "may"):
        out("INFO", "random '%s decline' frames: %s" % (
            c, ", ".join("%s %d" % kv for kv in sorted(rnd[c].items()))))
    top = sorted(whats.items(), key=lambda kv: -kv[1])[:24]
    out("INFO", "random frames by oracle verdict: %s" %
        "; ".join("%s %s: %d" % (c, w, k) for (c, w), k in top))

    check("every frame that reached the hook is counted: taken or declined "
          "(%d chunks)" % (len(groups) + chunks), not mismatches,
          "; ".join(mismatches[:5]))
    # One example per oracle reason.
    by_reason = {}
    for w, f in bad_taken:
        reason = re.sub(r" \d+$", "", w[w.index("[") + 1:-1])
        by_reason.setdefault(reason, []).append((w, f))
    examples = [v[0] for v in by_reason.values()]
    bad_desc = "; ".join("%s: %d taken, e.g. %s" % (r, len(v), v[0][1].hex())
                         for r, v in by_reason.items())
    # The module does what the stock flowtable does, which validates less
    # than ip_rcv() (no IP checksum, total length, version or pkt_type
    # check in 6.1 / 6.12's nf_flow_table_ip.c): such frames of an
    # offloaded flow are forwarded with the module as without it. What is
    # asserted is that difference never grows: every kind of malformed
    # frame the module takes, the stock flowtable forwards too.
    out("INFO", "malformed frames taken, as the stock flowtable takes them "
        "(%d fixed, %d random frames, %d of all 'must decline', seed %d): "
        "%d: %s" % (len(cases), n, n_must, seed,
                    len(bad_taken) + more_taken, bad_desc or "none"))
    check("valid packets of the four flows taken throughout", not ctrl_fail,
          "; ".join(ctrl_fail[:5]))

    # The stock flowtable on the frames taken although malformed.
    if bad_taken:
        dropped = stock_check(rig, examples, argv[2], argv[3])
        check("every kind of malformed frame the module took is forwarded "
              "by the stock flowtable too (one example of each kind, %d "
              "kinds)" % len(examples), not dropped,
              "the stock path does not forward: %s" % "; ".join(dropped))

    # Valid datagrams after all that: taken and delivered intact.
    drain(rig.rx)
    sent = {}
    frames = []
    for fam in (4, 6):
        for i in range(100):
            payload = b"nfb-fuzz-%d-%04d-" % (fam, i) + \
                bytes(random.Random(i).randrange(256) for _ in range(64))
            sent[payload] = fam
            frames.append(rig.frames.valid(fam, "udp", payload))
    b = rig.stats()
    got = {}
    for i in range(0, len(frames), 20):
        rig.send(frames[i:i + 20])
        deadline = time.monotonic() + 5
        while len(got) < i + 20 and time.monotonic() < deadline:
            r, _, _ = select.select([rig.rx], [], [], 0.2)
            if r:
                recv_check(rig.rx.recv(65535), sent, got)
    a = rig.stats()
    taken = a["packets"] - b["packets"]
    check("valid datagrams after the fuzzing: %d of %d taken" %
          (taken, len(frames)), taken == len(frames), str(delta(b, a)))
    good = sum(1 for v in got.values() if v == "ok")
    bad = {k[:20]: v for k, v in got.items() if v != "ok"}
    check("valid datagrams arrive at the server intact: %d of %d" %
          (good, len(frames)), good == len(frames) and not bad,
          "missing %d, damaged %s" % (len(frames) - len(got), bad))
    # Last, FIN and RST on the TCP flows: declined (the stock flowtable
    # then tears the flows down).
    fins = rig.frames.teardown()
    b, a, want, ok = rig.run_chunk([f for _, f in fins])
    d = delta(b, a)
    # The first FIN/RST of each flow is declined for its flags; the stock
    # flowtable then removes the flow and the later ones miss.
    check("tcp fin/rst on the flows: %d declined, none taken (%s)" %
          (len(fins), d), ok and d["taken"] == 0 and
          d.get("decline:tcp_flags", 0) >= 2 and
          d.get("decline:tcp_flags", 0) + d.get("decline:miss", 0) ==
          len(fins))
    if nfb_test.failures:
        out("INFO", "seed %d; reproduce: NFB_FUZZ_SEED=%d NFB_FUZZ_COUNT=%d"
            % (seed, seed, count))
    return 1 if nfb_test.failures else 0


def drain(sock):
    n = 0
    while select.select([sock], [], [], 0)[0]:
        sock.recv(65535)
        n += 1
    return n


def stock_check(rig, frames, table, name):
    """Send each frame again with the module detached: does the stock
    flowtable (or the stack) forward it to S? Returns those it does not."""
    ids = nfb_genl.ft_attrs("inet", table, name)
    rig.nl.do(nfb_genl.CMD["detach"], ids)
    dropped = []
    try:
        for what, f in frames:
            drain(rig.rx)
            rig.send([f])
            fwd = bool(select.select([rig.rx], [], [], 0.5)[0])
            out("INFO", "module detached, %s: %s" % (
                what, "forwarded to S all the same (by the stock "
                "flowtable)" if fwd else "not forwarded"))
            if not fwd:
                dropped.append(what)
    finally:
        rig.nl.do(nfb_genl.CMD["attach"], ids)
    return dropped


def recv_check(frame, sent, got):
    """Check a frame seen on s0 against the datagrams sent."""
    etype = struct.unpack("!H", frame[12:14])[0]
    if etype == 0x0800:
        l3 = frame[14:]
        tot = struct.unpack("!H", l3[2:4])[0]
        if l3[9] != 17:
            return
        seg = l3[20:tot]
        payload = seg[8:]
        if payload not in sent:
            return
        ok = (l3[8] == 63 and csum16(l3[:20]) == 0xffff and
              l4_csum_ok(l3[12:16], l3[16:20], 17, seg) and
              l3[12:16] == socket.inet_aton(C4) and
              l3[16:20] == socket.inet_aton(S4))
    elif etype == 0x86dd:
        l3 = frame[14:]
        plen = struct.unpack("!H", l3[4:6])[0]
        if l3[6] != 17:
            return
        seg = l3[40:40 + plen]
        payload = seg[8:]
        if payload not in sent:
            return
        ok = l3[7] == 63 and l4_csum_ok(l3[8:24], l3[24:40], 17, seg)
    else:
        return
    got[payload] = "dup" if payload in got else ("ok" if ok else "bad")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
