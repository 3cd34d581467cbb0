#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# TCP teardown and transmit fallbacks with the module attached:
#   - TCP FIN and RST: declined (counted), the flow is torn down; on
#     kernels whose flowtable marks a flow closing instead (7.x), it stays,
#     and a SYN on it (a new connection on the same ports) is declined;
#   - a qdisc with a size table, then a tc egress hook, on the router's
#     ports: every byte delivered, every packet taken sent one by one and
#     counted so;
#   - a qdisc with a root lock: passed by while empty (pfifo, fq_codel),
#     or the bulk enqueued under one hold of the lock (htb); every byte
#     delivered, the qdisc counts every packet sent;
#   - pfifo_fast: bulks pass it by while it is empty, and it counts them;
#   - with fq_codel, htb, pfifo_fast and cake on r1, UDP packets built in
#     page fragments as a NIC driver builds them (the benchmark's
#     generator), received through GRO: the qdisc counts exactly the
#     packets r1 sent
#     (on 7.x its packet count is the segment count the module sets next
#     to the length in the control block, where GRO leaves a pointer), and
#     cake, which splits what it counts as more than one segment, passes
#     every one.
set -eu
# shellcheck source=selftests/lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=tools/testing/lib/fastpath.sh
source "$NFB_LIB/fastpath.sh"

nfb_require_tool ip nft python3 socat tc conntrack cmp jq ethtool

# The benchmark's generator and sink (tools/bench/kmod, built with the
# module by make check), through a debugfs of our own: ip netns exec
# mounts a fresh /sys.
bench_ko=$NFB_REPO/build/kmod/$(uname -r)/bench/nfb_bench.ko
bench_dbg=/run/nfb-debugfs
ctl=$bench_dbg/nfb_bench/ctl

# shellcheck disable=SC2317 # called through the EXIT trap
cleanup() {
	cleanup_all_ns
	fp_cleanup_tmp
	if grep -q '^nfb_bench ' /proc/modules; then rmmod nfb_bench; fi
	if nfb_module_loaded; then nfb_unload_module; fi
}
trap cleanup EXIT

# No offloaded conntrack entry for TCP destination port $1 on the router.
# shellcheck disable=SC2317 # called through busywait
not_offloaded() {
	! ip netns exec "$R" conntrack -L -p tcp --dport "$1" 2>/dev/null |
		grep -q OFFLOAD
}

# decline / fallback counter of the module
dc() { fp_proc "$R" "decline_$1"; }
fb() { fp_proc "$R" "fallback_$1"; }

nfb_load_module
fp_topology
fp_tmpdir
fp_ruleset 0 0
fp_genl "$R" attach inet fp ft

# TCP: FIN tears the flow down (the stock hook does it once we decline);
# where flows close instead (fp_kernel_flow_closing), the stock hook marks
# it closing and it stays in the flowtable until it times out.
closing=0
if fp_kernel_flow_closing; then closing=1; fi
fp_make_file "$FP_TMP/in" 1
d0=$(dc tcp_flags)
check "tcp transfer" fp_tcp_copy 10.0.2.1 "$FP_TMP/in" "$FP_TMP/out"
check "tcp data identical" cmp -s "$FP_TMP/in" "$FP_TMP/out"
check "tcp FIN declined (tcp_flags)" test "$(dc tcp_flags)" -gt "$d0"
if [ "$closing" = 1 ]; then
	check "tcp flow still offloaded after FIN (this kernel marks it closing)" \
		eval "! not_offloaded 5201"
else
	check "tcp flow no longer offloaded after FIN" busywait 15000 not_offloaded 5201
fi

# RST: an abortive close (SO_LINGER 0) on an offloaded connection. The
# server takes a second connection for the closing case below.
ip netns exec "$S" socat -u TCP4-LISTEN:5203,reuseaddr,fork /dev/null &
busywait 30000 fp_listening "$S" 5203
d0=$(dc tcp_flags)
ip netns exec "$C" python3 - "$FP_TMP/rst_port" <<-'EOF'
import socket, struct, sys, time
s = socket.create_connection(("10.0.2.1", 5203))
open(sys.argv[1], "w").write(str(s.getsockname()[1]))
for _ in range(50):
    s.send(b"y" * 1000)
    time.sleep(0.01)
s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
s.close()
EOF
check "tcp RST declined (tcp_flags)" \
	busywait 10000 eval "[ \"\$(dc tcp_flags)\" -gt $d0 ]"
