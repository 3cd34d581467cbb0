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

FAMILIES = {"inet": 1, "ip": 2, "ip6": 10}

# Where the family's numbers and names come from: the committed YNL spec,
# read with the standard library only (the pollers run python3 -S, without
# site-packages, so no PyYAML). It reads the subset of YAML the spec is
# written in: block mappings and sequences, flow [...] and {...} (over
# several lines too), plain and double-quoted scalars, whole-line comments.
# tools/check-names fails when it reads the spec otherwise than PyYAML.
# A copy of this file (fp_unpriv_copy: for a user who cannot reach the work
# tree) reads the copy of the spec beside it.
_HERE = os.path.dirname(os.path.abspath(__file__))
SPEC = os.path.join(_HERE, "nf_flow_bulk.yaml")
if not os.path.exists(SPEC):
    SPEC = os.path.join(_HERE, "..", "..", "..", "Documentation", "netlink",
                        "nf_flow_bulk.yaml")


def _scalar(text):
    text = text.strip()
    if text.startswith('"'):
        return text[1:-1].replace('\\"', '"').replace("\\\\", "\\")
    if text.lstrip("-").isdigit():
        return int(text)
    return {"true": True, "false": False}.get(text, text)


def _flow(text, i):
    """The flow collection or scalar at text[i]: (value, index after it)."""
    while text[i] == " ":
        i += 1
    if text[i] in "[{":
        close = "]" if text[i] == "[" else "}"
        out = [] if close == "]" else {}
        i += 1
        while True:
            while text[i] in " ,":
                i += 1
            if text[i] == close:
                return out, i + 1
            if close == "]":
                val, i = _flow(text, i)
                out.append(val)
            else:
                colon = text.index(":", i)
                key = text[i:colon].strip()
                val, i = _flow(text, colon + 1)
                out[key] = val
    if text[i] == '"':
        end = i + 1
        while text[end] != '"':
            end += 2 if text[end] == "\\" else 1
        return _scalar(text[i:end + 1]), end + 1
    end = i
    while end < len(text) and text[end] not in ",]}":
        end += 1
    return _scalar(text[i:end]), end


def _lines(path):
    """(indent, text) of each logical line: a flow collection spread over
    several lines joined into one."""
    out = []
    pending = None
    with open(path, encoding="utf-8") as f:
        for raw in f:
            text = raw.rstrip()
            if pending is not None:
                pending[1] += " " + text.strip()
            else:
                if not text.strip() or text.lstrip().startswith("#"):
                    continue
                pending = [len(text) - len(text.lstrip()), text.strip()]
            depth = 0
            quoted = False
            for c in pending[1]:
                if c == '"':
                    quoted = not quoted
                elif not quoted and c in "[{":
                    depth += 1
                elif not quoted and c in "]}":
                    depth -= 1
            if depth == 0:
                out.append(tuple(pending))
                pending = None
    return out


def _block(lines, i, indent):
    """The block node whose lines start at lines[i], indented by indent."""
    if lines[i][1].startswith("- "):
        out = []
        while i < len(lines) and lines[i][0] == indent and lines[i][1].startswith("- "):
            # An item's text continues at two more columns.
            item = (indent + 2, lines[i][1][2:])
            sub = [item]
            i += 1
            while i < len(lines) and lines[i][0] > indent:
                sub.append(lines[i])
                i += 1
            val, _ = _block(sub, 0, indent + 2)
            out.append(val)
        return out, i
    if ":" not in lines[i][1] or lines[i][1][0] in "[{\"":
        return _flow(lines[i][1], 0)[0], i + 1
    out = {}
    while i < len(lines) and lines[i][0] == indent:
        key, _, rest = lines[i][1].partition(":")
        i += 1
        if rest.strip():
            out[key.strip()] = _flow(rest, 0)[0]
        elif i < len(lines) and lines[i][0] > indent:
            out[key.strip()], i = _block(lines, i, lines[i][0])
        else:
            out[key.strip()] = None
    return out, i


def load_spec(path=None):
    """The spec as PyYAML's safe_load would give it."""
    lines = _lines(path or SPEC)
    return _block(lines, 0, lines[0][0])[0]


_SPEC = {}


def spec():
    if not _SPEC:
        _SPEC.update(load_spec())
    return _SPEC


def _key(name):
    """A spec name as this client prints it: not-ip is not_ip, as in /proc."""
    return name.replace("-", "_")


def enum(name):
    """The entries of the spec's enum NAME, in value order."""
    for d in spec()["definitions"]:
        if d["name"] == name:
            return [_key(e) for e in d["entries"]]
    raise KeyError(name)


def const(name):
    for d in spec()["definitions"]:
        if d["name"] == name:
            return d["value"]
    raise KeyError(name)


