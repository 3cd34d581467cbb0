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
#   3b. CPU 1 goes offline and online five times under traffic (queued
#      packets move with the NAPI instance of the CPU that goes), and the
#      module takes the traffic after (from nfb_faults.sh, which runs on
#      one CPU in make check);
#   4. the router's namespace is deleted: its exit waits for them;
#   4b. the OUTPUT device moves to another namespace that forwards through
#      it too, under packets of both (second review, finding 5): released
#      in one drain, the packets share every part of the bulk key but the
#      namespace; a bulk of both gave its in-flight count back to one, and
#      the other's exit then waited forever. Both namespaces' packets are
#      delivered, and deleting the second namespace completes (a namespace
#      deleted after it is freed: netns exits run one after the other);
#   4c. another namespace declines a packet on the CPU where R's packets
#      are held (second review, finding 4): the hook drains only its own
#      namespace's packets before a decline, so R's stay held; before,
#      every decline drained the whole queue, and a container's new
#      connections cut the host's bulks to one packet;
#   4d. the route, the flow and the flowtable go under the queued packets,
#      each of which holds a reference on the route (datapath.rst, the
#      route's lifetime). Once released, every one is delivered or counted
#      as a drop, and the route, whose last references are the packets',
#      is freed: the kernel's count of IPv4 routes falls below its count
#      with the route in place (a reference never given back keeps it
#      there; one given back twice shows as "dst_release underflow",
#      which the runner catches);
#   5. the module is unloaded with test_hold still set (a test killed while
#      holding): the unload releases them instead of waiting forever, and
#      they are delivered;
#   6. the module is unloaded with packets held while test_hold is written
#      again and again (second review, finding 7): a write that set it
#      after the unload had released them held them again, and the unload
#      waited forever; a write that cleared it after the unload had freed
#      the per-CPU queues scheduled a NAPI instance in freed memory, whose
#      poll function went with the module. Writes during the unload now
#      fail with EBUSY: it completes, the packets are delivered, and the
#      runner sees no oops.
# The runner fails the test on any kernel trouble (BUG, WARNING, refcount,
# "waiting for ... to become free"). Unload and reload: nfb_reload.sh.
# Long under TCG on a busy host (up to ~280 s seen):
# nfb-timeout: 600
# nfb-cpus: 2 (CPU 1 taken offline with packets queued)
set -eu
# shellcheck source=selftests/lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=tools/testing/lib/fastpath.sh
source "$NFB_LIB/fastpath.sh"

nfb_require_tool ip nft python3 nstat taskset ethtool conntrack

hold=/sys/module/nf_flow_bulk/parameters/test_hold
cpu1=/sys/devices/system/cpu/cpu1/online

