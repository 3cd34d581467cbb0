#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Transmit queue choice as the stack's. The router's output device has four
# transmit queues under mq (a pfifo_fast per queue) and XPS maps CPU 0 to queue 2
# and CPU 1 to queue 3. Flows forwarded on CPU 0 must leave on queue 2,
# with the stock flowtable (dev_queue_xmit()) and with the module alike.
#
# The module must reset skb->sender_cpu as netdev_core_pick_tx() does:
# a packet received through a NAPI carries the NAPI id in those bytes.
# Without the reset XPS sees no CPU and the queue comes from the flow hash,
# or here from the packet socket the veth packets still carry; the queue
# alone does not show it. A kprobe on netdev_pick_tx() does: every call
# must see a CPU in sender_cpu. Twice: r0 receives through the backlog,
# then through veth's NAPI (GRO on r0, TSO off on c0 so that veth lets UDP
# in), where napi_gro_receive() writes the NAPI id.
# nfb-timeout: 600
# nfb-cpus: 2 (XPS maps and sender_cpu on CPUs 0 and 1)
set -eu
# shellcheck source=selftests/lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=tools/testing/lib/fastpath.sh
source "$NFB_LIB/fastpath.sh"

nfb_require_tool ip nft tc python3 taskset ethtool pahole

# shellcheck disable=SC2317 # called through the EXIT trap
cleanup() {
	pick_probe off
	if [ -n "$record_cmd" ]; then echo "$record_cmd" >"$TRACE/options/record-cmd"; fi
	if [ -w "$hold" ]; then echo 0 >"$hold"; fi
	cleanup_all_ns
	if nfb_module_loaded; then nfb_unload_module; fi
}

TRACE=/sys/kernel/tracing
hold=/sys/module/nf_flow_bulk/parameters/test_hold
# pick_probe on|off: a kprobe on netdev_pick_tx() recording skb->sender_cpu
# (x86-64: the skb is the second argument, %si; the field's offset comes
# from the running kernel's BTF or, for a kernel built without BTF such as
# the debug kernel, from NFB_SKB_SENDER_CPU_OFFSET, which
# tools/debug-kernel/check computes from the kernel's build tree).
pick_probe() {
	if [ "$1" = on ]; then
		local off
		off=$(pahole -C sk_buff /sys/kernel/btf/vmlinux 2>/dev/null |
			sed -n 's|.*unsigned int *sender_cpu; */\* *\([0-9]*\) .*|\1|p' | head -n 1)
		if [ -z "$off" ]; then
			off=${NFB_SKB_SENDER_CPU_OFFSET:-}
			case "$off" in
			'' | *[!0-9]*)
				log_fail "no offset of sk_buff.sender_cpu: no BTF, NFB_SKB_SENDER_CPU_OFFSET='$off'"
				exit 1
				;;
			esac
		fi
		echo "p:nfb_txq/pick netdev_pick_tx sender_cpu=+$off(%si):u32" >>"$TRACE/kprobe_events"
		: >"$TRACE/trace"
		echo 1 >"$TRACE/events/nfb_txq/pick/enable"
	elif [ -d "$TRACE/events/nfb_txq" ]; then
		echo 0 >"$TRACE/events/nfb_txq/pick/enable"
		echo "-:nfb_txq/pick" >>"$TRACE/kprobe_events"
	fi
}
record_cmd=
trap cleanup EXIT

[ "$(nproc)" -ge 2 ] || nfb_cannot_run "needs two CPUs"

[ -d "$TRACE/events" ] || mount -t tracefs nodev "$TRACE"
# Enabling an event with record-cmd on also registers the sched_switch
# probe that records task names: a jump label patched in __schedule()
# (int3 first, then the new instruction) while every CPU runs it. Once,
# in a clean-clone make check on 6.12, the idle CPU trapped on that int3
# after the patch had finished ("Oops: int3" in __schedule, TCG guest) and
# the guest panicked. The probe needs no task names; with record-cmd off
# only netdev_pick_tx(), which runs only under the test's own traffic,
# is patched.
record_cmd=$(cat "$TRACE/options/record-cmd")
echo 0 >"$TRACE/options/record-cmd"
[ "$(uname -m)" = x86_64 ] || nfb_cannot_run "the probe reads x86-64 registers"
nfb_load_module
setup_ns C R S
ip link add c0 netns "$C" type veth peer name r0 netns "$R"
ip link add s0 netns "$S" numtxqueues 4 numrxqueues 4 type veth \
	peer name r1 netns "$R" numtxqueues 4 numrxqueues 4