def attrs(set_name):
    """{attribute name: (type number, spec entry)} of an attribute set."""
    for s in spec()["attribute-sets"]:
        if s["name"] == set_name:
            out = {}
            value = 1
            for a in s["attributes"]:
                value = a.get("value", value)
                out[_key(a["name"])] = (value, a)
                value += 1
            return out
    raise KeyError(set_name)


def attr_type(set_name, name):
    return attrs(set_name)[name][0]


def commands():
    return {_key(op["name"]): op["value"]
            for op in spec()["operations"]["list"]}


# The names other scripts import (nfb_genl.CMD, .DECLINE...), read from the
# spec at first use: the pollers that import this module for one stats read
# need no more.
_LAZY = {
    "CMD": commands,
    "ATTACH_STATES": lambda: enum("attach-state"),
    "DECLINE": lambda: enum("decline-reason"),
    "FALLBACK": lambda: enum("fallback-reason"),
    "DROP": lambda: enum("drop-reason"),
    "ENCAP": lambda: enum("encap"),
    "XMIT": lambda: enum("xmit"),
}


def __getattr__(name):
    if name in _LAZY:
        return _LAZY[name]()
    raise AttributeError(name)


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
    a = attrs("main")
    return (attr(a["family"][0], struct.pack("I", fam)) +
            attr(a["table"][0], table.encode() + b"\0") +
            attr(a["flowtable"][0], name.encode() + b"\0"))


def s32(val):
    return struct.unpack("i", val)[0]


def list_attach(nl):
    a_num = {v[0]: k for k, v in attrs("main").items()}
    dev = {k: v[0] for k, v in attrs("dev").items()}
    states = enum("attach-state")
    out = []
    for msg in nl.dump(commands()["get_attach"]):
        a = {"devices": []}
        for atype, val in msg:
            name = a_num.get(atype)
            if name == "family":
                a["family"] = struct.unpack("I", val)[0]
            elif name in ("table", "flowtable"):
                a[name] = val.rstrip(b"\0").decode()
            elif name == "priority":
                a["priority"] = s32(val)
            elif name == "scans":
                a["scans"] = struct.unpack("Q", val)[0]
            elif name == "state":
                a["state"] = states[val[0]] if val[0] < len(states) else val[0]
            elif name == "devices":
                a["adjacent"] = {}
                for _, d in parse_attrs(val):
                    d = dict(parse_attrs(d))
                    ifname = d[dev["ifname"]].rstrip(b"\0").decode()
                    a["devices"].append(ifname)
                    if dev["adjacent"] in d:
                        a["adjacent"][ifname] = bool(d[dev["adjacent"]][0])
                    if dev["checks"] in d:
                        a.setdefault("checks", {})[ifname] = struct.unpack(
                            "Q", d[dev["checks"]])[0]
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


# The enum that names each counter set of the stats nest (an indexed-array
# of the spec: attribute type = enum value + 1); the histogram's buckets are
# named by their smallest bulk.
COUNTER_ENUMS = {"decline": "decline-reason", "fallback": "fallback-reason",
                 "drop": "drop-reason", "taken_encap": "encap",
                 "taken_xmit": "xmit"}
SCALARS = {"u32": "I", "u64": "Q"}


def stats(nl):
    by_num = {}
    groups = []
    for name, (num, a) in attrs("stats").items():
        if a["type"] == "indexed-array":
            names = ([str(1 << i) for i in range(const("hist-buckets"))]
                     if name == "hist" else enum(COUNTER_ENUMS[name]))
            by_num[num] = (name, names)
            groups.append(name)
        elif a["type"] in SCALARS:
            by_num[num] = (name, SCALARS[a["type"]])
    cpus = []
    for msg in nl.dump(commands()["get_stats"]):
        for atype, val in msg:
            if atype != attr_type("main", "stats"):
                continue
            c = {}
            for st, v in parse_attrs(val):
                if st not in by_num:
                    continue
                name, kind = by_num[st]
                if isinstance(kind, list):
                    c[name] = counters(v, kind)
                else:
                    c[name] = struct.unpack(kind, v)[0]
            cpus.append(c)
    sums = [n for n, (num, a) in attrs("stats").items()
            if a["type"] == "u64"]
    total = {k: 0 for k in sums}
    total.update({k: {} for k in groups})
    for c in cpus:
        for k in sums:
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
        nl.do(commands()[cmd], ft_attrs(*args))
    elif cmd == "list":
        print(json.dumps(list_attach(nl)))
    elif cmd == "stats":
        print(json.dumps(stats(nl)))
    elif cmd == "reset":
        nl.do(commands()["reset_stats"])
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
