#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Generic netlink fuzzer for the nf_flow_bulk family (nfb_fuzz_genl.sh).

  nfb_fuzz_genl.py cases TABLE FLOWTABLE   fixed malformed requests, each with
                                           the answer it must get
  nfb_fuzz_genl.py random                  seeded random and mutated requests
  nfb_fuzz_genl.py unpriv                  as a caller without CAP_NET_ADMIN
                                           over the namespace: every request
                                           refused, never carried out
  nfb_fuzz_genl.py bigdump TABLE FLOWTABLE a fresh socket dumps an attachment
                                           too big for one dump message: it
                                           is listed or the dump fails, never
                                           left out silently

Environment: NFB_FUZZ_SEED (default 1), NFB_FUZZ_COUNT (messages, default
20000), NFB_FUZZ_TIME (seconds, default 30), NFB_FUZZ_AVOID (a table /
flowtable name random requests must never use: the attachment that must
survive them), NFB_FUZZ_VERBOSE=1 prints every request.

Prints PASS:/FAIL:/INFO: lines; exit status 1 on any failure. A failing
random request prints its index and bytes; the same seed and a count of
index + 1 replays the run up to it.
"""
import errno
import os
import random
import select
import socket
import struct
import sys
import time

sys.dont_write_bytecode = True
# The test library (tools/testing/lib), or the copy beside this file that
# selftests/nfb_fuzz_genl.sh makes for an unprivileged run.
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "tools", "testing", "lib")]
import nfb_genl  # noqa: E402
from nfb_test import check, out  # noqa: E402
import nfb_test  # noqa: E402

NLM_F_REQUEST, NLM_F_MULTI, NLM_F_ACK = 1, 2, 4
NLM_F_ROOT, NLM_F_MATCH, NLM_F_DUMP = 0x100, 0x200, 0x300
NLMSG_ERROR, NLMSG_DONE = 2, 3
NLA_F_NESTED, NLA_F_NET_BYTEORDER = 0x8000, 0x4000
NETLINK_CAP_ACK = 10

# The family's numbers, from the netlink spec (as the test client reads it).
CMD_NAMES = {v: k for k, v in nfb_genl.commands().items()}
CMD_ATTACH, CMD_DETACH, CMD_GET_ATTACH, CMD_GET_STATS, CMD_RESET = (
    nfb_genl.commands()[n] for n in ("attach", "detach", "get_attach",
                                     "get_stats", "reset_stats"))
(A_FAMILY, A_TABLE, A_FLOWTABLE, A_PRIORITY, A_DEVICES, A_DEVICE, A_STATS,
 A_PAD, A_SCANS) = (nfb_genl.attr_type("main", n) for n in (
     "family", "table", "flowtable", "priority", "devices", "device", "stats",
     "pad", "scans"))  # scans: reply only
DO_CMDS = (CMD_ATTACH, CMD_DETACH, CMD_RESET)
DUMP_CMDS = (CMD_GET_ATTACH, CMD_GET_STATS)

# Errors a request may get back: anything else is reported.
CLEAN_ERRNOS = {errno.EINVAL, errno.ERANGE, errno.EOPNOTSUPP, errno.ENOENT,
                errno.EEXIST, errno.EPERM, errno.EMSGSIZE}

def ename(err):
    if err == 0:
        return "ACK"
    return errno.errorcode.get(err, str(err))


def nla(atype, payload, pad=True):
    raw = struct.pack("HH", 4 + len(payload), atype) + payload
    if pad:
        raw += b"\0" * ((4 - len(payload) % 4) % 4)
    return raw


def u32(atype, v):
    return nla(atype, struct.pack("I", v & 0xffffffff))


def sz(atype, s):
    return nla(atype, s + b"\0")


def genl_msg(ftype, cmd, attrs=b"", flags=NLM_F_REQUEST | NLM_F_ACK, seq=0,
             version=1, reserved=0, nlmsg_len=None):
    payload = struct.pack("BBH", cmd & 0xff, version & 0xff,
                          reserved & 0xffff) + attrs
    length = 16 + len(payload) if nlmsg_len is None else nlmsg_len
    return struct.pack("IHHII", length & 0xffffffff, ftype & 0xffff,
                       flags & 0xffff, seq & 0xffffffff, 0) + payload


class Answer:
    """What came back for one request: acks/errors and dump messages."""

    def __init__(self):
        self.err = None         # errno of NLMSG_ERROR (0 = ACK)
        self.extack = ""
        self.done = None        # errno in NLMSG_DONE (0 = success)
        self.msgs = []          # dump / reply messages (attribute lists)
        self.silent = False
        self.send_err = None    # sendmsg() refused the datagram

    def ended(self):
        return self.err is not None or self.done is not None

    def failed(self):
        """Error number of a failure, 0 for success."""
        if self.err:
            return self.err
        if self.done:
            return self.done
        return 0

    def __str__(self):
        if self.silent:
            return "no answer"
        parts = []
        if self.msgs:
            parts.append("%d messages" % len(self.msgs))
        if self.err is not None:
            parts.append(ename(self.err))
        if self.done is not None:
            parts.append("DONE" if self.done == 0 else "DONE " + ename(self.done))
        if self.extack:
            parts.append("'%s'" % self.extack)
        return ", ".join(parts) or "nothing"


class Conn:
    def __init__(self, fam=None, timeout=5.0):
        self.sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW,
                                  nfb_genl.NETLINK_GENERIC)
        self.sock.setsockopt(nfb_genl.SOL_NETLINK, nfb_genl.NETLINK_EXT_ACK, 1)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        self.sock.setsockopt(nfb_genl.SOL_NETLINK, NETLINK_CAP_ACK, 1)
        self.sock.bind((0, 0))
        self.buf = bytearray(1 << 17)
        self.view = memoryview(self.buf)
        self.seq = random.Random().randrange(1 << 20) << 8
        self.timeout = timeout
        self.fam = fam
        self.stray = 0
        if fam is None:
            self.fam = family_id()

    def next_seq(self):
        self.seq = (self.seq + 1) & 0xffffffff
        return self.seq

    def parse(self, data, answers):
        """Sort the messages of one datagram into answers[seq]."""
        while len(data) >= 16:
            mlen, mtype, mflags, mseq, _ = struct.unpack_from("IHHII", data)
            if mlen < 16 or mlen > len(data):
                raise RuntimeError("malformed netlink message from the "
                                   "kernel: len %d of %d" % (mlen, len(data)))
            body = data[16:mlen]
            data = data[(mlen + 3) & ~3:]
            ans = answers.get(mseq)
            if ans is None:
                self.stray += 1
                continue
            if mtype == NLMSG_ERROR:
                ans.err = -struct.unpack_from("i", body)[0]
                olen = 16
                if not mflags & 0x100:  # NLM_F_CAPPED
                    olen = struct.unpack_from("I", body, 4)[0]
                for atype, val in nfb_genl.parse_attrs(
                        body[4 + ((olen + 3) & ~3):]):
                    if atype == nfb_genl.NLMSGERR_ATTR_MSG:
                        ans.extack = val.rstrip(b"\0").decode(errors="replace")
            elif mtype == NLMSG_DONE:
                ans.done = -struct.unpack_from("i", body)[0] if body else 0
            else:
                ans.msgs.append((mtype, nfb_genl.parse_attrs(body[4:])))

    def wait(self, answers, want, timeout=None):
        """Read until every seq in want has ended or timeout passes."""
        deadline = time.monotonic() + (timeout or self.timeout)
        while any(not answers[s].ended() for s in want):
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            r, _, _ = select.select([self.sock], [], [], left)
            if not r:
                return False
            n = self.sock.recv_into(self.buf)
            self.parse(bytes(self.view[:n]), answers)
        return True

    def ping(self):
        """A request that is always answered: command 0 (EOPNOTSUPP)."""
        seq = self.next_seq()
        return seq, genl_msg(self.fam, 0, seq=seq)

    def request(self, raw_fn, expect_answer=True):
        """Send one request (raw_fn(seq) gives its bytes).

        expect_answer False: the request may legitimately go unanswered (a
        success without ACK, a message the netlink core ignores); a ping
        follows it and whatever arrives before the ping's answer is its
        answer. Returns the Answer; ans.silent when none came.
        """
        seq = self.next_seq()
        raw = raw_fn(seq)
        answers = {seq: Answer()}
        if not raw:
            # an empty datagram: sendmsg() refuses it (ENODATA)
            try:
                self.sock.send(raw)
            except OSError as e:
                answers[seq].send_err = e.errno
                return answers[seq]
        if expect_answer:
            self.sock.send(raw)
            if not self.wait(answers, [seq]):
                answers[seq].silent = not (answers[seq].msgs or
                                           answers[seq].ended())
            return answers[seq]
        pseq, ping = self.ping()
        answers[pseq] = Answer()
        self.sock.send(raw)
        self.sock.send(ping)
        if not self.wait(answers, [pseq]):
            raise RuntimeError("the ping after a request got no answer")
        ans = answers[seq]
        if ans.msgs and not ans.ended():
            # a dump in progress: its next part comes with the next read
            self.wait(answers, [seq])
        ans.silent = not (ans.msgs or ans.ended())
        return ans

    def batch(self, raws):
        """Several well-framed do requests with ACK in one datagram: each
        must get its own answer."""
        seqs, data = [], b""
        answers = {}
        for fn in raws:
            seq = self.next_seq()
            seqs.append(seq)
            answers[seq] = Answer()
            raw = fn(seq)
            # the next message starts at NLMSG_ALIGN(nlmsg_len)
            data += raw + b"\0" * ((4 - len(raw) % 4) % 4)
        self.sock.send(data)
        self.wait(answers, seqs)
        for s in seqs:
            a = answers[s]
            a.silent = not (a.msgs or a.ended())
        return [answers[s] for s in seqs]

    def call(self, cmd, attrs=b"", flags=None, **kw):
        if flags is None:
            flags = NLM_F_REQUEST | (NLM_F_DUMP if cmd in DUMP_CMDS
                                     else NLM_F_ACK)
        return self.request(lambda s: genl_msg(self.fam, cmd, attrs, flags,
                                               s, **kw))


def family_id():
    nl = nfb_genl.Genl()
    return nl.family()


def ft_attrs(table, name, family=1):
    return u32(A_FAMILY, family) + sz(A_TABLE, table) + sz(A_FLOWTABLE, name)


def list_attach(conn):
    ans = conn.call(CMD_GET_ATTACH)
    if ans.failed() or ans.silent:
        raise RuntimeError("listing attachments failed: %s" % ans)
    res = []
    for _, attrs in ans.msgs:
        d = dict(attrs)
        res.append((struct.unpack("I", d[A_FAMILY])[0],
                    d[A_TABLE].rstrip(b"\0").decode(errors="replace"),
                    d[A_FLOWTABLE].rstrip(b"\0").decode(errors="replace")))
    return sorted(res)


# --------------------------------------------------------------------------
# Fixed cases


def expect(conn, what, want, cmd, attrs=b"", **kw):
    """One request whose answer must be the error want (0: success)."""
    ans = conn.call(cmd, attrs, **kw)
    got = "silent" if ans.silent else ans.failed()
    ok = got == want and (ans.ended() or ans.silent)
    check("%s: %s" % (what, ename(want) if want != "silent" else want), ok,
          "got %s" % ans)
    return ans


def cases(table, name):
    conn = Conn()
    fam = conn.fam
    before = list_attach(conn)
    t, n = table.encode(), name.encode()
    nx = b"fuzz-no-such"
    out("INFO", "family id %d, attachments %s" % (fam, before))

    # Strictness: reserved byte, unknown attributes, on every command.
    for cmd in DO_CMDS + DUMP_CMDS:
        body = ft_attrs(nx, nx) if cmd in (CMD_ATTACH, CMD_DETACH) else b""
        expect(conn, "strict: %s with genlmsghdr.reserved = 1"
               % CMD_NAMES[cmd], errno.EINVAL, cmd, body, reserved=1)
        for atype in (0, A_SCANS + 1, 42, 0x3fff):
            expect(conn, "strict: %s with unknown attribute %d"
                   % (CMD_NAMES[cmd], atype), errno.EINVAL, cmd,
                   body + u32(atype, 1))

    # Commands and flags.
    for cmd in (0, 6, 7, 100, 255):
        expect(conn, "unknown command %d" % cmd, errno.EOPNOTSUPP, cmd)
    for cmd in DO_CMDS:
        expect(conn, "%s with NLM_F_DUMP" % CMD_NAMES[cmd], errno.EOPNOTSUPP,
               cmd, ft_attrs(nx, nx), flags=NLM_F_REQUEST | NLM_F_DUMP)
    for cmd in DUMP_CMDS:
        expect(conn, "%s without NLM_F_DUMP" % CMD_NAMES[cmd],
               errno.EOPNOTSUPP, cmd, flags=NLM_F_REQUEST | NLM_F_ACK)
    for ver in (0, 2, 255):
        ans = conn.call(CMD_GET_STATS, version=ver)
        check("get_stats with genl version %d answered cleanly" % ver,
              ans.ended(), str(ans))
    for fl in (NLM_F_ROOT, NLM_F_MATCH, 0x400, 0x800, 0x1000):
        ans = conn.call(CMD_DETACH, ft_attrs(nx, nx),
                        flags=NLM_F_REQUEST | NLM_F_ACK | fl)
        out("INFO", "detach with nlmsg_flags 0x%x: %s" % (fl, ans))
        check("detach with flag 0x%x refused" % fl,
              ans.failed() in (errno.EINVAL, errno.ENOENT), str(ans))

    # Attribute contents.
    for v in (0, 3, 5, 7, 12, 13, 0x10001, 0xffffffff):
        expect(conn, "attach family %d" % v, errno.EINVAL, CMD_ATTACH,
               ft_attrs(t, n, v))
    for ln in (0, 1, 2, 3, 5, 8):
        expect(conn, "attach FAMILY of %d bytes" % ln, errno.EINVAL,
               CMD_ATTACH, nla(A_FAMILY, b"\1" * ln) + sz(A_TABLE, t) +
               sz(A_FLOWTABLE, n))
    expect(conn, "attach FAMILY with NLA_F_NESTED", errno.EINVAL, CMD_ATTACH,
           u32(A_FAMILY | NLA_F_NESTED, 1) + sz(A_TABLE, t) +
           sz(A_FLOWTABLE, n))
    expect(conn, "attach without FLOWTABLE", errno.EINVAL, CMD_ATTACH,
           u32(A_FAMILY, 1) + sz(A_TABLE, t))
    expect(conn, "detach with nothing", errno.EINVAL, CMD_DETACH)
    for atype in (A_PRIORITY, A_PAD, A_SCANS):
        expect(conn, "attach with reply-only attribute %d" % atype,
               errno.EINVAL, CMD_ATTACH, ft_attrs(nx, nx) + u32(atype, 0))
    for atype in (A_DEVICES, A_DEVICE, A_STATS):
        expect(conn, "attach with reply-only nest %d" % atype, errno.EINVAL,
               CMD_ATTACH, ft_attrs(nx, nx) +
               nla(atype | NLA_F_NESTED, u32(1, 1) + sz(2, b"lo")))
    expect(conn, "attach with empty TABLE", errno.EINVAL, CMD_ATTACH,
           u32(A_FAMILY, 1) + sz(A_TABLE, b"") + sz(A_FLOWTABLE, n))
    ans = conn.call(CMD_ATTACH, u32(A_FAMILY, 1) + nla(A_TABLE, b"") +
                    sz(A_FLOWTABLE, n))
    check("attach with zero-length TABLE: EINVAL or ERANGE",
          ans.failed() in (errno.EINVAL, errno.ERANGE), str(ans))
    expect(conn, "attach with empty FLOWTABLE", errno.EINVAL, CMD_ATTACH,
           u32(A_FAMILY, 1) + sz(A_TABLE, t) + sz(A_FLOWTABLE, b""))
    expect(conn, "attach, TABLE of 255 characters", errno.ENOENT, CMD_ATTACH,
           ft_attrs(b"x" * 255, n))
    for ln in (256, 257, 1000, 4000):
        expect(conn, "attach, TABLE of %d characters" % ln, errno.ERANGE,
               CMD_ATTACH, ft_attrs(b"x" * ln, n))
        expect(conn, "attach, FLOWTABLE of %d characters, no NUL" % ln,
               errno.ERANGE, CMD_ATTACH, u32(A_FAMILY, 1) + sz(A_TABLE, t) +
               nla(A_FLOWTABLE, b"y" * ln))
    expect(conn, "attach, unterminated names of no flowtable", errno.ENOENT,
           CMD_ATTACH, u32(A_FAMILY, 1) + nla(A_TABLE, nx) +
           nla(A_FLOWTABLE, nx))
    expect(conn, "attach, unterminated names of the attached flowtable",
           errno.EEXIST, CMD_ATTACH, u32(A_FAMILY, 1) + nla(A_TABLE, t) +
           nla(A_FLOWTABLE, n))
    expect(conn, "attach, non-UTF-8 names", errno.ENOENT, CMD_ATTACH,
           ft_attrs(b"\xff\xfe\x80", b"\x01\x02"))

    # Framing.
    good = ft_attrs(nx, nx)
    expect(conn, "attribute longer than the message", errno.EINVAL,
           CMD_ATTACH, good + struct.pack("HH", 64, A_TABLE) + b"abcd")
    expect(conn, "attribute with nla_len 2", errno.EINVAL, CMD_ATTACH,
           good + struct.pack("HH", 2, A_TABLE))
    for k in (1, 2, 3):
        expect(conn, "%d trailing bytes after the attributes" % k,
               errno.EINVAL, CMD_ATTACH, good + b"\xaa" * k)
    for ln in (16, 17, 19):
        # nlmsg_len says 20 but only ln bytes were sent: the core ignores
        # what it cannot frame.
        ans = conn.request(lambda s, ln=ln: genl_msg(
            fam, CMD_ATTACH, b"", seq=s)[:ln], expect_answer=False)
        check("datagram of %d bytes shorter than its nlmsg_len: no answer "
              "(core ignores it), no hang" % ln, ans.silent,
              str(ans))
        ans = conn.call(CMD_ATTACH, b"", nlmsg_len=ln)
        check("nlmsg_len %d, shorter than the genl header: EINVAL" % ln,
              ans.err == errno.EINVAL, str(ans))
    ans = conn.request(lambda s: genl_msg(fam, CMD_ATTACH, good, seq=s,
                                          nlmsg_len=200), expect_answer=False)
    check("nlmsg_len beyond the datagram: ignored, socket still answers",
          ans.silent, str(ans))
    ans = conn.request(lambda s: genl_msg(fam, CMD_RESET, seq=s,
                                          flags=NLM_F_REQUEST),
                       expect_answer=False)
    check("reset_stats without NLM_F_ACK: no answer (success)", ans.silent,
          str(ans))
    ans = conn.request(lambda s: genl_msg(fam, CMD_ATTACH, seq=s,
                                          flags=NLM_F_REQUEST),
                       expect_answer=False)
    check("invalid attach without NLM_F_ACK: still an error",
          ans.failed() == errno.EINVAL, str(ans))
    answers = conn.batch([lambda s, c=c: genl_msg(fam, c, ft_attrs(nx, nx),
                                                  seq=s)
                          for c in (CMD_ATTACH, CMD_DETACH, 0, CMD_ATTACH)])
    check("four requests in one datagram: four answers",
          all(a.ended() for a in answers),
          ", ".join(str(a) for a in answers))
    # Deep and bad nesting inside a nest the policy rejects.
    deep = u32(1, 1)
    for _ in range(40):
        deep = nla(A_DEVICE | NLA_F_NESTED, deep)
    expect(conn, "40-deep nest", errno.EINVAL, CMD_ATTACH, good +
           nla(A_DEVICES | NLA_F_NESTED, deep))
    expect(conn, "nest with a bad inner length", errno.EINVAL, CMD_ATTACH,
           good + nla(A_DEVICES | NLA_F_NESTED, struct.pack("HH", 40, 1)))

    after = list_attach(conn)
    check("attachments unchanged by the fixed cases", after == before,
          "%s -> %s" % (before, after))
    if conn.stray:
        out("INFO", "%d answers with an old sequence number" % conn.stray)


# --------------------------------------------------------------------------
# Random requests


class Gen:
    """Seeded generator of requests; independent of the kernel's answers,
    so a seed and a count reproduce a run."""

    def __init__(self, seed, fam, avoid):
        self.r = random.Random(seed)
        self.fam = fam
        self.avoid = avoid

    def string(self):
        r = self.r
        k = r.randrange(12)
        if k == 0:
            return b""
        if k == 1:
            return b"\0"
        if k == 2:
            return b"x" * r.choice((254, 255, 256, 257, 300, 1024))
        if k == 3:
            return bytes(r.randrange(256) for _ in range(r.randrange(1, 40)))
        if k == 4:
            return b"fuzz\0" + bytes(r.randrange(256) for _ in range(8))
        if k == 5:
            return b"fuzz-" + str(r.randrange(1000)).encode()  # no NUL
        if k == 6:
            return self.avoid + b"x"
        name = b"fz-" + str(r.randrange(100)).encode()
        return name + b"\0"

    def value(self):
        r = self.r
        k = r.randrange(10)
        if k < 5:
            v = r.choice((0, 1, 2, 3, 5, 7, 10, 12, 13, 0xff, 0x100,
                          0x7fffffff, 0x80000000, 0xffffffff))
            return struct.pack("I", v)
        if k < 8:
            return bytes(r.randrange(256) for _ in range(r.randrange(0, 10)))
        return struct.pack("Q", r.getrandbits(64))

    def attr_type(self):
        r = self.r
        k = r.randrange(20)
        if k < 12:
            t = r.choice((A_FAMILY, A_TABLE, A_FLOWTABLE))
        elif k < 16:
            t = r.randrange(0, 16)
        else:
            t = r.randrange(0, 0x4000)
        if r.randrange(16) == 0:
            t |= NLA_F_NESTED
        if r.randrange(32) == 0:
            t |= NLA_F_NET_BYTEORDER
        return t

    def attrs(self, depth=0):
        r = self.r
        out = b""
        for _ in range(r.choice((0, 1, 2, 3, 3, 3, 4, 5))):
            t = self.attr_type()
            base = t & 0x3fff
            if base in (A_TABLE, A_FLOWTABLE) and r.randrange(4):
                payload = self.string()
            elif base == A_FAMILY and r.randrange(4):
                payload = self.value()[:4].ljust(4, b"\0")
            elif depth < 3 and r.randrange(6) == 0:
                payload = self.attrs(depth + 1)
            else:
                payload = self.value()
            out += nla(t, payload, pad=r.randrange(12) != 0)
        return out

    def safe(self, attrs):
        """Never name the attachment that must survive (NUL ends a name)."""
        for atype, val in nfb_genl.parse_attrs(attrs):
            if atype in (A_TABLE, A_FLOWTABLE) and \
               val.split(b"\0")[0] == self.avoid:
                return False
        return True

    def message(self):
        """Returns (fn(seq) -> bytes, well_framed_with_ack, is_dump,
        processed): processed is False for what the netlink core answers
        without passing it to the family (no NLM_F_REQUEST, a control
        message type)."""
        r = self.r
        cmd = r.choice((1, 1, 1, 2, 2, 3, 4, 5, 0, 6, r.randrange(256)))
        k = r.randrange(20)
        if k < 13:
            flags = NLM_F_REQUEST | NLM_F_ACK
        elif k < 17:
            flags = NLM_F_REQUEST | NLM_F_DUMP | r.choice((0, NLM_F_ACK))
        elif k < 19:
            flags = NLM_F_REQUEST | r.getrandbits(16)
        else:
            flags = r.getrandbits(16)
        version = 1 if r.randrange(8) else r.randrange(256)
        reserved = 0 if r.randrange(8) else r.getrandbits(16)
        ftype = self.fam if r.randrange(50) else r.choice((0, 1, 2, 3, 15))
        attrs = self.attrs()
        while not self.safe(attrs):
            attrs = self.attrs()
        payload = struct.pack("BBH", cmd, version, reserved) + attrs
        nlmsg_len = None
        cut = None
        k = r.randrange(40)
        if k == 0:
            nlmsg_len = r.randrange(0, 16 + len(payload) + 64)
        elif k == 1:
            cut = r.randrange(0, 16 + len(payload))
        elif k < 5 and payload:
            # flip bytes in the genl header and attributes
            b = bytearray(payload)
            for _ in range(r.randrange(1, 4)):
                b[r.randrange(len(b))] = r.randrange(256)
            payload = bytes(b)
            if not self.safe(payload[4:]):
                payload = payload[:4]
        length = 16 + len(payload) if nlmsg_len is None else nlmsg_len

        def fn(seq):
            raw = struct.pack("IHHII", length, ftype, flags, seq, 0) + payload
            return raw if cut is None else raw[:cut]

        framed = (nlmsg_len is None and cut is None and ftype == self.fam and
                  flags & (NLM_F_REQUEST | NLM_F_ACK) ==
                  (NLM_F_REQUEST | NLM_F_ACK))
        is_dump = (flags & NLM_F_DUMP) == NLM_F_DUMP
        processed = bool(flags & NLM_F_REQUEST) and ftype >= 16
        return fn, framed, is_dump, processed


def check_answer(ans, unpriv, processed, counts):
    """A clean answer: an ACK or a known error, or a dump ending in DONE."""
    if ans.send_err is not None:
        key = "send " + ename(ans.send_err)
        counts[key] = counts.get(key, 0) + 1
        return None
    if ans.silent:
        counts["silent"] = counts.get("silent", 0) + 1
        return None
    if not ans.ended():
        return "answer did not end (no NLMSG_ERROR or NLMSG_DONE)"
    err = ans.failed()
    key = "dump" if ans.done is not None and not err else ename(err)
    counts[key] = counts.get(key, 0) + 1
    if err and err not in CLEAN_ERRNOS:
        return "unexpected error %s" % ename(err)
    if unpriv and processed and not err and ans.msgs:
        return "an unprivileged dump returned data"
    if unpriv and processed and not err:
        return "an unprivileged request succeeded"
    return None


def fuzz(conn, gen, count, seconds, unpriv, label):
    """Up to count requests or seconds; the first five bad answers are
    reported. Returns the index of the first bad request or None."""
    verbose = os.environ.get("NFB_FUZZ_VERBOSE") == "1"
    counts = {}
    deadline = time.monotonic() + seconds
    i = 0
    pending = []    # well-framed do requests batched into one datagram
    bad = []

    def judge(idx, fn, ans, framed, processed):
        if framed and ans.silent:
            why = "no answer to a request with NLM_F_ACK"
        else:
            why = check_answer(ans, unpriv, processed, counts)
            if why:
                why += ": " + str(ans)
        if why and len(bad) < 5:
            bad.append((idx, fn, why))

    def flush():
        if not pending:
            return
        answers = conn.batch([p[1] for p in pending])
        for (idx, fn, processed), ans in zip(pending, answers):
            judge(idx, fn, ans, True, processed)
        pending.clear()

    while i < count and time.monotonic() < deadline and len(bad) < 5:
        fn, framed, is_dump, processed = gen.message()
        if verbose:
            out("INFO", "%s %d: %s" % (label, i, fn(0).hex()))
        if framed and not is_dump:
            pending.append((i, fn, processed))
            if len(pending) >= 8:
                flush()
        else:
            flush()
            judge(i, fn, conn.request(fn, expect_answer=framed), framed,
                  processed)
        i += 1
    flush()
    for idx, fn, why in bad:
        check("%s: request %d answered cleanly" % (label, idx), False,
              "%s; request %s" % (why, fn(0).hex()))
    summary = ", ".join("%s %d" % kv for kv in sorted(counts.items()))
    check("%s: %d requests in %.1f s, %d answered wrongly (answers: %s)" %
          (label, i, seconds - max(0, deadline - time.monotonic()),
           len(bad), summary), not bad)
    return bad[0][0] if bad else None


def seed_env():
    return (int(os.environ.get("NFB_FUZZ_SEED", "1")),
            int(os.environ.get("NFB_FUZZ_COUNT", "20000")),
            float(os.environ.get("NFB_FUZZ_TIME", "30")))


def random_mode(unpriv=False):
    seed, count, seconds = seed_env()
    avoid = os.environ.get("NFB_FUZZ_AVOID", "fz").encode()
    conn = Conn()
    label = "unprivileged random" if unpriv else "random"
    before = None if unpriv else list_attach(conn)
    bad = fuzz(conn, Gen(seed, conn.fam, avoid), count, seconds, unpriv, label)
    if bad is not None:
        out("INFO", "reproduce: NFB_FUZZ_SEED=%d NFB_FUZZ_COUNT=%d "
            "(request %d is the last)" % (seed, bad + 1, bad))
    if before is not None:
        after = list_attach(conn)
        check("%s: attachments unchanged" % label, after == before,
              "%s -> %s" % (before, after))


def unpriv_mode():
    conn = Conn()
    nx = b"fuzz-no-such"
    for cmd in DO_CMDS + DUMP_CMDS:
        body = ft_attrs(nx, nx) if cmd in (CMD_ATTACH, CMD_DETACH) else b""
        expect(conn, "unprivileged %s" % CMD_NAMES[cmd], errno.EPERM, cmd,
               body)
    random_mode(unpriv=True)


def bigdump_mode(table, name):
    fam = family_id()
    # A socket that never received: the dump's first buffer gets the
    # default size (NLMSG_GOODSIZE), too small for this attachment.
    conn = Conn(fam)
    ans = conn.call(CMD_GET_ATTACH)
    listed = []
    for _, attrs in ans.msgs:
        d = dict(attrs)
        if A_TABLE in d:
            listed.append(d[A_TABLE].rstrip(b"\0").decode(errors="replace"))
    out("INFO", "dump of attachments: %s, tables %s" %
        (ans, [x[:12] + "..." for x in listed]))
    check("dump of an attachment bigger than one dump message: listed or "
          "an error, not left out",
          table in listed or bool(ans.failed()), str(ans))
    ans = conn.call(CMD_GET_STATS)
    check("stats dump still works", ans.done == 0 and len(ans.msgs) > 0,
          str(ans))


def main(argv):
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    mode = argv[0]
    if mode == "cases" and len(argv) == 3:
        cases(argv[1], argv[2])
    elif mode == "random":
        random_mode()
    elif mode == "unpriv":
        unpriv_mode()
    elif mode == "bigdump" and len(argv) == 3:
        bigdump_mode(argv[1], argv[2])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 1 if nfb_test.failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