fp_addresses
# Forwarded UDP never confirms a neighbour: R's entry for S ages to stale,
# and the flows' packets then make R send ARP probes on r1, from whatever
# CPU, which the queue counts below take for the flows' (a clean-clone
# make check on 6.12 counted 3 such packets on other queues, stock path,
# backlog). Permanent entries send none.
smac=$(ip netns exec "$S" cat /sys/class/net/s0/address)
ip -n "$R" neigh replace 10.0.2.1 lladdr "$smac" dev r1 nud permanent
ip -n "$R" neigh replace fd00:2::1 lladdr "$smac" dev r1 nud permanent
# mq's children are the default qdisc (fq_codel on Debian). pfifo_fast,
# the one the list path passes by, must be that default when mq is
# created: one grafted with tc under mq loses TCQ_F_NOLOCK
# (qdisc_clear_nolock(): mq itself is not lockless) and is not passed by.
default_qdisc=$(sysctl -n net.core.default_qdisc)
sysctl -qw net.core.default_qdisc=pfifo_fast
ip netns exec "$R" tc qdisc replace dev r1 root handle 1: mq
sysctl -qw net.core.default_qdisc="$default_qdisc"
ip netns exec "$R" sh -c 'echo 1 >/sys/class/net/r1/queues/tx-2/xps_cpus &&
	echo 2 >/sys/class/net/r1/queues/tx-3/xps_cpus &&
	echo 0 >/sys/class/net/r1/queues/tx-0/xps_cpus &&
	echo 0 >/sys/class/net/r1/queues/tx-1/xps_cpus'
fp_ruleset 0 0

# Packets sent on each of r1's transmit queues: "q0 q1 q2 q3".
txq_packets() {
	ip netns exec "$R" tc -s -j qdisc show dev r1 | python3 -c '
import json, sys
n = [0] * 4
for q in json.load(sys.stdin):
    p = q.get("parent", "")
    if q["kind"] != "mq" and p.startswith("1:"):
        n[int(p[2:], 16) - 1] = q["packets"]
print(*n)'
}

s0rx() { ip netns exec "$S" cat /sys/class/net/s0/statistics/rx_packets; }
rmac=$(ip netns exec "$R" cat /sys/class/net/r0/address)

# flows_on_cpu0 PACKETS [RUN]: PACKETS UDP datagrams over 8 flows (source
# ports 42000-42007, in turn, RUN datagrams of a flow at a time, 1 unless
# given; with HOLD=1 in the environment held in the module's queue,
# test_hold, and released at once, so that one drain sees many of them),
# written to c0 by a packet socket on CPU 0, so the router forwards them
# on CPU 0 (with FWD=1 from 10.0.3.1, written to cx, forwarded by C: see
# below); waits until the server has them. Not UDP sockets: their
# packets carry skb->sk through veth into the router, and netdev_pick_tx()
# then follows the socket's cached queue; a router's packets come from a
# NIC, without a socket. Not pktgen: its packets are shared, which the
# module declines.
flows_on_cpu0() {
	local r0
	r0=$(s0rx)
	if [ "${HOLD:-0}" = 1 ]; then echo 1 >"$hold"; fi
	local dev=c0 mac=$rmac src=10.0.1.1
	if [ "${FWD:-0}" = 1 ]; then dev=cx mac=$xmac src=10.0.3.1; fi
	ip netns exec "$C" taskset -c 0 python3 - "$1" "$mac" "${2:-1}" "$dev" "$src" <<-'EOF'
	import socket, struct, sys
	count, rmac = int(sys.argv[1]), bytes.fromhex(sys.argv[2].replace(":", ""))
	run = int(sys.argv[3])
	s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
	s.bind((sys.argv[4], 0))
	cmac = s.getsockname()[4]
	src, dst = socket.inet_aton(sys.argv[5]), socket.inet_aton("10.0.2.1")
	for i in range(count):
	    udp = struct.pack("!HHHH", 42000 + i // run % 8, 7000, 8 + 100, 0) + b"q" * 100
	    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), i, 0, 64, 17, 0, src, dst)
	    words = struct.unpack("!10H", ip)
	    c = sum(words)
	    c = (c & 0xFFFF) + (c >> 16)
	    c = (c & 0xFFFF) + (c >> 16)
	    ip = ip[:10] + struct.pack("!H", ~c & 0xFFFF) + ip[12:]
	    s.send(rmac + cmac + b"\x08\x00" + ip + udp)
	EOF
	if [ "${HOLD:-0}" = 1 ]; then echo 0 >"$hold"; fi
	busywait 10000 eval "[ \$((\$(s0rx) - $r0)) -ge $1 ]" ||
		echo "INFO: $(($(s0rx) - r0)) of $1 datagrams arrived"
}

# rx_mode backlog|napi: how r0 receives (see the top).
rx_mode() {
	if [ "$1" = napi ]; then
		ip netns exec "$C" ethtool -K c0 tso off
		ip netns exec "$R" ethtool -K r0 gro on
	else
		ip netns exec "$R" ethtool -K r0 gro off
		ip netns exec "$C" ethtool -K c0 tso on
	fi
}

