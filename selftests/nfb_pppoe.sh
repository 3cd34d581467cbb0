#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# PPPoE end to end through the module.
#
#   C: c0 (no address)    pppc 10.0.4.1, PPPoE client (pppd, kernel plugin)
#   R: r0 (no address)    pppr 10.0.4.254, PPPoE server side (pppd, kernel
#                         plugin attached to the session nfb_pppoe.py's
#                         access concentrator handed out on r0)
#      r1 10.0.2.254
#   S: s0 10.0.2.1
# Flowtable on r0 r1: the flow through pppr resolves (dev_fill_forward_path)
# to r0 with a PPPoE session encapsulation.
#
# Cases: PPPoE -> Ethernet (C to S: arrives on r0 in a PPPoE session, taken
# as encapsulation pppoe) and Ethernet -> PPPoE (S to C: arrives plain on r1,
# taken as none, leaves through pppr and so in the PPPoE session on r0).
# For each: the data arrives complete, intact and in order; at least 99 %
# of the stream was taken by the module; conntrack shows the flow
# [OFFLOAD]; captures on c0 and s0 show every data packet in the session
# (right session id and MAC addresses) on the PPPoE side and plain on the
# other.
#
# NFB_PPPOE_STOCK=1: the same without the module (the stock flowtable
# alone): the module's counters are not checked, the forward chain must
# have seen at most 1 % of each stream instead.
set -eu
# shellcheck source=selftests/lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=selftests/lib_fastpath.sh
source "$(dirname "$0")/lib_fastpath.sh"

nfb_require_tool ip nft python3 tcpdump pppd conntrack

PY=("$FP_DIR/nfb_encap.py")
N=500
SID=4660
stock=${NFB_PPPOE_STOCK:-0}
PPP_PIDS=()
CAP_PIDS=()

# shellcheck disable=SC2317 # called through the EXIT trap
cleanup() {
	local p
	cap_stop
	# pppd ends its session (LCP terminate, PADT) on SIGTERM.
	for p in "${PPP_PIDS[@]}"; do
		kill "$p" 2>/dev/null || true
	done
	for p in "${PPP_PIDS[@]}"; do
		busywait 10000 pid_gone "$p" || kill -9 "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	PPP_PIDS=()
	cleanup_all_ns
	fp_cleanup_tmp
	if nfb_module_loaded; then nfb_unload_module; fi
}
trap cleanup EXIT

pid_gone() {
	! kill -0 "$1" 2>/dev/null
}

# The kernel PPPoE plugin: pppoe.so (ppp 2.5), rp-pppoe.so (older).
ppp_plugin() {
	local p
	for p in /usr/lib/pppd/*/pppoe.so /usr/lib/pppd/*/rp-pppoe.so; do
		[ -e "$p" ] && { basename "$p"; return 0; }
	done
	return 1
}

# pppd_start NS LOG OPTION...: pppd in NS, in the foreground of a
# background job, without the system's ip-up / ip-down scripts, and with
# nothing negotiated that would change the packets (compression).
pppd_start() {
	local ns=$1 log=$2
	shift 2
	ip netns exec "$ns" pppd plugin "$plugin" noauth nodetach \
		ip-up-script /bin/true ip-down-script /bin/true \
		noccp novj novjccomp noaccomp nopcomp nobsdcomp nodeflate \
		lcp-echo-interval 0 maxfail 1 debug "$@" >"$log" 2>&1 &
	PPP_PIDS+=($!)
}

# has_addr NS DEV ADDR
has_addr() {
	ip -n "$1" -4 addr show dev "$2" 2>/dev/null | grep -q "inet $3 "
}