if [ "$closing" = 1 ]; then
	check "tcp flow still offloaded after RST (this kernel marks it closing)" \
		eval "! not_offloaded 5203"
	# A new connection from the same port (the RST left no TIME_WAIT): its
	# SYN meets the closing flow. The stock hook tears the flow down and
	# sends the SYN to conntrack; the module must decline it (tcp_flags),
	# not forward a new connection through the old flow.
	# The connection is held open while the counter is read: its FIN
	# would be declined too.
	d0=$(dc tcp_flags)
	ip netns exec "$C" python3 -c '
import socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("", int(sys.argv[1])))
s.settimeout(20)
s.connect(("10.0.2.1", 5203))
open(sys.argv[2], "w").close()
time.sleep(120)' "$(cat "$FP_TMP/rst_port")" "$FP_TMP/reconnected" &
	syn_pid=$!
	check "tcp SYN on the closing flow (same ports): the connection is made" \
		busywait 30000 test -e "$FP_TMP/reconnected"
	check "tcp SYN on the closing flow: declined (tcp_flags)" test "$(dc tcp_flags)" -gt "$d0"
	kill "$syn_pid" 2>/dev/null || true
else
	check "tcp flow no longer offloaded after RST" busywait 15000 not_offloaded 5203
fi

# A qdisc with a size table (its packet lengths are the core's to
# compute), then a tc egress hook, on both router ports: every packet the
# module takes must leave one by one through dev_queue_xmit (or neigh_xmit
# while a neighbour is being confirmed), none through the list path.  The
# check is exact (taken == per-packet fallbacks, no bulk sent), so it does
# not depend on how many GSO skbs a given kernel's veth makes of the copy.
#
# fallback_snapshot REASON: "taken fallback-REASON fallback-neigh bulks"
fallback_snapshot() {
	fp_stat "$R" "'%d %d %d %d' % (t['packets'], t['fallback']['$1'], t['fallback']['neigh'], t['bulks'])"
}

# fallback_check WHAT REASON BEFORE: compare a snapshot with BEFORE.
fallback_check() {
	local what=$1 reason=$2 tk0 f0 n0 b0 tk1 f1 n1 b1
	read -r tk0 f0 n0 b0 <<<"$3"
	read -r tk1 f1 n1 b1 <<<"$(fallback_snapshot "$reason")"
	check "$what: packets taken ($((tk1 - tk0)))" test $((tk1 - tk0)) -gt 0
	check "$what: every taken packet sent one by one ($((f1 - f0)) $reason + $((n1 - n0)) neigh of $((tk1 - tk0)))" \
		test $((f1 - f0 + n1 - n0)) -eq $((tk1 - tk0))
	check "$what: $reason fallback counted" test $((f1 - f0)) -gt 0
	check "$what: no bulk on the list path" test "$b1" -eq "$b0"
}

for dev in r0 r1; do
	ip netns exec "$R" tc qdisc replace dev "$dev" root stab overhead 4 pfifo
done
before=$(fallback_snapshot qdisc)
check "tcp through a qdisc with a size table" fp_tcp_copy 10.0.2.1 "$FP_TMP/in" "$FP_TMP/out"
check "qdisc: data identical" cmp -s "$FP_TMP/in" "$FP_TMP/out"
fallback_check qdisc qdisc "$before"
for dev in r0 r1; do
	ip netns exec "$R" tc qdisc del dev "$dev" root
done

