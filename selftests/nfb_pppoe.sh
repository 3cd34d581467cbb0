#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# PPPoE end to end through the module.
#
#   C: c0 (no address)    pppc 10.0.4.1 fd00:4::1, PPPoE client (pppd,
#                         kernel plugin), session 4660
#      c0.10 (802.1Q 10)  pppc2 10.0.5.1, PPPoE client inside VLAN 10,
#                         session 4661
#   R: r0 (no address)    pppr 10.0.4.254 fd00:4::fe, PPPoE server side
#                         (pppd, kernel plugin attached to the session
#                         nfb_pppoe.py's access concentrator handed out)
#      r0.10              pppr2 10.0.5.254, the same inside VLAN 10
#      r1 10.0.2.254 fd00:2::254
#   S: s0 10.0.2.1 fd00:2::1
# Flowtable on r0 r1: a flow through pppr resolves (dev_fill_forward_path)
# to r0 with a PPPoE session encapsulation, one through pppr2 to r0 with
# a VLAN tag and a PPPoE session.
#
# Cases, each way (PPPoE -> Ethernet: arrives on r0 encapsulated, taken as
# pppoe or vlan_pppoe; Ethernet -> PPPoE: arrives plain on r1, taken as
# none, leaves with the header(s) pushed): IPv4, IPv6 (PPP protocol 0x57),
# and IPv4 in a PPPoE session inside VLAN 10.
# For each: the data arrives complete, intact and in order; at least 99 %
# of the stream was taken by the module; conntrack shows the flow
# [OFFLOAD]; captures on c0 and s0 show every data packet in the session
# (right session id, VLAN id and MAC addresses) on the PPPoE side and
# plain on the other.
#
# NFB_PPPOE_STOCK=1: the same without the module (the stock flowtable
# alone): the module's counters are not checked, the forward chain must
# have seen at most 1 % of each stream instead.
# nfb-timeout: 900
# nfb-long
set -eu
# shellcheck source=selftests/lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=tools/testing/lib/fastpath.sh
source "$NFB_LIB/fastpath.sh"
# shellcheck source=tools/testing/lib/ppp.sh
source "$NFB_LIB/ppp.sh"

nfb_require_tool ip nft python3 tcpdump pppd conntrack

PY=("$NFB_LIB/nfb_encap.py")
N=500
# The IPv6 and VLAN cases send fewer: they add code paths, not volume.
N_MORE=200
SID=4660
SID2=4661
stock=${NFB_PPPOE_STOCK:-0}
CAP_PIDS=()

# shellcheck disable=SC2317 # called through the EXIT trap
cleanup() {
	cap_stop
	xmit_probe off
	if [ -n "$record_cmd" ]; then echo "$record_cmd" >"$TRACE/options/record-cmd"; fi
	nfb_ppp_stop
	cleanup_all_ns
	fp_cleanup_tmp
	if nfb_module_loaded; then nfb_unload_module; fi
}
trap cleanup EXIT

# pppd_start NS LOG OPTION...: nfb_pppd (ppp.sh), its PID kept.
pppd_start() {
	local ns=$1 log=$2
	shift 2
	nfb_pppd "$ns" "$plugin" "$log" debug "$@"
	NFB_PPP_PIDS+=("$NFB_PPPD_PID")
}