# The packets above carry the packet socket (skb->sk) through veth into
# the router, where netdev_pick_tx() reads it. A router's packets have no
# socket: C forwards these, and ip_rcv() drops the socket. cx and xc are a
# veth pair in C; 10.0.3.0/24 is behind xc.
ip link add cx netns "$C" type veth peer name xc netns "$C"
ip -n "$C" link set cx up
ip -n "$C" link set xc up
ip -n "$C" route add 10.0.3.0/24 dev xc
ip -n "$R" route add 10.0.3.0/24 via 10.0.1.1
ip netns exec "$C" sysctl -qw net.ipv4.ip_forward=1
xmac=$(ip netns exec "$C" cat /sys/class/net/xc/address)

# xps_maps Q2 Q3: CPU masks of tx-2 and tx-3 (0 0: no XPS map at all, the
# queue comes from the flow hash, skb_tx_hash()).
xps_maps() {
	ip netns exec "$R" sh -c "echo $1 >/sys/class/net/r1/queues/tx-2/xps_cpus &&
		echo $2 >/sys/class/net/r1/queues/tx-3/xps_cpus"
}

for who in stock module; do
	[ "$who" = module ] && fp_genl "$R" attach inet fp ft
	for mode in backlog napi; do
		rx_mode "$mode"
		# Offload the flows first, then count what the offloaded packets do.
		flows_on_cpu0 32
		read -r a0 a1 a2 a3 <<<"$(txq_packets)"
		t0=$(fp_taken "$R")
		f0=$(fp_stat "$R" 't["fallback"]["qdisc"]')
		pick_probe on
		flows_on_cpu0 160
		read -r b0 b1 b2 b3 <<<"$(txq_packets)"
		t1=$(fp_taken "$R")
		f1=$(fp_stat "$R" 't["fallback"]["qdisc"]')
		read -r picks bad < <(sed -n 's/.*sender_cpu=\([0-9]*\).*/\1/p' "$TRACE/trace" |
			awk -v n="$(nproc)" '{ c++ } $1 < 1 || $1 > n { b++ } END { print c + 0, b + 0 }')
		pick_probe off
		check "$who, $mode: every queue pick saw a CPU in sender_cpu ($bad of $picks did not)" \
			test "$picks" -ge 150 -a "$bad" = 0
		q2=$((b2 - a2))
		other=$((b0 - a0 + b1 - a1 + b3 - a3))
		check "$who, $mode: offloaded flows leave on CPU 0's XPS queue ($q2 on tx-2, $other elsewhere)" \
			test "$q2" -ge 150 -a "$other" -le 2
		if [ "$who" = module ]; then
			check "module, $mode: it took them ($((t1 - t0)))" test $((t1 - t0)) -ge 150
			# Through dev_queue_xmit() the stack would pick the queue again,
			# and the queue would not show the module's pick.
			check "module, $mode: on the list path ($((f1 - f0)) fell back to the qdisc path)" \
				test $((f1 - f0)) -le 2
		fi
	done
	# Without XPS the flow hash picks: the flows spread over the queues,
	# each always on its own. The module's queues must be the stock
	# path's, packet for packet, so the counts per queue match (20 per
	# flow; up to 2 stray packets of the router's own allowed, as above).
	# Runs of 4 packets of a flow in one drain: a pick reused within a
	# drain for another flow's packets shows.
	# Held and released at once: the drains see the runs. Forwarded by C:
	# without a socket, as a router's packets come.
	xps_maps 0 0
	FWD=1 flows_on_cpu0 32 4
	read -r a0 a1 a2 a3 <<<"$(txq_packets)"
	t0=$(fp_taken "$R")
	f0=$(fp_stat "$R" 't["fallback"]["qdisc"]')
	FWD=1 HOLD=1 flows_on_cpu0 160 4
	read -r b0 b1 b2 b3 <<<"$(txq_packets)"
	t1=$(fp_taken "$R")
	f1=$(fp_stat "$R" 't["fallback"]["qdisc"]')
	xps_maps 1 2
	if [ "$who" = module ]; then
		check "module, no XPS: it took them on the list path ($((t1 - t0)) taken, $((f1 - f0)) fell back)" \
			test $((t1 - t0)) -ge 150 -a $((f1 - f0)) -le 2
	fi
	printf -v "hashed_$who" '%s' "$((b0 - a0)) $((b1 - a1)) $((b2 - a2)) $((b3 - a3))"
done
# shellcheck disable=SC2154 # set by printf -v above
used=$(awk '{ for (i = 1; i <= NF; i++) if ($i > 0) n++ } END { print n + 0 }' <<<"$hashed_stock")
check "no XPS: the stock path's flow hash spreads the flows ($hashed_stock on tx-0..3)" \
	test "$used" -ge 2
# shellcheck disable=SC2154
diff=$(printf '%s\n%s\n' "$hashed_stock" "$hashed_module" | awk '
	NR == 1 { for (i = 1; i <= NF; i++) s[i] = $i }
	NR == 2 { for (i = 1; i <= NF; i++) d += ($i > s[i] ? $i - s[i] : s[i] - $i) }
	END { print d + 0 }')
check "no XPS: the module's queues are the stock path's ($hashed_module, stock $hashed_stock)" \
	test "$diff" -le 2

fp_genl "$R" detach inet fp ft
exit "$ret"