# qdisc_sent KIND [DEV...]: packets the KIND qdiscs of DEVs (both router
# ports) sent.
qdisc_sent() {
	local kind=$1 dev n=0 v
	shift
	[ $# -gt 0 ] || set -- r0 r1
	for dev in "$@"; do
		v=$(ip netns exec "$R" tc -s -j qdisc show dev "$dev" root |
			jq --arg k "$kind" '[.[] | select(.kind == $k) | .packets] | add // 0')
		n=$((n + v))
	done
	echo "$n"
}

# dev_sent [DEV...]: packets DEVs (both router ports) sent (each through
# its root qdisc).
dev_sent() {
	local dev n=0
	[ $# -gt 0 ] || set -- r0 r1
	for dev in "$@"; do
		n=$((n + $(ip netns exec "$R" cat "/sys/class/net/$dev/statistics/tx_packets")))
	done
	echo "$n"
}

# qdisc_bulks KIND [TC-QDISC-ARGS]: KIND (or what tc qdisc replace ... root
# TC-QDISC-ARGS makes) on both router ports; TCP through it.
# Every byte arrives, the module sends bulks, and the qdisc counts every
# packet the ports sent, the module's as the stack's (a packet put back
# into the qdisc is counted again when it leaves, as in the core).
qdisc_bulks() {
	local kind=$1 tk0 tk1 b0 b1 q0 q1 d0 d1 dev
	shift
	[ $# -gt 0 ] || set -- "$kind"
	for dev in r0 r1; do
		ip netns exec "$R" tc qdisc replace dev "$dev" root "$@"
		[ "$kind" != htb ] ||
			ip netns exec "$R" tc class add dev "$dev" parent 1: classid 1:1 htb rate 10gbit
	done
	read -r tk0 _ _ b0 <<<"$(fallback_snapshot qdisc)"
	q0=$(qdisc_sent "$kind")
	d0=$(dev_sent)
	check "tcp through $kind" fp_tcp_copy 10.0.2.1 "$FP_TMP/in" "$FP_TMP/out"
	check "$kind: data identical" cmp -s "$FP_TMP/in" "$FP_TMP/out"
	read -r tk1 _ _ b1 <<<"$(fallback_snapshot qdisc)"
	# The device's count before the qdisc's, the reverse of the order in
	# which a packet is counted: one sent between the two reads is then
	# in the qdisc's count only.
	d1=$(dev_sent)
	q1=$(qdisc_sent "$kind")
	check "$kind: packets taken ($((tk1 - tk0)))" test $((tk1 - tk0)) -gt 0
	check "$kind: bulks ($((b1 - b0)) for $((tk1 - tk0)) packets)" \
		test "$b1" -gt "$b0"
	check "$kind: the qdisc counted every packet the ports sent ($((q1 - q0)) >= $((d1 - d0)), $((tk1 - tk0)) taken)" \
		test $((q1 - q0)) -ge $((d1 - d0))
	# pfifo takes fq_codel's path (passed by while empty, under its lock).
	[ "$kind" = pfifo ] || gen_counts "$kind"
	for dev in r0 r1; do
		ip netns exec "$R" tc qdisc del dev "$dev" root
	done
}

# gen COUNT [ARG...]: COUNT UDP packets from C to S by the generator, built
# in page fragments (headroom=256) as a NIC driver builds them, in bursts of
# 32; the write returns once they are sent (with window=N, once the sink
# has them all, or fails when it stops getting them).
gen() {
	local n=$1
	shift
	echo "gen dev=c0 dmac=$r0_mac src=10.0.1.1 dst=10.0.2.1 sport=40000 dport=9 count=$n burst=32 headroom=256 $*" |
		ip netns exec "$C" tee "$ctl" >/dev/null
}

# losses KIND: "GEN C0 R0 QDISC MODULE", where packets went that did not
# reach r1's transmit: dropped by the generator's dev_queue_xmit, by c0 (a
# veth counts a packet its peer's full receive ring refused as the
# sender's tx_dropped), by r0's receive, by r1's KIND root qdisc (an AQM
# drops at enqueue or dequeue, before the qdisc counts a packet sent) and
# by the module (every drop_* counter).
losses() {
	local c m=0
	for c in $(ip netns exec "$R" head -n 1 /proc/net/stat/nf_flow_bulk); do
		case "$c" in
		drop_*) m=$((m + $(fp_proc "$R" "$c"))) ;;
		esac
	done
	echo "$(sed -n 's/^gen_dropped=//p' "$ctl")" \
		"$(ip netns exec "$C" cat /sys/class/net/c0/statistics/tx_dropped)" \
		"$(ip netns exec "$R" cat /sys/class/net/r0/statistics/rx_dropped)" \
		"$(ip netns exec "$R" tc -s -j qdisc show dev r1 root |
			jq --arg k "$1" '[.[] | select(.kind == $k) | .drops] | add // 0')" \
		"$m"
}

# gen_counts KIND: the generator's packets through R, received with GRO on
# r0 (veth's NAPI path, where GRO's state is left in the control block as
# a NIC driver's receive leaves it), sent by the module in bulks through
# the KIND root qdisc of r1. The qdisc must count exactly the packets r1
# sent: the generator's and nothing else (an ARP probe is counted by
# both), each once. Exact, where the TCP copy can only bound it: nothing
# else flows while the counters are read.
# The generator keeps at most 128 packets in flight (window=128): bursts
# of 32 still reach r0's NAPI as a NIC's would, but a slow guest on a
# loaded host can no longer overflow r0's receive ring (256) while the
# router lags behind. Every packet is accounted for: a loss is named by
# where it happened.
gen_counts() {
	local kind=$1 n=1000 b0 b1 q0 q1 d0 d1 got sent where
	local lg0 lc0 lr0 lq0 lm0 lg1 lc1 lr1 lq1 lm1
	ip netns exec "$R" ethtool -K r0 gro on >/dev/null
	echo "sink dev=s0" | ip netns exec "$S" tee "$ctl" >/dev/null
	# A UDP flow is offloaded once a later packet finds it confirmed.
	gen 1
	gen 1
	gen 1
	echo reset >"$ctl"
	b0=$(fp_proc "$R" bulks)
	q0=$(qdisc_sent "$kind" r1)
	d0=$(dev_sent r1)
	read -r lg0 lc0 lr0 lq0 lm0 <<<"$(losses "$kind")"
	gen "$n" window=128 || true
	busywait 10000 grep -qx "sink_packets=$n" "$ctl" || true
	got=$(sed -n 's/^sink_packets=//p' "$ctl")
	sent=$(sed -n 's/^gen_sent=//p' "$ctl")
	b1=$(fp_proc "$R" bulks)
	d1=$(dev_sent r1)
	q1=$(qdisc_sent "$kind" r1)
	read -r lg1 lc1 lr1 lq1 lm1 <<<"$(losses "$kind")"
	ip netns exec "$R" ethtool -K r0 gro off >/dev/null
	echo "sink off" >"$ctl"
	where="generated $sent, generator dropped $((lg1 - lg0)), c0 tx_dropped $((lc1 - lc0)), r0 rx_dropped $((lr1 - lr0)), $kind dropped $((lq1 - lq0)), module dropped $((lm1 - lm0)), r1 sent $((d1 - d0))"
	check "$kind, page-fragment UDP through GRO: the sink got all $n ($got; $where)" \
		test "$got" -eq "$n"
	check "$kind, page-fragment UDP through GRO: the qdisc dropped none ($((lq1 - lq0)))" \
		test $((lq1 - lq0)) -eq 0
	check "$kind, page-fragment UDP through GRO: the module dropped none ($((lm1 - lm0)))" \
		test $((lm1 - lm0)) -eq 0
	check "$kind, page-fragment UDP through GRO: bulks ($((b1 - b0)))" \
		test "$b1" -gt "$b0"
	check "$kind, page-fragment UDP through GRO: the qdisc counted exactly the packets r1 sent ($((q1 - q0)) = $((d1 - d0)), $n generated; $where)" \
		test $((q1 - q0)) -eq $((d1 - d0)) -a $((d1 - d0)) -ge "$n"
}

# pfifo and fq_codel have a root lock and may be passed by while empty:
# the module's list path does so while this CPU holds the qdisc's run, as
# the core does for one packet. htb (a shaper) may not: the bulk is
# enqueued under one hold of its lock and the qdisc runs after.
# pfifo_fast (lockless, work-conserving: the default of single-queue
# devices) is passed by while empty, as pfifo is.
# No GSO from the ends, so that a packet is a packet to the device's
# counter as to the qdisc's (which counts a GSO packet's segments).
ip netns exec "$C" ethtool -K c0 tso off gso off >/dev/null
ip netns exec "$S" ethtool -K s0 tso off gso off >/dev/null
mkdir -p "$bench_dbg"
mountpoint -q "$bench_dbg" || mount -t debugfs debugfs "$bench_dbg"
insmod "$bench_ko"
r0_mac=$(ip netns exec "$R" cat /sys/class/net/r0/address)
qdisc_bulks pfifo
qdisc_bulks fq_codel
qdisc_bulks htb handle 1: htb default 1
qdisc_bulks pfifo_fast
# cake splits a packet whose segment count says more than one (split-gso,
# its default); the TCP copy through it adds nothing to what the others
# check. Its AQM (COBALT) is made all but inert (interplanetary: rtt
# 3600 s, target 180 s): with the default 100 ms / 5 ms it drops packets
# whenever a guest on a loaded host is slow to dequeue (one of 1000 on a
# first run here), and what is checked here is the count, not the AQM.
ip netns exec "$R" tc qdisc replace dev r1 root cake interplanetary
gen_counts cake
ip netns exec "$R" tc qdisc del dev r1 root

# The root qdisc stays noqueue; only the clsact egress hook is in the way.
for dev in r0 r1; do
	ip netns exec "$R" tc qdisc add dev "$dev" clsact
	ip netns exec "$R" tc filter add dev "$dev" egress matchall action ok
done
before=$(fallback_snapshot egress_hook)
check "tcp through a tc egress hook" fp_tcp_copy 10.0.2.1 "$FP_TMP/in" "$FP_TMP/out"
check "egress hook: data identical" cmp -s "$FP_TMP/in" "$FP_TMP/out"
fallback_check "egress hook" egress_hook "$before"
for dev in r0 r1; do
	ip netns exec "$R" tc qdisc del dev "$dev" clsact
done

fp_genl "$R" detach inet fp ft
exit "$ret"
