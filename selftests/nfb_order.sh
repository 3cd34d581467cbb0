#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Per-flow order across the module's queue and the stock path. Packets of
# an offloaded UDP flow are taken and held in the module's per-CPU queue
# (the test_hold parameter keeps the poll from sending them); then a packet
# of the same flow that the module must decline arrives:
#   - one with IPv4 options (decline "options"),
#   - one over the egress MTU without DF, which the router fragments,
#   - an IPv6 one over the egress MTU (packet too big back, nothing through),
#     followed by a normal one,
# and the stock path sends it at once. The held packets must leave first:
# the server must see the flow's sequence numbers in the order sent.
# Before the IPv4 packet with options, a packet of another flow (another
# client port), which the module declines as a miss, must go through
# alone: the held packets stay held, and no decline sent queued packets
# ahead of itself (the module's drains counter stays).
# Last, a flow whose packets key two bulks in turns (its two directions)
# is never in both open bulks at once (the bulks counter).
set -eu
# shellcheck source=selftests/lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=tools/testing/lib/fastpath.sh
source "$NFB_LIB/fastpath.sh"

nfb_require_tool ip nft python3 taskset conntrack

hold=/sys/module/nf_flow_bulk/parameters/test_hold

# shellcheck disable=SC2317 # called through the EXIT trap
cleanup() {
	[ -w "$hold" ] && echo 0 >"$hold"
	cleanup_all_ns
	fp_cleanup_tmp
	if nfb_module_loaded; then nfb_unload_module; fi
}
trap cleanup EXIT

nfb_load_module
fp_topology
fp_tmpdir
ip -n "$R" link set r1 mtu 1280
fp_ruleset 0 0
fp_genl "$R" attach inet fp ft

# The server records the sequence numbers (first 4 bytes) it receives on
# port 7100, one line each, to $FP_TMP/seq.
ip netns exec "$S" python3 - "$FP_TMP/seq" <<'EOF' &
import socket, sys
out = open(sys.argv[1], "w", buffering=1)
s4 = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s4.bind(("0.0.0.0", 7100))
s6 = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
s6.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
s6.bind(("::", 7100))
import select
while True:
    for s in select.select([s4, s6], [], [])[0]:
        d, peer = s.recvfrom(65535)
        s.sendto(b"ack", peer)
        out.write("%d\n" % int.from_bytes(d[:4], "big"))
EOF
busywait 30000 fp_udp_listening "$S" 7100

# send ADDR FIRST COUNT [options|big|other]: datagrams numbered FIRST...
# from the client's port 41000 (one flow for the whole test; "other":
# 41001), always from CPU 0:
# veth hands a packet to the router on the sender's CPU, and the module's
# queues are per CPU, as a NIC's receive queue keeps a flow on one CPU.
send() {
	ip netns exec "$C" taskset -c 0 python3 - "$@" <<-'EOF'
	import socket, sys
	addr, first, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
	kind = sys.argv[4] if len(sys.argv) > 4 else ""
	v6 = ":" in addr
	s = socket.socket(socket.AF_INET6 if v6 else socket.AF_INET,
	                  socket.SOCK_DGRAM)
	s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
	s.bind(("::" if v6 else "0.0.0.0", 41001 if kind == "other" else 41000))
	size = 100
	if kind == "options":
	    s.setsockopt(socket.IPPROTO_IP, socket.IP_OPTIONS, b"\x01\x01\x01\x00")
	elif kind == "big":
	    size = 1400
	    if not v6:
	        s.setsockopt(socket.IPPROTO_IP, 10, 0)  # IP_PMTUDISC_DONT
	for i in range(first, first + count):
	    s.sendto(i.to_bytes(4, "big") + b"o" * (size - 4), (addr, 7100))
	EOF
}

taken() { fp_taken "$R"; }
drains() { fp_stat "$R" "t['drains']"; }
received() { [ -s "$FP_TMP/seq" ] && wc -l <"$FP_TMP/seq" || echo 0; }
received_at_least() { [ "$(received)" -ge "$1" ]; }

# in_order FROM TO: the server saw exactly FROM..TO, in that order, after
# what it had seen before.
in_order() {
	local want got
	want=$(seq "$1" "$2" | tr '\n' ' ')
	got=$(tail -n $(($2 - $1 + 1)) "$FP_TMP/seq" | tr '\n' ' ')
	if [ "$want" != "$got" ]; then
		echo "INFO: expected $want" >&2
		echo "INFO: received $got" >&2
		return 1
	fi
}