# session NAME R_IF C_IF SID R_PPP C_PPP ADDRS PPPD_OPTION...: discovery
# on R's R_IF (nfb_pppoe.py's access concentrator), C's pppd on C_IF
# (device C_PPP), then R's pppd (device R_PPP) joined to the session it
# got; ADDRS is R's:C's IPv4 address. Sets sid and cmac (the client's MAC
# address).
session() {
	local name=$1 ifname=$2 ifname_c=$3 want=$4 sdev=$5 cdev=$6 addrs=$7
	local f=$FP_TMP/session.$1
	shift 7
	ip netns exec "$R" python3 "$NFB_LIB/nfb_pppoe.py" ac "$ifname" "$want" "$f" &
	busywait 30000 test -e "$f.ready"
	pppd_start "$C" "$FP_TMP/pppd-client-$name.log" "nic-$ifname_c" ifname "$cdev" \
		noipdefault "$@"
	if ! busywait 60000 test -s "$f"; then
		ppp_logs
		log_fail "topology: no PPPoE discovery ($name)"
		exit "$ksft_fail"
	fi
	read -r sid cmac <"$f"
	echo "INFO: PPPoE session $sid with $cmac ($name)"
	pppd_start "$R" "$FP_TMP/pppd-server-$name.log" "nic-$ifname" ifname "$sdev" \
		pppoe-sess "$sid:$cmac" "$addrs" "$@"
	if ! busywait 60000 nfb_has_addr "$C" "$cdev" "${addrs#*:}" ||
		! busywait 30000 nfb_has_addr "$R" "$sdev" "${addrs%:*}"; then
		ppp_logs
		log_fail "topology: the PPP link did not come up ($name)"
		exit "$ksft_fail"
	fi
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
	ip -n "$R" addr add fd00:2::254/64 dev r1 nodad
	ip -n "$S" addr add 10.0.2.1/24 dev s0
	ip -n "$S" addr add fd00:2::1/64 dev s0 nodad
	for l in "$C c0" "$R r0" "$R r1" "$S s0"; do
		read -r ns dev <<<"$l"
		ip -n "$ns" link set "$dev" up
	done
	ip -n "$C" link add link c0 name c0.10 type vlan id 10
	ip -n "$R" link add link r0 name r0.10 type vlan id 10
	ip -n "$C" link set c0.10 up
	ip -n "$R" link set r0.10 up
	ip -n "$S" route add default via 10.0.2.254
	ip -n "$S" -6 route add default via fd00:2::254
	ip netns exec "$R" sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1

	# One session at a time: an access concentrator on r0 would also
	# see the tagged discovery of the client on c0.10.
	session plain r0 c0 "$SID" pppr pppc 10.0.4.254:10.0.4.1 +ipv6
	sid1=$sid
	r_pppd_plain=${NFB_PPP_PIDS[-1]}
	session vlan r0.10 c0.10 "$SID2" pppr2 pppc2 10.0.5.254:10.0.5.1
	sid2=$sid
	if ! busywait 30000 nfb_has_ll6 "$C" pppc || ! busywait 30000 nfb_has_ll6 "$R" pppr; then
		ppp_logs
		log_fail "topology: IPV6CP did not come up"
		exit "$ksft_fail"
	fi
	ip -n "$C" addr add fd00:4::1/64 dev pppc nodad
	ip -n "$R" addr add fd00:4::fe/64 dev pppr nodad
	ip -n "$C" route add 10.0.2.0/24 dev pppc
	ip -n "$C" -6 route add fd00:2::/64 dev pppc
	ip -n "$C" rule add from 10.0.5.1 table 5
	ip -n "$C" route add default dev pppc2 table 5
	echo "INFO: R: $(tc -n "$R" qdisc show dev pppr)"
	echo "INFO: C's /proc/net/pppoe: $(ip netns exec "$C" tail -n +2 /proc/net/pppoe)"

	fp_ruleset -l udp
	local a
	for a in "10.0.4.1 10.0.2.1" "fd00:4::1 fd00:2::1" "10.0.5.1 10.0.2.1"; do
		read -r src dst <<<"$a"
		busywait 30000 ip netns exec "$C" ping -c1 -W1 -q -I "$src" "$dst" >/dev/null ||
			{ ppp_logs; log_fail "topology: $src -> $dst"; exit "$ksft_fail"; }
	done
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
		busywait 30000 nfb_file_has "$FP_TMP/$dev.err" "listening on"
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
# declined_encap forward_chain all_fallbacks"
counters() {
	local m="0 0 0 0" fb=0
	if [ "$stock" != 1 ]; then
		m=$(fp_stat "$R" "'%d %d %d %d %d' % (t['taken_encap']['$1'], t['taken_xmit']['$2'], t['fallback']['qdisc'], t['decline']['encap'], sum(t['fallback'].values()))")
		fb=${m##* }
		m=${m% *}
	fi
	echo "$m $(fp_nft_counters "$R" chain inet fp fwdchain) $fb"
}

# offloaded LISTING: conntrack's listing of the flow shows it offloaded.
offloaded() {
	[[ "$1" == *OFFLOAD* ]]
}

# run_case NAME SND SRC RCV DST PORT ENC XMIT N SID VLAN
# N datagrams from SRC in SND to DST in RCV; ENC / XMIT: the taken_encap
# and taken_xmit counters they must land in; on c0 they travel in PPPoE
# session SID, inside VLAN VLAN unless it is "-".
run_case() {
	local name=$1 snd=$2 src=$3 rcv=$4 dst=$5 port=$6 enc=$7 xm=$8 n=$9
	local psid=${10} vid=${11}
	local e0 x0 q0 d0 f0 e1 x1 q1 d1 f1 all good ppp sel where ct l3=ip fam=ipv4
	local min=$((n * 99 / 100))

	case "$dst" in *:*) l3=ip6 fam=ipv6 ;; esac
	fp_stream_recv "$rcv" "$dst" "$port"
	cap_start
	read -r e0 x0 q0 d0 f0 case_fb0 < <(counters "$enc" "$xm")
	# For direct_case: its fallbacks' first reading (nothing is forwarded
	# between its capture's start and here).
	case_q0=$q0
	# One CPU sends, so one CPU of the router receives (order).
	if ! ip netns exec "$snd" taskset -c 0 python3 "${PY[@]}" send "$src" "$dst" "$port" "$n"; then
		log_fail "$name: the sender failed (no echo from the receiver, or a send error above)"
		ret=1
		cap_stop
		return
	fi
	# First, before the flowtable's 30 s idle timeout can end the flow
	# on a slow guest; one listing, shown and checked.
	ct=$(ip netns exec "$R" conntrack -L -f "$fam" -p udp --dport "$port" 2>/dev/null) || true
	echo "INFO: $name: conntrack: $ct"
	check "$name: conntrack shows the flow [OFFLOAD]" offloaded "$ct"
	check "$name: $n datagrams arrived complete, intact, in order" fp_stream_verdict "$port" "$n"
	read -r e1 x1 q1 d1 f1 _ < <(counters "$enc" "$xm")
	cap_stop "$n"
	if [ "$stock" = 1 ]; then
		echo "INFO: $name: stock flowtable, slow path $((f1 - f0))"
		check "$name: <= 1 % through the forward chain (stock flowtable)" \
			test $((f1 - f0)) -le $((n - min))
	else
		echo "INFO: $name: taken as $enc $((e1 - e0)), as $xm $((x1 - x0)), fallback qdisc $((q1 - q0)), declined as encap $((d1 - d0)), slow path $((f1 - f0))"
		check "$name: >= 99 % taken by the module as $enc" \
			test $((e1 - e0)) -ge "$min"
		check "$name: >= 99 % taken by the module as $xm transmit" \
			test $((x1 - x0)) -ge "$min"
	fi

	# The wire. PPPoE side (c0): every data packet in session PSID
	# (inside VLAN VID) between the client's and the router's MAC
	# addresses; "vlan" and "pppoes" move the offsets of what follows
	# them, so they go after the MAC checks, in the order of the headers.
	sel="$l3 and dst host $dst and udp dst port $port"
	if [ "$snd" = "$C" ]; then
		ppp="ether src $cmac and ether dst $rmac"
	else
		ppp="ether src $rmac and ether dst $cmac"
	fi
	where="PPPoE session $psid"
	if [ "$vid" != - ]; then
		ppp="$ppp and vlan $vid"
		where="$where inside VLAN $vid"
	fi
	ppp="$ppp and pppoes $psid and $sel and greater 500"
	all=$(cap_count c0 "greater 500")
	good=$(cap_count c0 "$ppp")
	echo "INFO: $name: c0: $all data packets, $good match '$ppp'"
	check "$name: c0 (PPPoE side): all $n data packets in $where" \
		test "$good" -eq "$n" -a "$all" -eq "$n"
	# Plain side (s0): no tag, no PPPoE header, the IP packet right
	# after the Ethernet header.
	all=$(cap_count s0 "greater 500")
	good=$(cap_count s0 "$sel and greater 500")
	ppp=$(cap_count s0 "(pppoes or vlan) and greater 500")
	echo "INFO: $name: s0: $all data packets, $good plain '$sel', $ppp PPPoE or tagged"
	check "$name: s0 (plain side): all $n data packets plain $l3, none PPPoE or tagged" \
		test "$good" -eq "$n" -a "$all" -eq "$n" -a "$ppp" -eq 0
}

# 6.1 / 6.12, net.netfilter.nf_flow_bulk_pppoe_direct: off by default,
# the stream into the session goes through pppr (the PPP unit's own
# work: filters, pppd's idle time, compression), which a capture on pppr
# sees. On, and pppr without a qdisc, the module stands in for pppr: the
# bulks go to r0 with the
# PPPoE and PPP headers pushed (run_case checks them on the wire), pppr's
# transmit (ppp_start_xmit(), a kprobe counts its calls) sees none of the
# stream (only the slow path's first packets), yet a capture on pppr sees
# all of it, as on the stock path, and
# pppr counts it; nothing falls back; with a qdisc on pppr the stream
# goes through it. A session inside a VLAN is not
# stood in for. The session ending under a stream must leave the kernel
# quiet and send nothing more in it once its PPP device is gone.
ppp_txp() {
	ip -n "$R" -s -j link show "$1" | jq '.[0].stats64.tx.packets'
}
taken_at_least() {
	[ "$(fp_stat "$R" "t['taken_xmit']['neigh']")" -ge "$1" ]
}
dev_gone() {
	! ip -n "$1" link show "$2" >/dev/null 2>&1
}
pppoe_direct() {
	ip netns exec "$R" sysctl -qw "net.netfilter.nf_flow_bulk_pppoe_direct=$1"
}
fallbacks() {
	fp_stat "$R" "'%d %d' % (t['fallback']['qdisc'], sum(t['fallback'].values()))"
}
# xmit_probe on|off: a kprobe on ppp_start_xmit(); xmit_calls: its hits.
TRACE=/sys/kernel/tracing
record_cmd=
xmit_probe() {
	if [ "$1" = on ]; then
		[ -d "$TRACE/events" ] || mount -t tracefs nodev "$TRACE"
		# No task names: see nfb_txq.sh (record-cmd patches __schedule()).
		record_cmd=$(cat "$TRACE/options/record-cmd")
		echo 0 >"$TRACE/options/record-cmd"
		echo "p:nfb_ppp/nfb_ppp_xmit ppp_start_xmit" >>"$TRACE/kprobe_events"
		echo 1 >"$TRACE/events/nfb_ppp/nfb_ppp_xmit/enable"
	elif [ -d "$TRACE/events/nfb_ppp" ]; then
		echo 0 >"$TRACE/events/nfb_ppp/nfb_ppp_xmit/enable"
		echo "-:nfb_ppp/nfb_ppp_xmit" >>"$TRACE/kprobe_events"
	fi
}
xmit_calls() {
	awk '$1 == "nfb_ppp_xmit" || $1 == "nfb_ppp/nfb_ppp_xmit" { print $2 }' "$TRACE/kprobe_profile"
}
# cap_on NS DEV FILE: a capture on DEV in NS into $FP_TMP/FILE.pcap; sets
# cap_pid.
cap_on() {
	rm -f "$FP_TMP/$3.pcap" "$FP_TMP/$3.err"
	ip netns exec "$1" tcpdump -i "$2" -nn -U -B 8192 -w "$FP_TMP/$3.pcap" \
		2>"$FP_TMP/$3.err" &
	cap_pid=$!
	busywait 30000 nfb_file_has "$FP_TMP/$3.err" "listening on"
}
cap_off() {
	kill -INT "$cap_pid" 2>/dev/null || true
	wait "$cap_pid" 2>/dev/null || true
}
# direct_case NAME DEV SRC DST PORT N SID [VID]: run_case from S into the
# session on DEV (in VLAN VID); sets d_seen (data datagrams to PORT a capture
# on DEV saw), d_tx (DEV's transmit counter's increase), d_x (calls of a PPP
# device's transmit), d_q and d_fb (the module's qdisc and all fallbacks'
# increases).
direct_case() {
	local name=$1 dev=$2 src=$3 dst=$4 port=$5 n=$6 psid=$7 vid=${8:--}
	local t0 q1 f1 x0
	t0=$(ppp_txp "$dev")
	x0=$(xmit_calls)
	cap_on "$R" "$dev" ppp
	# run_case reads the fallbacks first (case_q0, case_fb0).
	run_case "$name" "$S" "$src" "$C" "$dst" "$port" none neigh "$n" "$psid" "$vid"
	cap_off
	d_seen=$(tcpdump -r "$FP_TMP/ppp.pcap" -nn "udp dst port $port and greater 500" 2>/dev/null | wc -l)
	d_tx=$(($(ppp_txp "$dev") - t0))
	d_x=$(($(xmit_calls) - x0))
	read -r q1 f1 < <(fallbacks)
	d_q=$((q1 - case_q0)) d_fb=$((f1 - case_fb0))
	echo "INFO: $name: $dev: capture $d_seen, tx packets +$d_tx, ppp_start_xmit() calls +$d_x; fallbacks qdisc +$d_q, all +$d_fb"
}
modprobe pppoe
plugin=$(nfb_ppp_plugin) || nfb_cannot_run "no kernel PPPoE plugin for pppd"
[ "$stock" = 1 ] || nfb_load_module
fp_tmpdir
topology
[ "$stock" = 1 ] || fp_genl "$R" attach inet fp ft
if [ "$stock" != 1 ] && ! fp_kernel_pushes_encap; then xmit_probe on; fi

cmac=$(mac_of "$C" c0)
rmac=$(mac_of "$R" r0)

# Into the session: the route's PPP device pushes the PPPoE header on 6.1
# and 6.12 (a NEIGH flow through pppr); from 6.19 the flow resolves to r0
# with the session's peer as a cached destination (DIRECT), and the stock
# hook, as the module, pushes the header itself.
to_ppp=neigh
if fp_kernel_pushes_encap; then to_ppp=direct; fi

run_case "pppoe -> ethernet" "$C" 10.0.4.1 "$S" 10.0.2.1 6001 pppoe neigh "$N" "$sid1" -
if [ "$stock" != 1 ] && ! fp_kernel_pushes_encap; then
	# With pppoe_direct 0, the default: through pppr.
	direct_case "ethernet -> pppoe" pppr 10.0.2.1 10.0.4.1 6002 "$N" "$sid1"
	check "pppoe_direct 0: the stream went through pppr (captured $d_seen of $N)" \
		test "$d_seen" -ge "$N"
else
	run_case "ethernet -> pppoe" "$S" 10.0.2.1 "$C" 10.0.4.1 6002 none "$to_ppp" "$N" "$sid1" -
fi
run_case "ipv6: pppoe -> ethernet" "$C" fd00:4::1 "$S" fd00:2::1 6003 pppoe neigh \
	"$N_MORE" "$sid1" -
run_case "ipv6: ethernet -> pppoe" "$S" fd00:2::1 "$C" fd00:4::1 6004 none "$to_ppp" \
	"$N_MORE" "$sid1" -
run_case "vlan 10 + pppoe -> ethernet" "$C" 10.0.5.1 "$S" 10.0.2.1 6005 vlan_pppoe neigh \
	"$N_MORE" "$sid2" 10
run_case "ethernet -> vlan 10 + pppoe" "$S" 10.0.2.1 "$C" 10.0.5.1 6006 none "$to_ppp" \
	"$N_MORE" "$sid2" 10

if [ "$stock" != 1 ] && ! fp_kernel_pushes_encap; then
	check "nf_flow_bulk_pppoe_direct is 0 by default" \
		test "$(ip netns exec "$R" sysctl -n net.netfilter.nf_flow_bulk_pppoe_direct)" = 0
	check "nf_flow_bulk_pppoe_direct=2 refused" eval '! pppoe_direct 2'
	check "nf_flow_bulk_pppoe_direct=-1 refused" eval '! pppoe_direct -1'

	check "nf_flow_bulk_pppoe_direct=1 accepted" pppoe_direct 1
	# A PPP device gets the default qdisc; the module stands in only for
	# one without (as for a VLAN device).
	tc -n "$R" qdisc replace dev pppr root noqueue
	direct_case "ethernet -> pppoe (pppoe_direct 1)" pppr 10.0.2.1 10.0.4.1 6012 "$N" "$sid1"
	# The flow's first packets take the slow path, through pppr.
	check "pppoe_direct 1: the module stood in for pppr (its transmit called $d_x times, under 10)" \
		test "$d_x" -lt 10
	check "pppoe_direct 1: a capture on pppr saw the stream as on the stock path ($d_seen of $N)" \
		test "$d_seen" -eq "$N"
	# Where the PPP unit keeps its counters private (6.12.95: no per-CPU
	# counters of the core), the module cannot count there and says so.
	if [ "$d_tx" -lt "$N" ] && dmesg | grep -q 'keeps its transmit counters to itself'; then
		echo "INFO: this kernel's PPP device keeps its counters private: not counted (+$d_tx)"
		check "pppoe_direct 1: pppr's private counters left alone (+$d_tx, under 10)" \
			test "$d_tx" -lt 10
	else
		check "pppoe_direct 1: pppr counted what the module sent for it (+$d_tx, at least $N)" \
			test "$d_tx" -ge "$N"
	fi
	check "pppoe_direct 1: nothing fell back to pppr (fallbacks +$d_fb)" test "$d_fb" -eq 0

	direct_case "ipv6: ethernet -> pppoe (pppoe_direct 1)" pppr fd00:2::1 fd00:4::1 6013 \
		"$N_MORE" "$sid1"
	check "ipv6, pppoe_direct 1: stood in for pppr (its transmit called $d_x times, under 10; fallbacks +$d_fb), its capture saw $d_seen of $N_MORE" \
		test "$d_x" -lt 10 -a "$d_fb" -eq 0 -a "$d_seen" -eq "$N_MORE"

	direct_case "ethernet -> vlan 10 + pppoe (pppoe_direct 1)" pppr2 10.0.2.1 10.0.5.1 6014 \
		"$N_MORE" "$sid2" 10
	check "pppoe_direct 1, a session inside a VLAN: through pppr2 (captured $d_seen of $N_MORE)" \
		test "$d_seen" -ge "$N_MORE"

	tc -n "$R" qdisc replace dev pppr root pfifo limit 1000
	direct_case "ethernet -> pppoe (pppoe_direct 1, a qdisc on pppr)" pppr 10.0.2.1 10.0.4.1 \
		6015 "$N_MORE" "$sid1"
	check "pppoe_direct 1, a qdisc on pppr: the stream went through it (captured $d_seen, fallback qdisc +$d_q, at least $N_MORE)" \
		test "$d_seen" -ge "$N_MORE" -a "$d_q" -ge "$N_MORE"
	tc -n "$R" qdisc replace dev pppr root noqueue

	# The session ends under a stream: R's pppd goes (LCP terminate),
	# pppr with it, while S still sends. Once pppr is gone, no data frame
	# in the session on c0 (the capture's time stamps against the time
	# pppr was seen gone, which is later than when it went).
	cap_on "$C" c0 end
	fp_stream_recv "$C" 10.0.4.1 6016
	taken0=$(fp_stat "$R" "t['taken_xmit']['neigh']")
	ip netns exec "$S" python3 "${PY[@]}" send 10.0.2.1 10.0.4.1 6016 6000 >/dev/null 2>&1 &
	sender=$!
	check "session end: the stream is under way (100 taken by the module)" \
		busywait 60000 taken_at_least $((taken0 + 100))
	kill "$r_pppd_plain"
	check "session end: pppr gone" busywait 30000 dev_gone "$R" pppr
	gone=$(date +%s.%N)
	check "session end: the stream went on after it (sender still running)" kill -0 "$sender"
	wait "$sender" 2>/dev/null || true
	cap_off
	read -r before after < <(tcpdump -tt -r "$FP_TMP/end.pcap" -nn -e pppoes 2>/dev/null |
		awk -v ses="$(printf 'ses 0x%x' "$sid1")" -v gone="$gone" '
			index($0, ses) && /\.6016: UDP/ { if ($1 + 0 > gone + 0) n++; else b++ }
			END { print b + 0, n + 0 }')
	echo "INFO: session end: $before data frames in session $sid1 before pppr was seen gone, $after after"
	check "session end: data frames in the session before pppr went ($before)" \
		test "$before" -ge 100
	check "session end: no data frame in the session once pppr was gone ($after)" \
		test "$after" -eq 0
	pppoe_direct 0
fi

if [ "$stock" != 1 ]; then
	echo "INFO: module: $(fp_stat "$R" '{k: t[k] for k in ("packets", "bulks", "taken_encap", "taken_xmit", "fallback")}')"
	echo "INFO: module declines: $(fp_stat "$R" '{k: v for k, v in t["decline"].items() if v}')"
	fp_genl "$R" detach inet fp ft
fi
exit "$ret"
