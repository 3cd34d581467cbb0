#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Lifetimes across packets that wait in the module's queues. The test_hold
# parameter keeps taken packets queued on purpose; then, each time:
#   1. the INPUT device is deleted: the queued packets point only at what
#      the module holds (skb->dev is the held output device), so they are
#      still delivered once released; the output device has two transmit
#      queues, so the queue choice hashes the packet (flow dissector);
#   2. the OUTPUT device is deleted: its unregistration waits for the
#      queued packets' references, which are given back when they are
#      released (dropped as dev_down), and the deletion then completes;
#   3. the CPU that queued them goes offline: releasing drains its queue
#      elsewhere, and they are delivered;
#   4. the router's namespace is deleted: its exit waits for them;
#   5. the module is unloaded with test_hold still set (a test killed while
#      holding): the unload releases them instead of waiting forever, and
#      they are delivered.
# The runner fails the test on any kernel trouble (BUG, WARNING, refcount,
# "waiting for ... to become free"). Unload and reload: nfb_reload.sh.
# Long under TCG on a busy host (up to ~280 s seen):
# nfb-timeout: 600
set -eu
# shellcheck source=selftests/lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=selftests/lib_fastpath.sh
source "$(dirname "$0")/lib_fastpath.sh"

nfb_require_tool ip nft python3 nstat taskset

hold=/sys/module/nf_flow_bulk/parameters/test_hold
cpu1=/sys/devices/system/cpu/cpu1/online

# shellcheck disable=SC2317 # called through the EXIT trap
cleanup() {
	[ -w "$hold" ] && echo 0 >"$hold"
	[ -w "$cpu1" ] && echo 1 >"$cpu1"
	cleanup_all_ns
	if nfb_module_loaded; then nfb_unload_module; fi
}
trap cleanup EXIT

if [ "$(nproc)" -lt 2 ] || [ ! -w "$cpu1" ]; then
	nfb_cannot_run "needs CPU 1, hot-pluggable"
fi

# topology: C - R - S, r1 with two transmit queues.
topology() {
	setup_ns C R S
	ip link add c0 netns "$C" type veth peer name r0 netns "$R"
	ip link add s0 netns "$S" numtxqueues 2 numrxqueues 2 type veth \
		peer name r1 netns "$R" numtxqueues 2 numrxqueues 2
	fp_addresses
	fp_ruleset 0 0
	fp_genl "$R" attach inet fp ft
	fp_echo_start 7000
	# Offload the client's flow (port 40000).
	fp_udpc 10.0.2.1 7000 "send 5" >/dev/null
	fp_udpc 10.0.2.1 7000 "send 5" >/dev/null
}

# send_on CPU COUNT: COUNT datagrams of the offloaded flow, from CPU.
send_on() {
	ip netns exec "$C" taskset -c "$1" python3 - "$2" <<-'EOF'
	import socket, sys
	s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
	s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
	s.bind(("0.0.0.0", 40000))
	for i in range(int(sys.argv[1])):
	    s.sendto(b"h" * 100, ("10.0.2.1", 7000))
	EOF
}

server_rx() { fp_nstat "$S" UdpInDatagrams; }
taken() { fp_stat "$R" 't["packets"]'; }
drops() { fp_stat "$R" 't["drop"]["dev_down"]'; }
gone() { ! ip -n "$1" link show "$2" >/dev/null 2>&1; }

nfb_load_module

# 1. Input device deleted under queued packets.
topology
rx0=$(server_rx)
t0=$(taken)
echo 1 >"$hold"
send_on 0 20
check "input dev: 20 packets taken and held" busywait 10000 eval "[ \"\$(taken)\" -ge $((t0 + 20)) ]"
ip -n "$C" link del c0
check "input dev: deleted while they wait" gone "$R" r0
echo 0 >"$hold"
check "input dev: the held packets are delivered" \
	busywait 10000 eval "[ \"\$(server_rx)\" -ge $((rx0 + 20)) ]"
cleanup_all_ns

# 2. Output device deleted under queued packets.
topology
t0=$(taken)
d0=$(drops)
echo 1 >"$hold"
send_on 0 20
check "output dev: 20 packets taken and held" busywait 10000 eval "[ \"\$(taken)\" -ge $((t0 + 20)) ]"
ip -n "$S" link del s0 &
del_pid=$!
check "output dev: unlisted while they wait" busywait 5000 gone "$R" r1
echo 0 >"$hold"
check "output dev: deletion completes once they are released" \
	busywait 5000 eval "! kill -0 $del_pid 2>/dev/null"
wait "$del_pid" || true
check "output dev: they were dropped as dev_down ($(($(drops) - d0)))" \
	test "$(($(drops) - d0))" -eq 20
cleanup_all_ns

# 3. The CPU that queued them goes offline.
topology
rx0=$(server_rx)
t0=$(taken)
echo 1 >"$hold"
send_on 1 20
check "cpu offline: 20 packets taken and held on CPU 1" \
	busywait 10000 eval "[ \"\$(taken)\" -ge $((t0 + 20)) ]"
echo 0 >"$cpu1"
echo 0 >"$hold"
check "cpu offline: the held packets are delivered" \
	busywait 10000 eval "[ \"\$(server_rx)\" -ge $((rx0 + 20)) ]"
echo 1 >"$cpu1"
check "cpu offline: CPU 1 back" test "$(cat "$cpu1")" = 1
cleanup_all_ns

# 4. The router's namespace deleted under queued packets.
topology
t0=$(taken)
echo 1 >"$hold"
send_on 0 20
check "netns: 20 packets taken and held" busywait 10000 eval "[ \"\$(taken)\" -ge $((t0 + 20)) ]"
ip netns del "$R"
NS_LIST=("$C" "$S")	# R is gone: cleanup must not delete it again
echo 0 >"$hold"
# The namespace's exit waits for its queued packets, then its devices go:
# the server's peer device disappears when r1 is freed.
check "netns: deleted, its devices freed" busywait 10000 gone "$S" s0
cleanup_all_ns

# 5. Unloaded while holding (last: the module is gone afterwards). Should
# the unload hang, clearing test_hold by hand lets it finish.
topology
rx0=$(server_rx)
t0=$(taken)
echo 1 >"$hold"
send_on 0 20
check "unload: 20 packets taken and held" busywait 10000 eval "[ \"\$(taken)\" -ge $((t0 + 20)) ]"
nfb_unload_module &
unload_pid=$!
check "unload with test_hold set: completes" \
	busywait 30000 eval "! kill -0 $unload_pid 2>/dev/null"
if kill -0 "$unload_pid" 2>/dev/null; then
	echo 0 >"$hold"
	busywait 30000 eval "! kill -0 $unload_pid 2>/dev/null" ||
		echo "INFO: unload still hangs after test_hold was cleared by hand"
fi
check "unload: the held packets are delivered" \
	busywait 10000 eval "[ \"\$(server_rx)\" -ge $((rx0 + 20)) ]"
if ! kill -0 "$unload_pid" 2>/dev/null; then wait "$unload_pid" || true; fi
cleanup_all_ns

exit "$ret"
