#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The module's flow cache (module/flowcache.c) keeps the flows it found
# across softirq runs, until an RCU grace period starts. What must not
# move with it:
#   - more flows than it holds (600 against 512 entries), interleaved
#     packet by packet: every datagram arrives once, intact, in order per
#     flow, and the module takes them;
#   - the NAT of a flow re-created under a changed rule: after the SNAT
#     address changes and conntrack is flushed, no datagram leaves with the
#     old address, though the cache held the old flows for the same tuples
#     a moment before;
#   - the same tuples in two namespaces (two routers with the same
#     addresses, device indexes and flowtable): each router's packets get
#     its own flow's NAT;
#   - the cache serves a threaded NAPI poll too (BH disabled, no softirq
#     being served): with R's receive veth polled by its NAPI thread, the
#     module takes a few flows' datagrams with fewer flowtable lookups
#     than half of them;
#   - a flow's timeout, refreshed once per jiffy and CPU for a flow the
#     cache hands out: a flow sending for three times its timeout stays
#     offloaded, and only the packets before it was offloaded take the
#     slow path.
# nfb-long
set -eu
# shellcheck source=selftests/lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=tools/testing/lib/fastpath.sh
source "$NFB_LIB/fastpath.sh"

nfb_require_tool ip nft python3 conntrack taskset ethtool

FLOWS=600
PORT=9000
TRACE=/sys/kernel/tracing

# shellcheck disable=SC2317 # called through the EXIT trap
cleanup() {
	if [ -d "$TRACE/events/nfbfc" ]; then
		echo 0 >"$TRACE/events/nfbfc/lookup/enable"
		echo "-:nfbfc/lookup" >>"$TRACE/kprobe_events"
	fi
	cleanup_all_ns
	fp_cleanup_tmp
	if nfb_module_loaded; then nfb_unload_module; fi
}
trap cleanup EXIT

# ruleset NS ADDR: flowtable ft on r0 r1, UDP offloaded, SNAT to ADDR on r1.
ruleset() {
	fp_ruleset -n "$1" -f -N -l udp -s "chain post {
		type nat hook postrouting priority srcnat;
		oifname r1 meta nfproto ipv4 snat ip to $2
	}"
}

# sink NS FILE: records "source-address flow seq ok" per datagram on
# PORT, ok 1 when the payload is the one the sender made for (flow, seq).
sink() {
	ip netns exec "$1" python3 - "$2" "$PORT" <<-'EOF' &
	import socket, struct, sys
	out = open(sys.argv[1], "w", buffering=1)
	s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
	# SO_RCVBUFFORCE (33): SO_RCVBUF is capped at net.core.rmem_max
	# (208 KiB, a few hundred datagrams), and under TCG this process
	# falls that far behind a burst.
	s.setsockopt(socket.SOL_SOCKET, 33, 32 << 20)
	s.bind(("0.0.0.0", int(sys.argv[2])))
	while True:
	    d, peer = s.recvfrom(2048)
	    flow, seq = struct.unpack("!II", d[:8])
	    ok = d[8:] == bytes((flow * 7 + seq + i) & 0xff for i in range(92))
	    out.write("%s %d %d %d\n" % (peer[0], flow, seq, ok))
	EOF
}

# send NS FIRST ROUNDS: ROUNDS datagrams per flow, seq FIRST on, the
# flows round-robin (source ports 41000 on), from CPU 0 (one router CPU:
# the module's queues and caches are per CPU), with a short pause every
# 64 datagrams so that the router's backlog does not overflow.
send() {
	ip netns exec "$1" taskset -c 0 python3 - "$FLOWS" "$2" "$3" "$PORT" <<-'EOF'
	import socket, struct, sys, time
	flows, first, rounds, port = map(int, sys.argv[1:5])
	socks = []
	for f in range(flows):
	    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
	    s.bind(("0.0.0.0", 41000 + f))
	    socks.append(s)
	n = 0
	for seq in range(first, first + rounds):
	    for f, s in enumerate(socks):
	        body = bytes((f * 7 + seq + i) & 0xff for i in range(92))
	        s.sendto(struct.pack("!II", f, seq) + body, ("10.0.2.1", port))
	        n += 1
	        if n % 64 == 0:
	            time.sleep(0.002)
	EOF
}