ppp_logs() {
	local f
	for f in "$FP_TMP"/*.log; do
		[ -e "$f" ] || continue
		sed "s|^|INFO: $(basename "$f"): |" "$f"
	done
}

topology() {
	setup_ns C R S
	ip link add c0 netns "$C" type veth peer name r0 netns "$R"
	ip link add s0 netns "$S" type veth peer name r1 netns "$R"
	ip -n "$R" addr add 10.0.2.254/24 dev r1
	ip -n "$S" addr add 10.0.2.1/24 dev s0
	for l in "$C c0" "$R r0" "$R r1" "$S s0"; do
		read -r ns dev <<<"$l"
		ip -n "$ns" link set "$dev" up
	done
	ip -n "$S" route add default via 10.0.2.254
	ip netns exec "$R" sysctl -qw net.ipv4.ip_forward=1

	# Discovery on r0, then both ends of the session.
	ip netns exec "$R" python3 "$FP_DIR/nfb_pppoe.py" ac r0 "$SID" "$FP_TMP/session" &
	busywait 30000 test -e "$FP_TMP/session.ready"
	pppd_start "$C" "$FP_TMP/pppd-client.log" nic-c0 ifname pppc noipdefault
	if ! busywait 60000 test -s "$FP_TMP/session"; then
		ppp_logs
		log_fail "topology: no PPPoE discovery"
		exit "$ksft_fail"
	fi
	read -r sid cmac <"$FP_TMP/session"
	echo "INFO: PPPoE session $sid with $cmac"
	pppd_start "$R" "$FP_TMP/pppd-server.log" nic-r0 ifname pppr \
		pppoe-sess "$sid:$cmac" 10.0.4.254:10.0.4.1
	if ! busywait 60000 has_addr "$C" pppc 10.0.4.1 ||
		! busywait 30000 has_addr "$R" pppr 10.0.4.254; then
		ppp_logs
		log_fail "topology: the PPP link did not come up"
		exit "$ksft_fail"
	fi
	ip -n "$C" route add 10.0.2.0/24 dev pppc
	echo "INFO: R: $(tc -n "$R" qdisc show dev pppr)"
	echo "INFO: C's /proc/net/pppoe: $(ip netns exec "$C" tail -n +2 /proc/net/pppoe)"

	ip netns exec "$R" nft -f - <<-EOF
	table inet fp {
		flowtable ft { hook ingress priority 0; devices = { r0, r1 }; counter; }
		chain fwdchain {
			type filter hook forward priority filter; policy accept;
			meta l4proto udp flow add @ft
			counter
		}
	}
	EOF
	busywait 30000 ip netns exec "$C" ping -c1 -W1 -q 10.0.2.1 >/dev/null ||
		{ ppp_logs; log_fail "topology: 10.0.4.1 -> 10.0.2.1"; exit "$ksft_fail"; }
}

mac_of() {
	ip -n "$1" -j link show "$2" |
		python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["address"])'
}

# cap_start: capture on c0 (the PPPoE side, in C) and s0 (plain, in S),
# until cap_stop.
cap_start() {
	local l ns dev
	for l in "$C c0" "$S s0"; do
		read -r ns dev <<<"$l"
		rm -f "$FP_TMP/$dev.pcap" "$FP_TMP/$dev.err"
		ip netns exec "$ns" tcpdump -i "$dev" -nn -U -B 8192 \
			-w "$FP_TMP/$dev.pcap" 2>"$FP_TMP/$dev.err" &
		CAP_PIDS+=($!)
		busywait 30000 grep -q "listening on" "$FP_TMP/$dev.err"
	done
}

# cap_stop [N]: stop the captures, once each holds N data packets when N
# is given (tcpdump may still be reading them when the receiver has them).
cap_stop() {
	local p dev
	if [ -n "${1:-}" ]; then
		for dev in c0 s0; do
			busywait 30000 cap_has "$dev" "$1" ||
				echo "INFO: capture on $dev: $(cap_count "$dev" "greater 500") of $1 data packets after 30 s"
		done
	fi
	for p in "${CAP_PIDS[@]}"; do
		kill -INT "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	CAP_PIDS=()
	for dev in c0 s0; do
		[ -e "$FP_TMP/$dev.err" ] || continue
		sed -n "s/^\([1-9][0-9]* packets dropped by kernel\)$/INFO: capture on $dev: \1/p" \
			"$FP_TMP/$dev.err"
	done
}

cap_has() {
	[ "$(cap_count "$1" "greater 500")" -ge "$2" ]
}

# cap_count DEV FILTER: packets of the last capture on DEV that match.
cap_count() {
	tcpdump -r "$FP_TMP/$1.pcap" -nn "$2" 2>/dev/null | wc -l
}

# counters ENC XMIT: "taken_as_ENC taken_as_XMIT fallback_qdisc
# declined_encap forward_chain"
counters() {
	local m="0 0 0 0"
	if [ "$stock" != 1 ]; then
		m=$(fp_stat "$R" "'%d %d %d %d' % (t['taken_encap']['$1'], t['taken_xmit']['$2'], t['fallback']['qdisc'], t['decline']['encap'])")
	fi
	echo "$m $(fp_nft_counters "$R" chain inet fp fwdchain)"
}

# offloaded PORT: conntrack shows the flow to PORT offloaded.
offloaded() {
	ip netns exec "$R" conntrack -L -p udp --dport "$1" 2>/dev/null | grep -q OFFLOAD
}

# run_case NAME SND SRC RCV DST PORT ENC XMIT
# A stream from SRC in SND to DST in RCV; ENC / XMIT: the taken_encap and
# taken_xmit counters it must land in.
run_case() {
	local name=$1 snd=$2 src=$3 rcv=$4 dst=$5 port=$6 enc=$7 xm=$8
	local e0 x0 q0 d0 f0 e1 x1 q1 d1 f1 all good ppp sel
	local min=$((N * 99 / 100))

	fp_stream_recv "$rcv" "$dst" "$port"
	cap_start
	read -r e0 x0 q0 d0 f0 < <(counters "$enc" "$xm")
	# One CPU sends, so one CPU of the router receives (order).
	if ! ip netns exec "$snd" taskset -c 0 python3 "${PY[@]}" send "$src" "$dst" "$port" "$N"; then
		log_fail "$name: the sender failed (no echo from the receiver, or a send error above)"
		ret=1
		cap_stop
		return
	fi
	check "$name: $N datagrams arrived complete, intact, in order" fp_stream_verdict "$port" "$N"
	read -r e1 x1 q1 d1 f1 < <(counters "$enc" "$xm")
	cap_stop "$N"
	echo "INFO: $name: conntrack: $(ip netns exec "$R" conntrack -L -p udp --dport "$port" 2>/dev/null)"
	check "$name: conntrack shows the flow [OFFLOAD]" offloaded "$port"
	if [ "$stock" = 1 ]; then
		echo "INFO: $name: stock flowtable, slow path $((f1 - f0))"
		check "$name: <= 1 % through the forward chain (stock flowtable)" \
			test $((f1 - f0)) -le $((N - min))
	elif fp_kernel_pushes_encap; then
		echo "INFO: $name: declined as encap $((d1 - d0)), taken as $enc $((e1 - e0)), slow path $((f1 - f0))"
		check "$name: >= 99 % declined as encap (this kernel's stock hook pushes PPPoE)" \
			test $((d1 - d0)) -ge "$min" -a $((e1 - e0)) -eq 0
	else
		echo "INFO: $name: taken as $enc $((e1 - e0)), as $xm $((x1 - x0)), fallback qdisc $((q1 - q0)), declined as encap $((d1 - d0)), slow path $((f1 - f0))"
		check "$name: >= 99 % taken by the module as $enc" \
			test $((e1 - e0)) -ge "$min"
		check "$name: >= 99 % taken by the module as $xm transmit" \
			test $((x1 - x0)) -ge "$min"
	fi

	# The wire. PPPoE side (c0): every data packet in session SID between
	# the client's and the router's MAC addresses; "pppoes" moves the
	# offsets of what follows it, so it goes after the MAC checks.
	sel="dst host $dst and udp dst port $port"
	if [ "$snd" = "$C" ]; then
		ppp="ether src $cmac and ether dst $rmac"
	else
		ppp="ether src $rmac and ether dst $cmac"
	fi
	ppp="$ppp and pppoes $sid and $sel and greater 500"
	all=$(cap_count c0 "greater 500")
	good=$(cap_count c0 "$ppp")
	echo "INFO: $name: c0: $all data packets, $good match '$ppp'"
	check "$name: c0 (PPPoE side): all $N data packets in PPPoE session $sid" \
		test "$good" -eq "$N" -a "$all" -eq "$N"
	# Plain side (s0): no PPPoE header, the IPv4 packet right after
	# the Ethernet header.
	all=$(cap_count s0 "greater 500")
	good=$(cap_count s0 "ip and $sel and greater 500")
	ppp=$(cap_count s0 "pppoes and greater 500")
	echo "INFO: $name: s0: $all data packets, $good plain IPv4 '$sel', $ppp PPPoE"
	check "$name: s0 (plain side): all $N data packets plain IPv4, none PPPoE" \
		test "$good" -eq "$N" -a "$all" -eq "$N" -a "$ppp" -eq 0
}

modprobe pppoe
plugin=$(ppp_plugin) || nfb_cannot_run "no kernel PPPoE plugin for pppd"
[ "$stock" = 1 ] || nfb_load_module
fp_tmpdir
topology
[ "$stock" = 1 ] || fp_genl "$R" attach inet fp ft

cmac=$(mac_of "$C" c0)
rmac=$(mac_of "$R" r0)

run_case "pppoe -> ethernet" "$C" 10.0.4.1 "$S" 10.0.2.1 6001 pppoe neigh
run_case "ethernet -> pppoe" "$S" 10.0.2.1 "$C" 10.0.4.1 6002 none neigh

if [ "$stock" != 1 ]; then
	echo "INFO: module: $(fp_stat "$R" '{k: t[k] for k in ("packets", "bulks", "taken_encap", "taken_xmit", "fallback")}')"
	echo "INFO: module declines: $(fp_stat "$R" '{k: v for k, v in t["decline"].items() if v}')"
	fp_genl "$R" detach inet fp ft
fi
exit "$ret"
