#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""PPPoE discovery for nfb_pppoe.sh.

  nfb_pppoe.py ac IFNAME SID OUT    access concentrator on IFNAME: answers
                                    one client's PADI with a PADO and its
                                    PADR with a PADS for session SID, then
                                    writes "SID CLIENTMAC" to OUT and exits;
                                    OUT.ready exists once it listens

Debian's pppoe-server has no kernel mode (no -k: it would run pppd on a
pty with a user-space pppoe relay, and the router's PPP device would not be
a PPPoE channel the flowtable can resolve). So discovery is answered here
and the router's pppd attaches to the session with the kernel PPPoE plugin
(pppoe-sess SID:MAC), as pppoe-server -k would have it do.
"""
import os
import socket
import struct
import sys

ETH_P_PPP_DISC = 0x8863
PADI, PADO, PADR, PADS = 0x09, 0x07, 0x19, 0x65
SERVICE_NAME, AC_NAME, HOST_UNIQ, RELAY_ID = 0x0101, 0x0102, 0x0103, 0x0110


def tags(body):
    out, off = [], 0
    while off + 4 <= len(body):
        t, n = struct.unpack("!HH", body[off:off + 4])
        out.append((t, body[off + 4:off + 4 + n]))
        off += 4 + n
    return out


def packet(dst, src, code, sid, tag_list):
    body = b"".join(struct.pack("!HH", t, len(v)) + v for t, v in tag_list)
    return (dst + src + struct.pack("!H", ETH_P_PPP_DISC) +
            struct.pack("!BBHH", 0x11, code, sid, len(body)) + body)


def ac(ifname, sid, out):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW,
                      socket.htons(ETH_P_PPP_DISC))
    s.bind((ifname, ETH_P_PPP_DISC))
    s.settimeout(120)
    me = s.getsockname()[4]
    open(out + ".ready", "w").close()
    while True:
        f = s.recv(2048)
        if len(f) < 20 or f[0:6] not in (me, b"\xff" * 6):
            continue
        peer = f[6:12]
        _, code, _, length = struct.unpack("!BBHH", f[14:20])
        # Echo what the client sent that it must get back; name ourselves.
        echo = [(t, v) for t, v in tags(f[20:20 + length])
                if t in (SERVICE_NAME, HOST_UNIQ, RELAY_ID)]
        if not any(t == SERVICE_NAME for t, _ in echo):
            echo.insert(0, (SERVICE_NAME, b""))
        if code == PADI:
            s.send(packet(peer, me, PADO, 0, [(AC_NAME, b"nfb")] + echo))
        elif code == PADR:
            s.send(packet(peer, me, PADS, sid, echo))
            mac = ":".join("%02x" % b for b in peer)
            with open(out + ".tmp", "w") as o:
                o.write("%d %s\n" % (sid, mac))
            os.rename(out + ".tmp", out)
            return


def main(argv):
    if len(argv) == 4 and argv[0] == "ac":
        ac(argv[1], int(argv[2]), argv[3])
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