# verdict FILE FIRST ROUNDS ADDR: the datagrams of seq FIRST.. in FILE:
# how many arrived, how many were damaged, duplicated or out of order per
# flow, and how many came from another source than ADDR. One line:
# "received bad dup reordered wrongsrc".
verdict() {
	python3 - "$@" <<-'EOF'
	import sys
	path, first, rounds, addr = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
	last, seen = {}, set()
	rx = bad = dup = reo = wrong = 0
	for line in open(path):
	    src, flow, seq, ok = line.split()
	    flow, seq = int(flow), int(seq)
	    if not first <= seq < first + rounds:
	        continue
	    rx += 1
	    bad += ok != "1"
	    wrong += src != addr
	    if (flow, seq) in seen:
	        dup += 1
	    seen.add((flow, seq))
	    reo += last.get(flow, -1) > seq
	    last[flow] = max(last.get(flow, -1), seq)
	print(rx, bad, dup, reo, wrong)
	EOF
}

# offloaded NS: all FLOWS flows of NS's conntrack table are offloaded.
offloaded() {
	[ "$(ip netns exec "$1" conntrack -L -p udp 2>/dev/null | grep -c OFFLOAD)" -ge "$FLOWS" ]
}

# received FILE FIRST ROUNDS ADDR: all of those datagrams arrived.
received() {
	[ "$(verdict "$@" | cut -d' ' -f1)" -ge $((FLOWS * $3)) ]
}

# sink_drops NS: datagrams NS's UDP sockets dropped for a full receive
# buffer (shown with the verdicts: a loss there is the sink's, not the
# router's).
sink_drops() {
	# shellcheck disable=SC2016 # awk's fields, not the shell's
	ip netns exec "$1" awk '$1 == "Udp:" && $2 ~ /^[0-9]+$/ { print $6 }' /proc/net/snmp
}

# delivered_ok LINE TOTAL: nothing damaged, duplicated, reordered or
# misaddressed, and at least 95 % arrived (UDP through veth under TCG: a
# full backlog drops, with or without the module).
delivered_ok() {
	local rx bad dup reo wrong
	read -r rx bad dup reo wrong <<<"$1"
	echo "received $rx of $2, damaged $bad, duplicated $dup, reordered $reo, wrong source $wrong"
	[ "$bad" = 0 ] && [ "$dup" = 0 ] && [ "$reo" = 0 ] && [ "$wrong" = 0 ] &&
		[ $((rx * 100)) -ge $((95 * $2)) ]
}

# ten_rounds WHAT WHAT-TAKEN AGAIN FIRST FROM SENT ADDR: ten rounds from C
# through R, seq FIRST on. The SENT rounds of seq FROM to FIRST + 9 must
# arrive as delivered_ok says, from ADDR, and the module must have taken
# 90 % of the ten rounds.
ten_rounds() {
	local what=$1 what_taken=$2 again=$3 first=$4 from=$5 addr=$7 t0 t1 v total
	total=$((FLOWS * $6))
	t0=$(fp_taken "$R")
	send "$C" "$first" 10
	busywait 30000 received "$FP_TMP/rx" "$first" 10 "$addr" || true
	v=$(verdict "$FP_TMP/rx" "$from" $((first + 10 - from)) "$addr")
	echo "INFO: the server's socket dropped $(sink_drops "$S") datagrams so far (full buffer)"
	check "$what: $(delivered_ok "$v" "$total" || true)" delivered_ok "$v" "$total"
	t1=$(fp_taken "$R")
	check "$what_taken: the module took $((t1 - t0)) of $((FLOWS * 10))$again" \
		test $((t1 - t0)) -ge $((FLOWS * 9))
}

# send_both FIRST ROUNDS: FEW flows (source ports 42000 on) through each
# router, one process, C's datagram of flow f then C2's, from CPU 0.
send_both() {
	taskset -c 0 python3 - "/run/netns/$C" "/run/netns/$C2" "$FEW" "$1" "$2" "$PORT" <<-'EOF'
	import ctypes, os, socket, struct, sys, time
	libc = ctypes.CDLL(None, use_errno=True)
	few, first, rounds, port = map(int, sys.argv[3:7])
	socks = []
	for path in sys.argv[1:3]:
	    fd = os.open(path, os.O_RDONLY)
	    if libc.setns(fd, 0x40000000) != 0:
	        sys.exit("setns %s: %s" % (path, os.strerror(ctypes.get_errno())))
	    os.close(fd)
	    mine = []
	    for f in range(few):
	        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
	        s.bind(("0.0.0.0", 42000 + f))
	        mine.append(s)
	    socks.append(mine)
	n = 0
	for seq in range(first, first + rounds):
	    for f in range(few):
	        body = bytes((f * 7 + seq + i) & 0xff for i in range(92))
	        for mine in socks:
	            mine[f].sendto(struct.pack("!II", f, seq) + body, ("10.0.2.1", port))
	            n += 1
	    if n % 64 == 0:
	        time.sleep(0.002)
	EOF
}

