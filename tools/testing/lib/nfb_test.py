# SPDX-License-Identifier: GPL-2.0
"""What the Python tests share besides the genl client (nfb_genl.py):
kselftest result lines with a failure count, and entering a network
namespace. Standard library only: the tests run it under python3 -S."""

import ctypes
import os

CLONE_NEWNET = 0x40000000
libc = ctypes.CDLL(None, use_errno=True)

# FAIL lines printed so far by check(): a test exits 1 when there are any.
failures = 0


def out(kind, text):
    print("%s: %s" % (kind, text), flush=True)


def check(what, ok, detail=""):
    global failures
    if ok:
        out("PASS", what)
    else:
        failures += 1
        out("FAIL", what + (": " + detail if detail else ""))


def setns(ns):
    """Enter network namespace ns: an open file descriptor, a path, or a
    name under /run/netns (ip netns add)."""
    if isinstance(ns, int):
        fd, path = ns, "fd %d" % ns
    else:
        path = ns if "/" in ns else "/run/netns/" + ns
        fd = os.open(path, os.O_RDONLY)
    try:
        if libc.setns(fd, CLONE_NEWNET) != 0:
            err = ctypes.get_errno()
            raise OSError(err, "setns %s: %s" % (path, os.strerror(err)))
    finally:
        if fd is not ns:
            os.close(fd)
