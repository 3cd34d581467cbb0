#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Minimal test-only client of the nf_flow_bulk generic netlink family.

Not the product tool (that is userspace/flowbulk): just enough for the
selftests, including requests the real tool would never send.

  nfb_genl.py attach FAMILY TABLE FLOWTABLE
  nfb_genl.py detach FAMILY TABLE FLOWTABLE
  nfb_genl.py list                  JSON array of attachments
  nfb_genl.py stats                 JSON: {"total": {...}, "cpus": [...]}
  nfb_genl.py reset
  nfb_genl.py raw CMD [TYPE:KIND:VALUE ...]   KIND is u32 or str

FAMILY is inet, ip, ip6 or a number. Errors: message with the kernel's
extack on stderr, exit status 1.
"""
import errno
import os
import socket
import struct
import sys

NETLINK_GENERIC = 16
NETLINK_EXT_ACK = 11
SOL_NETLINK = 270
NLM_F_REQUEST, NLM_F_ACK, NLM_F_DUMP = 1, 4, 0x300
NLMSG_ERROR, NLMSG_DONE = 2, 3
GENL_ID_CTRL, CTRL_CMD_GETFAMILY = 16, 3
CTRL_ATTR_FAMILY_ID, CTRL_ATTR_FAMILY_NAME = 1, 2
NLMSGERR_ATTR_MSG = 1

CMD = {"attach": 1, "detach": 2, "get_attach": 3, "get_stats": 4,
       "reset_stats": 5}
A_FAMILY, A_TABLE, A_FLOWTABLE, A_PRIORITY = 1, 2, 3, 4
A_DEVICES, A_DEVICE, A_STATS, A_SCANS, A_STATE = 5, 6, 7, 9, 10
ATTACH_STATES = ["attached", "waiting", "stale"]
FAMILIES = {"inet": 1, "ip": 2, "ip6": 10}

DECLINE = ["disabled", "not_ip", "header", "no_flowtable", "miss", "frag",
           "options", "ttl", "mtu", "tcp_flags", "dst_stale", "hw_offload",
           "xmit_type", "encap", "unwritable", "l4proto", "shared",
           "encap_header", "pppoe", "ppp_proto", "direct_dev", "encap_gso"]
FALLBACK = ["qdisc", "egress_hook", "neigh", "busy", "txq"]
ENCAP = ["none", "vlan", "vlan2", "pppoe", "vlan_pppoe"]
XMIT = ["neigh", "direct"]
DROP = ["dev_down", "validate", "xmit", "queue_full", "nomem", "header"]


class NlError(Exception):
    def __init__(self, err, msg):
        super().__init__(err, msg)
        self.err = err
        self.msg = msg


def attr(atype, payload):
    hdr = struct.pack("HH", 4 + len(payload), atype)
    return hdr + payload + b"\0" * ((4 - len(payload) % 4) % 4)


def parse_attrs(data):
    out = []
    while len(data) >= 4:
        alen, atype = struct.unpack_from("HH", data)
        if alen < 4:
            break
        out.append((atype & 0x3fff, data[4:alen]))
        data = data[(alen + 3) & ~3:]
    return out


class Genl:
    def __init__(self):
        self.sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW,
                                  NETLINK_GENERIC)
        self.sock.setsockopt(SOL_NETLINK, NETLINK_EXT_ACK, 1)
        self.sock.bind((0, 0))
        self.seq = 1
        self.fam = None

    def request(self, ftype, cmd, attrs, flags):
        self.seq += 1
        payload = struct.pack("BBH", cmd, 1, 0) + attrs
        msg = struct.pack("IHHII", 16 + len(payload), ftype,
                          NLM_F_REQUEST | flags, self.seq, 0) + payload
        self.sock.send(msg)
        replies = []
        while True:
            data = self.sock.recv(1 << 20)
            while len(data) >= 16:
                mlen, mtype, mflags, _, _ = struct.unpack_from("IHHII", data)
                body = data[16:mlen]
                data = data[(mlen + 3) & ~3:]
                if mtype == NLMSG_DONE:
                    return replies
                if mtype == NLMSG_ERROR:
                    err = -struct.unpack_from("i", body)[0]
                    if err == 0:
                        return replies
                    text = ""
                    olen = 16
                    if not mflags & 0x100:  # NLM_F_CAPPED
                        olen = struct.unpack_from("I", body, 4)[0]
                    for atype, val in parse_attrs(body[4 + ((olen + 3) & ~3):]):
                        if atype == NLMSGERR_ATTR_MSG:
                            text = val.rstrip(b"\0").decode()
                    raise NlError(err, text)
                replies.append(parse_attrs(body[4:]))

    def family(self):
        if self.fam is None:
            try:
                rep = self.request(GENL_ID_CTRL, CTRL_CMD_GETFAMILY,
                                   attr(CTRL_ATTR_FAMILY_NAME,
                                        b"nf_flow_bulk\0"), NLM_F_ACK)
            except NlError as e:
                raise NlError(e.err, "nf_flow_bulk family: " + e.msg)
            for atype, val in rep[0]:
                if atype == CTRL_ATTR_FAMILY_ID:
                    self.fam = struct.unpack("H", val[:2])[0]
        return self.fam

    def do(self, cmd, attrs=b""):
        return self.request(self.family(), cmd, attrs, NLM_F_ACK)

    def dump(self, cmd, attrs=b""):
        return self.request(self.family(), cmd, attrs, NLM_F_DUMP)


def ft_attrs(family, table, name):
    fam = FAMILIES.get(family)
    fam = int(family) if fam is None else fam
    return (attr(A_FAMILY, struct.pack("I", fam)) +
            attr(A_TABLE, table.encode() + b"\0") +
            attr(A_FLOWTABLE, name.encode() + b"\0"))


def s32(val):
    return struct.unpack("i", val)[0]


def list_attach(nl):
    out = []
    for msg in nl.dump(CMD["get_attach"]):
        a = {"devices": []}
        for atype, val in msg:
            if atype == A_FAMILY:
                a["family"] = struct.unpack("I", val)[0]
            elif atype == A_TABLE:
                a["table"] = val.rstrip(b"\0").decode()
            elif atype == A_FLOWTABLE:
                a["flowtable"] = val.rstrip(b"\0").decode()
            elif atype == A_PRIORITY:
                a["priority"] = s32(val)
            elif atype == A_SCANS:
                a["scans"] = struct.unpack("Q", val)[0]
            elif atype == A_STATE:
                a["state"] = (ATTACH_STATES[val[0]] if val[0] < len(ATTACH_STATES)
                              else val[0])
            elif atype == A_DEVICES:
                a["adjacent"] = {}
                for _, dev in parse_attrs(val):
                    d = dict(parse_attrs(dev))
                    name = d[2].rstrip(b"\0").decode()
                    a["devices"].append(name)
                    if 3 in d:
                        a["adjacent"][name] = bool(d[3][0])
                    if 5 in d:
                        a.setdefault("checks", {})[name] = struct.unpack("Q", d[5])[0]
        out.append(a)
    return out


def counters(val, names):
    out = {n: 0 for n in names}
    for atype, v in parse_attrs(val):
        if atype == 0:
            continue
        idx = atype - 1
        key = names[idx] if idx < len(names) else str(idx)
        out[key] = struct.unpack("Q", v)[0]
    return out


def stats(nl):
    cpus = []
    for msg in nl.dump(CMD["get_stats"]):
        for atype, val in msg:
            if atype != A_STATS:
                continue
            c = {}
            for st, v in parse_attrs(val):
                if st == 1:
                    c["cpu"] = struct.unpack("I", v)[0]
                elif st == 2:
                    c["packets"] = struct.unpack("Q", v)[0]
                elif st == 3:
                    c["bulks"] = struct.unpack("Q", v)[0]
                elif st == 4:
                    c["hist"] = counters(v, [str(1 << i) for i in range(8)])
                elif st == 5:
                    c["decline"] = counters(v, DECLINE)
                elif st == 6:
                    c["fallback"] = counters(v, FALLBACK)
                elif st == 7:
                    c["drop"] = counters(v, DROP)
                elif st == 9:
                    c["taken_encap"] = counters(v, ENCAP)
                elif st == 10:
                    c["taken_xmit"] = counters(v, XMIT)
                elif st == 11:
                    c["drains"] = struct.unpack("Q", v)[0]
            cpus.append(c)
    groups = ("hist", "decline", "fallback", "drop", "taken_encap",
              "taken_xmit")
    total = {"packets": 0, "bulks": 0, "drains": 0}
    total.update({k: {} for k in groups})
    for c in cpus:
        for k in ("packets", "bulks", "drains"):
            total[k] += c.get(k, 0)
        for k in groups:
            for n, v in c.get(k, {}).items():
                total[k][n] = total[k].get(n, 0) + v
    return {"total": total, "cpus": cpus}


def raw_attrs(specs):
    out = b""
    for spec in specs:
        atype, kind, value = spec.split(":", 2)
        if kind == "u32":
            payload = struct.pack("I", int(value))
        else:
            payload = value.encode() + b"\0"
        out += attr(int(atype), payload)
    return out


def main(argv):
    # Here, not at the top: json pulls in re and more, about a third of
    # the import time of this module, which fp_stat and the other pollers
    # import (not run) many times per test under TCG, without printing JSON.
    import json
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    nl = Genl()
    cmd, args = argv[0], argv[1:]
    if cmd in ("attach", "detach") and len(args) == 3:
        nl.do(CMD[cmd], ft_attrs(*args))
    elif cmd == "list":
        print(json.dumps(list_attach(nl)))
    elif cmd == "stats":
        print(json.dumps(stats(nl)))
    elif cmd == "reset":
        nl.do(CMD["reset_stats"])
    elif cmd == "raw" and args:
        nl.do(int(args[0]), raw_attrs(args[1:]))
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except NlError as e:
        print("error: %s (%s): %s" % (errno.errorcode.get(e.err, e.err),
                                      os.strerror(e.err), e.msg),
              file=sys.stderr)
        sys.exit(1)