# both_offloaded: FEW flows of ports 42000 on offloaded in R and in R2.
both_offloaded() {
	local ns
	for ns in "$R" "$R2"; do
		[ "$(ip netns exec "$ns" conntrack -L -p udp 2>/dev/null |
			grep OFFLOAD | grep -c 'sport=420[0-9][0-9] ')" -ge "$FEW" ] || return 1
	done
}

# received_few FILE FIRST ROUNDS ADDR: all FEW flows' datagrams arrived.
received_few() {
	[ "$(verdict "$@" | cut -d' ' -f1)" -ge $((FEW * $3)) ]
}

nfb_load_module
fp_topology
fp_tmpdir
ip -n "$R" addr add 10.0.2.100/24 dev r1
ip -n "$R" addr add 10.0.2.101/24 dev r1
ruleset "$R" 10.0.2.100
fp_genl "$R" attach inet fp ft
sink "$S" "$FP_TMP/rx"
busywait 30000 fp_udp_listening "$S" "$PORT"

# Offload the flows: a flow is added once its conntrack entry is confirmed,
# by its second datagram through the forward chain.
send "$C" 0 3
check "$FLOWS flows offloaded" busywait 20000 offloaded "$R"

ten_rounds "$FLOWS flows round-robin" "$FLOWS flows round-robin" "" 10 10 10 10.0.2.100

# The rule moves to another address and conntrack is flushed: the same
# flowtable's flows for the same tuples die (their conntrack entries
# first, then the flows), and come back with the new NAT (their first
# datagrams through the stack); the module takes them again. Not one
# datagram may keep the old address.
ip netns exec "$R" nft flush chain inet fp post
ip netns exec "$R" nft add rule inet fp post oifname r1 meta nfproto ipv4 snat ip to 10.0.2.101
ip netns exec "$R" conntrack -F >/dev/null 2>&1 || true
send "$C" 100 3
check "$FLOWS flows offloaded again" busywait 20000 offloaded "$R"
ten_rounds "SNAT moved, conntrack flushed" "SNAT moved" " again" 110 100 13 10.0.2.101

# A second router, R2, with the same addresses, device indexes, ruleset
# and flowtable, and another SNAT address. A few flows (the cache then
# hits) are sent to both routers from one process, datagram by datagram,
# R's flow f then R2's flow f, the same tuples: each router handles its
# datagram in the sender's softirq, one after the other on CPU 0, well
# within a grace period. A cache that told the flowtables apart by the
# tuple alone would hand R2's datagrams R's flow. Each router's packets
# must carry its own NAT.
setup_ns C2 R2 S2
ip link add c0 netns "$C2" type veth peer name r0 netns "$R2"
ip link add s0 netns "$S2" type veth peer name r1 netns "$R2"
C=$C2 R=$R2 S=$S2 fp_addresses
ip -n "$R2" addr add 10.0.2.102/24 dev r1
ruleset "$R2" 10.0.2.102
fp_genl "$R2" attach inet fp ft
sink "$S2" "$FP_TMP/rx2"
busywait 30000 fp_udp_listening "$S2" "$PORT"
ifindexes() {
	echo "$(ip netns exec "$1" cat /sys/class/net/r0/ifindex) $(ip netns exec "$1" cat /sys/class/net/r1/ifindex)"
}
check "two routers: the same device indexes ($(ifindexes "$R") and $(ifindexes "$R2"))" \
	test "$(ifindexes "$R")" = "$(ifindexes "$R2")"

FEW=16
send_both 0 3
check "two routers: $FEW new flows offloaded in each" \
	busywait 20000 both_offloaded
t0=$(fp_taken "$R")
t2=$(fp_taken "$R2")
send_both 1000 200
busywait 30000 received_few "$FP_TMP/rx2" 1000 200 10.0.2.102 || true
v=$(verdict "$FP_TMP/rx" 1000 200 10.0.2.101)
check "two routers, same tuples, interleaved: router 1 $(delivered_ok "$v" $((FEW * 200)) || true)" \
	delivered_ok "$v" $((FEW * 200))
v=$(verdict "$FP_TMP/rx2" 1000 200 10.0.2.102)
check "two routers, same tuples, interleaved: router 2 $(delivered_ok "$v" $((FEW * 200)) || true)" \
	delivered_ok "$v" $((FEW * 200))
