#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Traffic for nfb_encap.sh.

  nfb_encap.py recv ADDR PORT OUT     receive a numbered stream, echo probes;
                                      once bound, create OUT.ready; on the
                                      end marker write a JSON verdict
                                      {"got", "in_order", "intact"} to OUT
  nfb_encap.py probe SRC DST PORT [SPORT]   until one probe is echoed
  nfb_encap.py send SRC DST PORT N [SPORT]  probe, then N datagrams, paced,
                                      a probe (echoed, or 0.5 s), then the
                                      end marker
  nfb_encap.py burst N FLOW...        N rounds of one datagram per flow
                                      (FLOW = SRC,DST,PORT,SPORT,FIRSTSEQ),
                                      unpaced; no probe, no end marker
  nfb_encap.py end FLOW...            the end marker of each flow
  nfb_encap.py gso FLOW N             N datagrams of FLOW from FIRSTSEQ on,
                                      in one UDP GSO send (UDP_SEGMENT): one
                                      GSO packet on the wire of a veth
  nfb_encap.py raw IFNAME KIND N      N malformed frames out of IFNAME

Addresses are IPv4 or IPv6 (recv, probe, send, burst).
Datagram: 4-byte sequence number, then a payload derived from it, so that
the receiver checks every byte without a reference file.
"""
import hashlib
import json
import os
import socket
import struct
import sys
import time

PROBE, END = 0xfffffffe, 0xffffffff
SIZE = 1000
UDP_SEGMENT = 103  # <linux/udp.h>


def payload(seq):
    block = hashlib.sha256(struct.pack("!I", seq)).digest()
    return (block * (SIZE // len(block) + 1))[:SIZE]


def family(addr):
    return socket.AF_INET6 if ":" in addr else socket.AF_INET


def sock(src, sport=0):
    s = socket.socket(family(src), socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((src, sport))
    return s


def recv(addr, port, out):
    s = socket.socket(family(addr), socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, 33, 8 << 20)  # SO_RCVBUFFORCE
    s.bind((addr, int(port)))
    s.settimeout(120)
    open(out + ".ready", "w").close()
    seqs, intact = [], True
    while True:
        d, peer = s.recvfrom(4096)
        seq, = struct.unpack("!I", d[:4])
        if seq == PROBE:
            s.sendto(d, peer)
            continue
        if seq == END:
            break
        seqs.append(seq)
        if d[4:] != payload(seq):
            intact = False
    # One line, these keys first in this order: fastpath.sh's
    # fp_stream_verdict matches it as text, once the file is there whole
    # (written aside, then renamed into place).
    verdict = {"got": len(seqs), "in_order": seqs == sorted(seqs),
               "unique": len(set(seqs)) == len(seqs), "intact": intact,
               "first": seqs[:1], "last": seqs[-1:]}
    with open(out + ".part", "w") as f:
        json.dump(verdict, f)
    os.rename(out + ".part", out)


def probe(s, dst):
    s.settimeout(0.5)
    for _ in range(120):
        s.sendto(struct.pack("!I", PROBE), dst)
        try:
            s.recv(64)
            return True
        except socket.timeout:
            pass
    return False


def drained(s, dst):
    """Wait, at most 0.5 s, for the echo of a probe sent after the data:
    the flow keeps its order, so what was sent before it has arrived once
    it is back. The probe carries a mark of its own, so that a late echo
    of the first probes does not count; recv echoes it and counts nothing
    of it. 0.5 s is the fixed wait this replaces, which a flow whose way
    back is gone (a session ended under the stream) still gets."""
    mark = struct.pack("!I", PROBE) + b"drained"
    deadline = time.monotonic() + 0.5
    s.sendto(mark, dst)
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return
        s.settimeout(left)
        try:
            if s.recv(64) == mark:
                return
        except socket.timeout:
            return


def flow(spec):
    src, dst, port, sport, first = spec.split(",")
    return src, (dst, int(port)), int(sport), int(first)


def main(argv):
    cmd = argv[0]
    if cmd == "recv":
        recv(*argv[1:4])
    elif cmd == "probe":
        s = sock(argv[1], int(argv[4]) if len(argv) > 4 else 0)
        return 0 if probe(s, (argv[2], int(argv[3]))) else 1
    elif cmd == "send":
        dst = (argv[2], int(argv[3]))
        s = sock(argv[1], int(argv[5]) if len(argv) > 5 else 0)
        if not probe(s, dst):
            return 1
        for n in range(int(argv[4])):
            s.sendto(struct.pack("!I", n) + payload(n), dst)
            if n % 16 == 15:
                time.sleep(0.002)
        drained(s, dst)
        for _ in range(3):
            s.sendto(struct.pack("!I", END), dst)
    elif cmd == "burst":
        flows = [flow(f) for f in argv[2:]]
        socks = [sock(src, sport) for src, _, sport, _ in flows]
        for r in range(int(argv[1])):
            for (_, dst, _, first), s in zip(flows, socks):
                s.sendto(struct.pack("!I", first + r) + payload(first + r),
                         dst)
    elif cmd == "gso":
        src, dst, sport, first = flow(argv[1])
        s = sock(src, sport)
        s.setsockopt(socket.SOL_UDP, UDP_SEGMENT, 4 + SIZE)
        s.sendto(b"".join(struct.pack("!I", q) + payload(q)
                          for q in range(first, first + int(argv[2]))), dst)
    elif cmd == "end":
        for src, dst, sport, _ in (flow(f) for f in argv[1:]):
            s = sock(src, sport)
            for _ in range(3):
                s.sendto(struct.pack("!I", END), dst)
    elif cmd == "raw":
        raw(argv[1], argv[2], int(argv[3]))
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


def ipv4_udp(dst, dport, data):
    """An IPv4/UDP packet from 10.0.1.1 (checksums left to nobody)."""
    ulen = 8 + len(data)
    udp = struct.pack("!HHHH", 40099, dport, ulen, 0) + data
    hdr = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + ulen, 0, 0, 64, 17, 0,
                      socket.inet_aton("10.0.1.1"), socket.inet_aton(dst))
    csum = 0
    for i in range(0, 20, 2):
        csum += (hdr[i] << 8) | hdr[i + 1]
    while csum >> 16:
        csum = (csum & 0xffff) + (csum >> 16)
    hdr = hdr[:10] + struct.pack("!H", ~csum & 0xffff) + hdr[12:]
    return hdr + udp


def raw(ifname, kind, n):
    """Malformed encapsulations, sent to the router's MAC (argv via env)."""
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((ifname, 0))
    src = s.getsockname()[4]
    dst = bytes.fromhex(sys.stdin.readline().strip().replace(":", ""))
    ip = ipv4_udp("10.0.2.1", 7777, b"m" * 32)

    def pppoe(ver_type=0x11, code=0, sid=7, length=None, proto=0x0021,
              body=ip):
        if length is None:
            length = 2 + len(body)
        return (struct.pack("!BBHH", ver_type, code, sid, length) +
                struct.pack("!H", proto) + body)

    frames = {
        # PPPoE header cut after 4 of its 6 bytes (no PPP protocol)
        "pppoe_trunc": (0x8864, struct.pack("!BBH", 0x11, 0, 7)),
        # PPPoE length beyond the frame
        "pppoe_len": (0x8864, pppoe(length=1400)),
        # PPPoE version/type 2/2
        "pppoe_ver": (0x8864, pppoe(ver_type=0x22)),
        # PPP protocol LCP (0xc021) in front of an IPv4 packet
        "ppp_proto": (0x8864, pppoe(proto=0xc021)),
        # 802.1ad tag, then an 802.1Q tag cut after 2 bytes: the core
        # moves the outer tag to vlan_tci, the inner one stays truncated
        "vlan_trunc": (0x88a8, struct.pack("!HH", 100, 0x8100) +
                       struct.pack("!H", 10)),
    }
    etype, body = frames[kind]
    frame = dst + src + struct.pack("!H", etype) + body
    for _ in range(n):
        s.send(frame)
        time.sleep(0.01)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