# shellcheck disable=SC2317 # called through the EXIT trap
cleanup() {
	fp_flood_stop
	[ -w "$hold" ] && echo 0 >"$hold"
	[ -w "$cpu1" ] && echo 1 >"$cpu1"
	cleanup_all_ns
	fp_cleanup_tmp
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

# second_router: a second router namespace RB beside R, its client C2
# on b0 (10.0.4.0/24); cases 4b and 4c give it a flowtable.
second_router() {
	setup_ns C2 RB
	ip link add c0 netns "$C2" type veth peer name b0 netns "$RB"
	ip -n "$C2" addr add 10.0.4.1/24 dev c0
	ip -n "$C2" link set c0 up
	ip -n "$C2" route add default via 10.0.4.254
	ip -n "$RB" addr add 10.0.4.254/24 dev b0
	ip -n "$RB" link set b0 up
}

# hold_20 CPU CHECK: with test_hold set, 20 datagrams of the offloaded flow
# from CPU, and the check named CHECK that the module took and holds them;
# rx0 and t0 are the server's and the module's counts before.
hold_20() {
	rx0=$(server_rx)
	t0=$(taken)
	echo 1 >"$hold"
	send_on "$1" 20
	check "$2" busywait 10000 eval "[ \"\$(taken)\" -ge $((t0 + 20)) ]"
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
taken() { fp_taken "$R"; }
drops() { fp_proc "$R" drop_dev_down; }
gone() { ! ip -n "$1" link show "$2" >/dev/null 2>&1; }

nfb_load_module

# 1. Input device deleted under queued packets.
topology
hold_20 0 "input dev: 20 packets taken and held"
ip -n "$C" link del c0
check "input dev: deleted while they wait" gone "$R" r0
echo 0 >"$hold"
check "input dev: the held packets are delivered" \
	busywait 10000 eval "[ \"\$(server_rx)\" -ge $((rx0 + 20)) ]"
cleanup_all_ns

# 2. Output device deleted under queued packets.
topology
d0=$(drops)
hold_20 0 "output dev: 20 packets taken and held"
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
hold_20 1 "cpu offline: 20 packets taken and held on CPU 1"
echo 0 >"$cpu1"
echo 0 >"$hold"
check "cpu offline: the held packets are delivered" \
	busywait 10000 eval "[ \"\$(server_rx)\" -ge $((rx0 + 20)) ]"
echo 1 >"$cpu1"
check "cpu offline: CPU 1 back" test "$(cat "$cpu1")" = 1

# 3b. CPU 1 offline and online, five times, under traffic.
fp_flood_start 10.0.2.1 7000
check "cpu offline / online: traffic taken first" fp_taken_grows 100
for ((i = 0; i < 5; i++)); do
	echo 0 >"$cpu1"
	echo 1 >"$cpu1"
done
check "cpu offline / online 5 times under traffic: traffic taken after" fp_taken_grows 100
fp_flood_stop
cleanup_all_ns

# 4. The router's namespace deleted under queued packets.
topology
hold_20 0 "netns: 20 packets taken and held"
ip netns del "$R"
NS_LIST=("$C" "$S")	# R is gone: cleanup must not delete it again
echo 0 >"$hold"
# The namespace's exit waits for its queued packets, then its devices go:
# the server's peer device disappears when r1 is freed.
check "netns: deleted, its devices freed" busywait 10000 gone "$S" s0
cleanup_all_ns

# 4b. The output device moved to a second router namespace, RB, that sends
# through it too. R's packets are held on CPU 0; RB's flow is offloaded
# from CPU 1 (its slow-path packets drain CPU 1's queue, not CPU 0's), then
# its packets are held on CPU 0 behind R's.
topology
second_router
ip netns exec "$RB" sysctl -qw net.ipv4.ip_forward=1
hold_20 0 "moved device: R's 20 packets taken and held"
ip -n "$R" link set r1 netns "$RB"
# One transmit queue: both namespaces' packets then share every part of
# the bulk key but the namespace (with two, the flow hash may part them).
ip netns exec "$RB" ethtool -L r1 tx 1
ip -n "$RB" addr add 10.0.2.254/24 dev r1
ip -n "$RB" link set r1 up
fp_ruleset -n "$RB" -d "b0 r1" -N -l udp -K
fp_genl "$RB" attach inet fp ft
# rb_send CPU COUNT [echoes]: the C2 flow (10.0.4.1:40000 -> S:7000),
# waiting for each echo when asked.
rb_send() {
	ip netns exec "$C2" taskset -c "$1" python3 - "$2" "${3:-}" <<-'EOF'
	import socket, sys
	s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
	s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
	s.bind(("0.0.0.0", 40000))
	s.settimeout(1)
	for i in range(int(sys.argv[1])):
	    s.sendto(b"m" * 100, ("10.0.2.1", 7000))
	    if sys.argv[2]:
	        try:
	            s.recv(2048)
	        except socket.timeout:
	            pass
	EOF
}
rb_taken() { fp_taken "$RB"; }
busywait 30000 ip netns exec "$C2" taskset -c 1 ping -c1 -W1 -q 10.0.2.1 >/dev/null ||
	echo "INFO: moved device: no connectivity from C2 through RB"
rb_send 1 5 echoes
rbt0=$(rb_taken)
rb_send 0 20
check "moved device: RB's 20 packets taken and held behind R's" \
	busywait 10000 eval "[ \"\$(rb_taken)\" -ge $((rbt0 + 20)) ]"
echo 0 >"$hold"
check "moved device: both namespaces' held packets are delivered" \
	busywait 10000 eval "[ \"\$(server_rx)\" -ge $((rx0 + 40)) ]"
ip netns del "$RB"
# A namespace deleted after RB is freed only once RB's exit is over, when
# it goes in a later batch: RB's devices go first (C2's c0 with b0), so
# the batch with RB has begun before X is deleted.
busywait 20000 gone "$C2" c0 || echo "INFO: moved device: RB's devices still there"
setup_ns X
ip link add x0 netns "$X" type veth peer name x1 netns "$C2"
ip netns del "$X"
NS_LIST=("$C" "$R" "$S" "$C2")
check "moved device: RB's exit completes (a later namespace is freed)" \
	busywait 20000 gone "$C2" x1
cleanup_all_ns

# 4c. A decline in another namespace leaves R's queued packets alone. R's
# packets are held on CPU 0; a second router namespace, RB (a container,
# say), then declines a packet on CPU 0 (a flow it has not offloaded: a
# miss). The hook drains only its own namespace's packets before a
# decline: R's stay held until released.
topology
second_router
fp_ruleset -n "$RB" -d b0 -N -l none
fp_genl "$RB" attach inet fp ft
rb_misses() { fp_proc "$RB" decline_miss; }
m0=$(rb_misses)
hold_20 0 "other namespace's decline: R's 20 packets taken and held"
ip netns exec "$C2" taskset -c 0 python3 -c '
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.sendto(b"n" * 100, ("10.0.9.9", 9))'
check "other namespace's decline: RB declined a packet (miss)" \
	busywait 10000 eval "[ \"\$(rb_misses)\" -gt $m0 ]"
rx1=$(server_rx)
check "other namespace's decline: R's packets are still held ($((rx1 - rx0)) delivered)" \
	test "$rx1" -eq "$rx0"
echo 0 >"$hold"
check "other namespace's decline: R's held packets are delivered once released" \
	busywait 10000 eval "[ \"\$(server_rx)\" -ge $((rx0 + 20)) ]"
cleanup_all_ns

# 4d. Route deleted, flow torn down and flowtable deleted under queued
# packets. The route to S is r1's connected route; the flow holds it too,
# until its flowtable goes.
all_drops() { fp_stat "$R" "sum(t['drop'].values())"; }
# IPv4 routes alive in the kernel (all namespaces): rt_cache's "entries".
rt_entries() {
	printf '%d\n' "0x$(awk 'NR == 2 { print $1 }' /proc/net/stat/rt_cache)"
}
topology
dr0=$(all_drops)
hold_20 0 "route gone: 20 packets taken and held"
# With the flow's routes made and held: read before the traffic, the
# count may not have them yet.
e0=$(rt_entries)
ip -n "$R" route del 10.0.2.0/24 dev r1
ip netns exec "$R" conntrack -F >/dev/null 2>&1 || true
ip netns exec "$R" nft delete table inet fp
echo 0 >"$hold"
# shellcheck disable=SC2317 # called through busywait
held_accounted() {
	[ $(($(server_rx) - rx0 + $(all_drops) - dr0)) -eq 20 ]
}
check "route gone: every held packet delivered or dropped" \
	busywait 10000 held_accounted
echo "INFO: route gone: $(($(server_rx) - rx0)) delivered, $(($(all_drops) - dr0)) dropped"
check "route gone: the route is freed with the packets' references" \
	busywait 10000 eval "[ \"\$(rt_entries)\" -lt $e0 ]"
echo "INFO: route gone: IPv4 routes $e0 before, $(rt_entries) after"
cleanup_all_ns

# 5. Unloaded while holding (last: the module is gone afterwards). Should
# the unload hang, clearing test_hold by hand lets it finish.
topology
hold_20 0 "unload: 20 packets taken and held"
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

# 6. Unloaded while test_hold is written, set then cleared: each write in a
# tight loop (a shell builtin, no process start) for as long as the file
# exists, the writes the module refused (EBUSY) counted. The harm of a
# write that goes through is not always visible (the poll may run before
# a set; a clear after the free reads freed memory, which only KASAN
# sees): the refusals are what the fix does, and before it there were none.
hammer() {
	local v=$1
	: >"$FP_TMP/err.$v"
	while [ -e "$hold" ]; do
		echo "$v" 2>>"$FP_TMP/err.$v" >"$hold" || true
	done
	grep -c 'busy' "$FP_TMP/err.$v" >"$FP_TMP/busy.$v" || true
}
fp_tmpdir
for v in 1 0; do
	nfb_load_module
	topology
	hold_20 0 "unload, test_hold written $v meanwhile: 20 packets taken and held"
	hammer "$v" &
	hammer_pid=$!
	nfb_unload_module &
	unload_pid=$!
	check "unload, test_hold written $v meanwhile: completes" \
		busywait 30000 eval "! kill -0 $unload_pid 2>/dev/null"
	if kill -0 "$unload_pid" 2>/dev/null; then
		kill "$hammer_pid" 2>/dev/null || true
		echo 0 >"$hold" || true
		busywait 30000 eval "! kill -0 $unload_pid 2>/dev/null" ||
			echo "INFO: unload still hangs after test_hold was cleared by hand"
	fi
	check "unload, test_hold written $v meanwhile: the held packets are delivered" \
		busywait 10000 eval "[ \"\$(server_rx)\" -ge $((rx0 + 20)) ]"
	wait "$hammer_pid" 2>/dev/null || true
	busy=$(cat "$FP_TMP/busy.$v" 2>/dev/null || echo 0)
	check "unload, test_hold written $v meanwhile: writes during the unload refused with EBUSY ($busy)" \
		test "$busy" -gt 0
	if ! kill -0 "$unload_pid" 2>/dev/null; then wait "$unload_pid" || true; fi
	cleanup_all_ns
done

exit "$ret"