t1=$(fp_taken "$R")
t3=$(fp_taken "$R2")
check "two routers: router 1's module took $((t1 - t0)), router 2's $((t3 - t2)) of $((FEW * 200)) each" \
	test $((t1 - t0)) -ge $((FEW * 180)) -a $((t3 - t2)) -ge $((FEW * 180))

# Threaded NAPI: R's r0 receives through NAPI (GRO on; C's c0 without TSO,
# so that veth hands its datagrams to NAPI) in its own thread, where the
# hook runs with BH disabled but in_serving_softirq() false. FEW of C's
# flows, 200 rounds, packet by packet: a kprobe on flow_offload_lookup()
# counts the flowtable lookups, one per packet for a cache that is
# bypassed, one per flow and grace period for one that serves the thread.
few_offloaded() {
	[ "$(ip netns exec "$R" conntrack -L -p udp 2>/dev/null | grep OFFLOAD |
		grep -cE 'sport=410(0[0-9]|1[0-5]) ')" -ge "$FEW" ]
}
gro0=$(ip netns exec "$R" ethtool -k r0 | awk '$1 == "generic-receive-offload:" { print $2 }')
ip netns exec "$C" ethtool -K c0 tso off >/dev/null
ip netns exec "$R" ethtool -K r0 gro on >/dev/null
ip netns exec "$R" sh -c 'echo 1 >/sys/class/net/r0/threaded'
FLOWS=$FEW send "$C" 2000 3
check "threaded NAPI: $FEW flows offloaded" busywait 20000 few_offloaded
[ -d "$TRACE/events" ] || mount -t tracefs nodev "$TRACE"
echo "p:nfbfc/lookup nf_flow_table:flow_offload_lookup" >>"$TRACE/kprobe_events"
echo 1 >"$TRACE/events/nfbfc/lookup/enable"
t0=$(fp_taken "$R")
FLOWS=$FEW send "$C" 2010 200
busywait 30000 fp_taken_above $((t0 + FEW * 190)) || true
t1=$(fp_taken "$R")
echo 0 >"$TRACE/events/nfbfc/lookup/enable"
lookups=$(awk '$1 == "lookup" { print $2 }' "$TRACE/kprobe_profile")
echo "INFO: threaded NAPI: $(pgrep -c 'napi/' || true) NAPI thread(s)"
check "threaded NAPI: the module took $((t1 - t0)) of $((FEW * 200))" \
	test $((t1 - t0)) -ge $((FEW * 180))
check "threaded NAPI: $lookups flowtable lookups for $((t1 - t0)) datagrams taken (the cache serves the NAPI thread)" \
	test $((lookups * 2)) -lt $((t1 - t0))
ip netns exec "$R" sh -c 'echo 0 >/sys/class/net/r0/threaded'
ip netns exec "$R" ethtool -K r0 gro "$gro0" >/dev/null

# A flow that keeps sending keeps its place in the flowtable: the module
# refreshes its timeout (flow_offload_refresh()), at most once per jiffy
# and CPU for a flow the cache hands it. With R's UDP flow timeout at 4 s
# (set before the flow is made: only the refreshes keep it), one flow
# sends a datagram every 5 ms for 12 s from CPU 0. Only the datagrams
# before it is offloaded (2, or 3 when two share a receive batch) may take
# the slow path: a flow that timed out is torn down by the flowtable's
# garbage collection, and its next two go through the forward chain again.
stream() {
	ip netns exec "$C" taskset -c 0 python3 - "$PORT" "$1" <<-'EOF'
	import socket, struct, sys, time
	port, seconds = int(sys.argv[1]), float(sys.argv[2])
	s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
	s.bind(("0.0.0.0", 43000))
	n, end = 0, time.monotonic() + seconds
	while time.monotonic() < end:
	    s.sendto(struct.pack("!II", 9999, 100000 + n) + b"t" * 92, ("10.0.2.1", port))
	    n += 1
	    time.sleep(0.005)
	print(n)
	EOF
}
ip netns exec "$R" sysctl -qw net.netfilter.nf_flowtable_udp_timeout=4
fwd0=$(fp_nft_counters "$R" chain inet fp fwdchain)
t0=$(fp_taken "$R")
sent=$(stream 12)
fwd1=$(fp_nft_counters "$R" chain inet fp fwdchain)
t1=$(fp_taken "$R")
check "timeout: $((fwd1 - fwd0)) of $sent datagrams in 12 s took the slow path (3 at most)" \
	test $((fwd1 - fwd0)) -le 3
check "timeout: the module took $((t1 - t0)) of $sent" test $((t1 - t0)) -ge $((sent - 3))

exit "$ret"