next=1
for addr in 10.0.2.1 fd00:2::1; do
	case "$addr" in *:*) v=6 ;; *) v=4 ;; esac

	# Offload the flow (replies from the server make it established),
	# and wait until conntrack says so and every packet arrived.
	send "$addr" "$next" 3
	next=$((next + 3))
	busywait 10000 received_at_least $((next - 1)) || true
	offloaded() {
		send "$addr" "$next" 1
		next=$((next + 1))
		ip netns exec "$R" conntrack -L -f "ipv$v" -p udp --dport 7100 2>/dev/null |
			grep -q OFFLOAD
	}
	check "ipv$v: flow offloaded" busywait 10000 offloaded
	check "ipv$v: warm-up delivered" busywait 10000 received_at_least $((next - 1))

	if [ "$v" = 4 ]; then
		kinds="options big"
	else
		kinds="big"
	fi
	for kind in $kinds; do
		base=$(received)
		t0=$(taken)
		echo 1 >"$hold"
		send "$addr" "$next" 5
		check "ipv$v $kind: 5 packets taken and held" \
			busywait 10000 eval "[ \"\$(taken)\" -ge $((t0 + 5)) ]"
		check "ipv$v $kind: nothing delivered while held" test "$(received)" = "$base"
		first=$next
		next=$((next + 5))
		if [ "$v" = 6 ]; then
			# Too big for r1: dropped with packet-too-big; then a
			# normal packet, which the module takes and holds.
			send "$addr" "$next" 1 big
			send "$addr" $((next + 1)) 1
			next=$((next + 2))
			last=$((next - 1))
			# Released by hand: the big packet carries no number.
			echo 0 >"$hold"
			check "ipv$v $kind: delivered" busywait 10000 received_at_least $((base + 6))
			check "ipv$v $kind: held packets and the next one in order" \
				eval "tail -n 6 '$FP_TMP/seq' | tr '\n' ' ' | grep -qx '$(seq "$first" $((first + 4)) | tr '\n' ' ')$last '"
			continue
		fi
		if [ "$kind" = options ]; then
			d0=$(drains)
			send "$addr" 9999 1 other
			check "ipv$v other flow's miss: delivered" \
				busywait 10000 received_at_least $((base + 1))
			check "ipv$v other flow's miss: alone, the held packets still held" \
				eval "[ \"\$(received)\" = $((base + 1)) ] && tail -n 1 '$FP_TMP/seq' | grep -qx 9999"
			check "ipv$v other flow's miss: no drain" test "$(drains)" = "$d0"
			base=$((base + 1))
		fi
		send "$addr" "$next" 1 "$kind"
		next=$((next + 1))
		check "ipv$v $kind: declined packet arrives" \
			busywait 10000 received_at_least $((base + 6))
		if [ "$kind" = options ]; then
			check "ipv$v $kind: one drain" test "$(drains)" = $((d0 + 1))
		fi
		echo 0 >"$hold"
		check "ipv$v $kind: held packets leave before the declined one" \
			in_order "$first" $((next - 1))
	done
done

# Both directions of a flow share its order key (symmetric, above), so
# the module keeps them as it would one flow whose next hop changes: held
# in turns, C to S and S to C, they key two bulks (another output device
# and next hop each), and a flow is never in two open bulks: each turn
# sends the open bulk before its packet opens the other, one bulk per
# packet. Trusting a bulk's filter of flows where it is not exact, the
# eight would leave in two bulks of four. Ports 41002 and 7102 are closed
# on both sides; their port unreachables are dropped before they leave,
# and a counter where each side receives counts what arrived.
turns_t0=$SECONDS
for ns in "$C" "$S"; do
	ip netns exec "$ns" nft -f - <<-'EOF'
	table inet turns {
		chain pre {
			type filter hook prerouting priority -300; policy accept;
			udp dport { 41002, 7102 } counter
		}
		chain out {
			type filter hook output priority 0; policy accept;
			icmp type destination-unreachable drop
		}
	}
	EOF
done
# turns N: N datagrams each way, in turns, from CPU 0 (one queue).
turns_sent=0
turns() {
	ip netns exec "$C" taskset -c 0 python3 -S - "$NFB_LIB" "$C" "$S" "$1" <<-'EOF'
	import socket, sys
	sys.path.insert(0, sys.argv[1])
	from nfb_test import setns
	socks = []
	for ns, port in ((sys.argv[2], 41002), (sys.argv[3], 7102)):
	    setns(ns)
	    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
	    s.bind(("0.0.0.0", port))
	    socks.append(s)
	for i in range(int(sys.argv[4])):
	    socks[0].sendto(b"c" * 100, ("10.0.2.1", 7102))
	    socks[1].sendto(b"s" * 100, ("10.0.1.1", 41002))
	EOF
	turns_sent=$((turns_sent + 2 * $1))
}
turns_seen() {
	local c s
	c=$(fp_nft_counters "$C" table inet turns)
	s=$(fp_nft_counters "$S" table inet turns)
	echo $((c + s))
}
turns_arrived() { [ "$(turns_seen)" -ge "$turns_sent" ]; }
# A turn makes the flow established, the next offloads it.
turns_offloaded() {
	ip netns exec "$R" conntrack -L -f ipv4 -p udp --dport 7102 2>/dev/null |
		grep -q OFFLOAD
}
bulks() { fp_stat "$R" "t['bulks']"; }
turns 2
check "both directions: flow offloaded" busywait 10000 turns_offloaded
check "both directions: warm-up delivered" busywait 10000 turns_arrived
t0=$(taken)
b0=$(bulks)
echo 1 >"$hold"
turns 4
check "both directions: 8 packets taken and held" \
	busywait 10000 eval "[ \"\$(taken)\" -ge $((t0 + 8)) ]"
echo 0 >"$hold"
check "both directions: delivered" busywait 10000 turns_arrived
echo "INFO: both directions: 8 packets in $(($(bulks) - b0)) bulks"
check "both directions: one bulk per packet, the flow never in two open bulks" \
	test "$(($(bulks) - b0))" = 8
echo "INFO: both directions: $((SECONDS - turns_t0)) s"

echo 0 >"$hold"
fp_genl "$R" detach inet fp ft
exit "$ret"
