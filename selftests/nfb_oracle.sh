#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Differential oracle: the same seeded traffic through the router twice,
# once with the stock flowtable alone and once with the module attached;
# what reaches the server and the ICMP errors that come back to the client
# must be the same, packet for packet and in the same order per flow, with
# the same MAC addresses, VLAN tags and PPPoE sessions, and must be what
# was sent.
#
#   nfb_oracle.sh [--seed N] [--gro-batch N] [--topology T[,T...]]
#
# --seed N (or NFB_ORACLE_SEED=N; default 1, "random" draws one) seeds the
# traffic; --gro-batch N (NFB_ORACLE_GRO_BATCH) sets net.core.gro_normal_batch
# for both runs (default 1, see below); --topology (NFB_ORACLE_TOPOLOGY)
# picks the topologies, "all" (the default) runs plain, vlan, bridge and
# pppoe one after the other, each a pair of runs with its own verdict lines
# prefixed by its name. A failure prints the seed, the topology, the first
# differing packet per flow and the command that reproduces it.
#
# Topologies (C - R - S, flowtable ft on R's real devices r0 r1, r1's side
# at MTU 1280 on the device that holds the addresses):
#   plain   fastpath.sh's fp_topology: addresses on c0, r0, r1, s0.
#   vlan    C's side tagged 802.1Q 10 (c0.10, r0.10), S's side 20 (r1.20,
#           s0.20), addresses on the VLAN devices: R pops tag 10 on
#           receive and pushes 20 on transmit. The module must count what
#           it takes as vlan (taken_encap), on every kernel: from 6.19,
#           whose stock hook pushes the tag itself on the real device, the
#           module does too.
#   bridge  S behind R's bridge br0 (port r1, addresses on br0): the C -> S
#           flows transmit with cached MAC addresses
#           (FLOW_OFFLOAD_XMIT_DIRECT, taken_xmit direct).
#   pppoe   C's side a PPPoE session over c0 - r0 (pppd with the kernel
#           plugin on both ends, ppp.sh; discovery answered by
#           nfb_pppoe.py's access concentrator on r0, as in nfb_pppoe.sh),
#           the addresses on the PPP devices pppc and pppr (MTU 1492, IPv6
#           after IPV6CP); S's side as in plain. The flowtable on r0 r1
#           resolves pppr to r0 with a PPPoE session: R pops the PPPoE
#           header on receive, and the module must count what it takes as
#           pppoe (taken_encap). C's frames carry the
#           session header; the ICMP errors must come back in the session.
#           A flow's data packet after one of its packets for the slow path
#           starts a new burst (nfb_oracle.py make_plan(): PPPoE hands those
#           to the PPP device through the backlog, after the poll, so the
#           stock path itself would let the data overtake them).
# C's and S's frames carry their side's tag in their bytes; the captures
# read a tag both from skb->vlan_tci (PACKET_AUXDATA) and from the bytes.
#
# The traffic (nfb_oracle.py): 8 flows (UDP, TCP x IPv4, IPv6 x masquerade
# or not), offloaded by warm-up packets before anything is measured, then
# packets of random sizes in bursts (about 250 in plain, about 150 in the
# others): mostly data, mixed with packets of those offloaded flows that
# must take the slow path: IPv4 options, over the egress MTU with DF (ICMP
# frag-needed) and without (fragmented), IPv6 over the MTU (packet too big),
# TTL / hop limit 1 (time exceeded), and each TCP flow ends with a FIN or a
# RST.
#
# Bursts: the module reorders only what waits in its per-CPU queue, so
# the router must receive several packets in one NAPI poll. r0 and r1 run
# veth NAPI (GRO on, TSO off on the peers), threaded, the NAPI kthreads
# pinned to the generator's CPU; the generator sends each burst as
# SCHED_FIFO, so the kthread polls the whole burst at once. The module's
# bulk-size histogram must show bulks of 2 or more, else the test fails.
# Under TCG: 52-206 s for plain, vlan and bridge with up to three other
# guests busy on a 2-core host (the plain one alone took up to ~280 s on a
# busy host); all four 70 s on 6.1 and 109 s on 6.12, pppoe alone 49 s and
# 57 s (its PPP set-up included), with one other guest busy (load about 3):
# nfb-timeout: 600
set -eu
# shellcheck source=selftests/lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=tools/testing/lib/fastpath.sh
source "$NFB_LIB/fastpath.sh"
# shellcheck source=tools/testing/lib/ppp.sh
source "$NFB_LIB/ppp.sh"

seed=${NFB_ORACLE_SEED:-1}
gro_batch=${NFB_ORACLE_GRO_BATCH:-1}
topologies=${NFB_ORACLE_TOPOLOGY:-all}
usage="usage: $0 [--seed N] [--gro-batch N] [--topology plain|vlan|bridge|pppoe|all[,...]]"
while [ $# -gt 0 ]; do
	case "$1" in
	--seed) seed=${2:?--seed N}; shift 2 ;;
	--gro-batch) gro_batch=${2:?--gro-batch N}; shift 2 ;;
	--topology) topologies=${2:?--topology T}; shift 2 ;;
	*) echo "$usage" >&2; exit "$ksft_fail" ;;
	esac
done
[ "$seed" != random ] || seed=$((RANDOM * 32768 + RANDOM))
case "$seed$gro_batch" in
'' | *[!0-9]*) echo "seed and batch are numbers: $seed $gro_batch" >&2; exit "$ksft_fail" ;;
esac
topos=()
for t in ${topologies//,/ }; do
	case "$t" in
	all) topos+=(plain vlan bridge pppoe) ;;
	plain | vlan | bridge | pppoe) topos+=("$t") ;;
	*) echo "unknown topology '$t'; $usage" >&2; exit "$ksft_fail" ;;
	esac
done
[ ${#topos[@]} -gt 0 ] || { echo "$usage" >&2; exit "$ksft_fail"; }

nfb_require_tool ip bridge nft python3 ethtool conntrack
ppp_plugin=
case " ${topos[*]} " in
*" pppoe "*)
	nfb_require_tool pppd
	ppp_plugin=$(nfb_ppp_plugin) || nfb_cannot_run "no kernel PPPoE plugin for pppd"
	modprobe pppoe
	;;
esac

ORACLE=("$NFB_REPO/selftests/nfb_oracle.py")
SYSCTL_RESTORE=()
# The topology being run, and R's device on S's side (its addresses, MTU
# 1280, masquerade, neighbours).
topo=
RS_DEV=
# pppoe: the session id R's access concentrator hands out.
PPPOE_SID=4660

# shellcheck disable=SC2317 # called through the EXIT trap
cleanup() {
	local s
	nfb_ppp_stop
	cleanup_all_ns
	fp_cleanup_tmp
	for s in "${SYSCTL_RESTORE[@]}"; do
		sysctl -qw "$s" || true
	done
	if nfb_module_loaded; then nfb_unload_module; fi
}
trap cleanup EXIT

repro() {
	local env="NFB_ORACLE_SEED=$seed NFB_ORACLE_TOPOLOGY=$topo"
	[ "$gro_batch" = 1 ] || env="$env NFB_ORACLE_GRO_BATCH=$gro_batch"
	[ -z "${NFB_KMOD_DIR:-}" ] || env="$env NFB_KMOD_DIR=$NFB_KMOD_DIR"
	printf 'tools/vm/run --kernel %s -- env %s selftests/run_guest.sh nfb_oracle.sh' \
		"$(uname -r)" "$env"
}

# sysctl_set KEY VALUE in the initial namespace, restored at exit.
sysctl_set() {
	SYSCTL_RESTORE+=("$1=$(sysctl -n "$1")")
	sysctl -qw "$1=$2"
}

# Fixed MAC addresses (a run's output reads the same in every boot): c0,
# R's r0, R's r1, s0, R's br0 (not r1's: the cached source address of the
# bridge topology's DIRECT transmit must be br0's).
MAC_C=02:00:00:00:01:01
MAC_R0=02:00:00:00:01:fe
MAC_R1=02:00:00:00:02:fe
MAC_S=02:00:00:00:02:01
MAC_BR=02:00:00:00:03:fe

# ns_batch NS: the ip commands on stdin in NS, one process (each one costs
# about a second under TCG on a busy host).
ns_batch() {
	ip -n "$1" -batch -
}

# end_host NS LINK UP DEV NET: an end's set-up in one process: LINK up, the
# ip commands UP, .1 of 10.0.NET.0/24 and fd00:NET::/64 on DEV, default
# routes through R (.254 and ::fe).
end_host() {
	ns_batch "$1" <<-EOF
	link set lo up
	link set $2 up
	$3
	addr add 10.0.$5.1/24 dev $4
	addr add fd00:$5::1/64 dev $4 nodad
	route add default via 10.0.$5.254
	route add default via fd00:$5::fe
	EOF
}

# end_drop NS DEV [IN]: NS's stack never sees the TCP and UDP that IN
# (default DEV; pppoe: C's PPP device) receives (tagged or not: the core
# has moved the tag to vlan_tci by then); DEV, the veth peer of R's, sends
# without TSO.
end_drop() {
	ip netns exec "$1" sh -ec "nft -f -; ethtool -K $2 tso off >/dev/null" <<-EOF
	table netdev oracle {
		chain in {
			type filter hook ingress device ${3:-$2} priority 0;
			meta l4proto { tcp, udp } drop
		}
	}
	EOF
}

# pppd_start NS NAME OPTION...: nfb_pppd (ppp.sh), its output in
# $FP_TMP/$topo/pppd-NAME.log, its PID kept.
pppd_start() {
	local ns=$1 name=$2
	shift 2
	nfb_pppd "$ns" "$ppp_plugin" "$FP_TMP/$topo/pppd-$name.log" debug "$@"
	NFB_PPP_PIDS+=("$NFB_PPPD_PID")
}

# ppp_fail WHAT: the pppd logs and WHAT, and the test ends.
ppp_fail() {
	local f
	for f in "$FP_TMP/$topo"/pppd-*.log; do
		[ -e "$f" ] || continue
		sed "s|^|INFO: $(basename "$f"): |" "$f"
	done
	log_fail "$topo: $1"
	exit "$ksft_fail"
}

# oracle_pppoe: the PPPoE session of the pppoe topology, as nfb_pppoe.sh
# sets it up: discovery on r0 answered by nfb_pppoe.py's access
# concentrator, C's pppd (pppc, 10.0.1.1) on c0, then R's pppd (pppr,
# 10.0.1.254) joined to the session it handed out; once IPV6CP is up,
# fd00:1::1 and fd00:1::fe on them. Sets PPPOE_SID to the session's id.
oracle_pppoe() {
	local f=$FP_TMP/$topo/session ac sid cmac
	rm -f "$f" "$f.ready"
	ip netns exec "$R" python3 "$NFB_LIB/nfb_pppoe.py" ac r0 "$PPPOE_SID" "$f" &
	ac=$!
	busywait 30000 test -e "$f.ready" || ppp_fail "the access concentrator did not start"
	pppd_start "$C" client nic-c0 ifname pppc noipdefault +ipv6
	busywait 60000 test -s "$f" || ppp_fail "no PPPoE discovery"
	wait "$ac" || ppp_fail "the access concentrator failed"
	read -r sid cmac <"$f"
	[ "$cmac" = "$MAC_C" ] || ppp_fail "discovery from $cmac, not from c0 ($MAC_C)"
	PPPOE_SID=$sid
	echo "INFO: $topo: PPPoE session $sid with $cmac"
	pppd_start "$R" server nic-r0 ifname pppr pppoe-sess "$sid:$cmac" \
		10.0.1.254:10.0.1.1 +ipv6
	if ! busywait 60000 nfb_has_addr "$C" pppc 10.0.1.1 ||
		! busywait 30000 nfb_has_addr "$R" pppr 10.0.1.254; then
		ppp_fail "the PPP link did not come up"
	fi
	if ! busywait 30000 nfb_has_ll6 "$C" pppc || ! busywait 30000 nfb_has_ll6 "$R" pppr; then
		ppp_fail "IPV6CP did not come up"
	fi
	ip -n "$C" addr add fd00:1::1/64 dev pppc nodad
	ip -n "$R" addr add fd00:1::fe/64 dev pppr nodad
	echo "INFO: $topo: R: $(ip -n "$R" -o link show dev pppr | grep -o 'pppr: .* mtu [0-9]*')"
}

# The ruleset of R, in $FP_TMP/$topo/ruleset.nft (nfb_oracle.py loads it
# again between the runs): flowtable ft on r0 r1 (the real devices, as
# nfb_encap.sh: the flowtable resolves VLAN and bridge paths to them),
# every TCP and UDP flow offloaded, masquerade for the source ports
# 30000-39999 out of $RS_DEV.
oracle_ruleset() {
	fp_ruleset -w "$FP_TMP/$topo/ruleset.nft" -s "chain post {
		type nat hook postrouting priority srcnat;
		oifname \"$RS_DEV\" meta l4proto { tcp, udp } th sport 30000-39999 masquerade
	}"
}

# oracle_topology: the topology $topo (see the top). C, R and S are new
# namespaces each time (oracle_ns_del removes them); the addresses are
# fastpath.sh's, on the devices of the topology. C and S drop the TCP
# and UDP they receive (their stacks must not answer the generator's
# packets; the captures see them first); R has permanent neighbours and no
# ICMP rate limits, and r0 and r1 receive in threaded veth NAPI mode (the
# bursts). Sets RS_DEV.
oracle_topology() {
	local var name cd=c0 rc=r0 sd=s0 c_up='' r_up='' s_up='' batch='' r_c
	for var in C R S; do
		name="$var-$(mktemp -u XXXXXX)"
		NS_LIST+=("$name")
		printf -v "$var" '%s' "$name"
		batch+="netns add $name"$'\n'
	done
	batch+="link add c0 netns $C address $MAC_C type veth peer name r0 netns $R address $MAC_R0"$'\n'
	batch+="link add s0 netns $S address $MAC_S type veth peer name r1 netns $R address $MAC_R1"
	ip -batch - <<<"$batch"
	case "$topo" in
	plain)
		RS_DEV=r1
		r_up="link set r1 mtu 1280"
		;;
	vlan)
		# The egress MTU on the VLAN device (the route's, which the stock
		# flowtable takes for the flow and the stack for its ICMP
		# errors); r1 keeps 1500.
		cd=c0.10 rc=r0.10 RS_DEV=r1.20 sd=s0.20
		c_up="link add link c0 name c0.10 type vlan id 10
			link set c0.10 up"
		r_up="link add link r0 name r0.10 type vlan id 10
			link add link r1 name r1.20 type vlan id 20
			link set r0.10 up
			link set r1.20 mtu 1280 up"
		s_up="link add link s0 name s0.20 type vlan id 20
			link set s0.20 up"
		;;
	bridge)
		# br0's MTU is the route's; its port r1 keeps 1500.
		RS_DEV=br0
		r_up="link add br0 address $MAC_BR type bridge
			link set r1 master br0
			link set br0 mtu 1280 up"
		;;
	pppoe)
		# C's side's addresses come with the session (oracle_pppoe).
		RS_DEV=r1
		r_up="link set r1 mtu 1280"
		;;
	esac
	r_c="addr add 10.0.1.254/24 dev $rc
	addr add fd00:1::fe/64 dev $rc nodad
	neigh replace 10.0.1.1 lladdr $MAC_C nud permanent dev $rc
	neigh replace fd00:1::1 lladdr $MAC_C nud permanent dev $rc"
	if [ "$topo" = pppoe ]; then
		r_c=''
		ns_batch "$C" <<-EOF
		link set lo up
		link set c0 up
		EOF
	else
		end_host "$C" c0 "$c_up" "$cd" 1
	fi
	ns_batch "$R" <<-EOF
	link set lo up
	link set r0 up
	link set r1 up
	$r_up
	$r_c
	addr add 10.0.2.254/24 dev $RS_DEV
	addr add fd00:2::fe/64 dev $RS_DEV nodad
	neigh replace 10.0.2.1 lladdr $MAC_S nud permanent dev $RS_DEV
	neigh replace fd00:2::1 lladdr $MAC_S nud permanent dev $RS_DEV
	EOF
	end_host "$S" s0 "$s_up" "$sd" 2
	# The flowtable's path to S (for the DIRECT transmit) goes through
	# the bridge's FDB entry for S's address.
	[ "$topo" != bridge ] ||
		bridge -n "$R" fdb replace "$MAC_S" dev r1 master static
	# ICMP limits: per namespace on newer kernels, global on 6.1 (set
	# once, at the start).
	ip netns exec "$R" sh -ec "
		sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1 \
			net.ipv4.icmp_ratelimit=0 net.ipv6.icmp.ratelimit=0 \
			net.ipv4.icmp_msgs_per_sec=100000 net.ipv4.icmp_msgs_burst=100000
		ethtool -K r0 gro on
		ethtool -K r1 gro on
		echo 1 > /sys/class/net/r0/threaded
		echo 1 > /sys/class/net/r1/threaded"
	if [ "$topo" = pppoe ]; then
		oracle_pppoe
		end_drop "$C" c0 pppc
	else
		end_drop "$C" c0
	fi
	oracle_ruleset
	end_drop "$S" s0
	# Nothing to wait for: static addresses without DAD, permanent
	# neighbours, a bridge without STP. The warm-up fails loudly if a
	# packet does not get through.
}

# oracle_ns_del: the pppd end, C, R and S go, in one process.
oracle_ns_del() {
	local ns batch=''
	nfb_ppp_stop
	for ns in "${NS_LIST[@]}"; do
		batch+="netns del $ns"$'\n'
	done
	ip -batch - <<<"$batch"
	NS_LIST=()
}

# oracle_pairrun: both runs (nfb_oracle.py pair), in $FP_TMP/$topo/.
oracle_pairrun() {
	local sess=()
	[ "$topo" != pppoe ] || sess=(--pppoe-session "$PPPOE_SID")
	python3 "${ORACLE[@]}" pair --seed "$seed" --ns "$C" "$R" "$S" \
		--topology "$topo" "${sess[@]}" --dir "$FP_TMP/$topo" \
		--attach inet/fp/ft --ruleset "$FP_TMP/$topo/ruleset.nft" \
		--cpu $(($(nproc) - 1))
}

# On failure the two runs are kept for a look with nfb_oracle.py plan /
# compare.
keep_runs() {
	local dir
	dir=$NFB_REPO/build/selftests/$(uname -r)/nfb_oracle/$topo
	mkdir -p "$dir"
	cp "$FP_TMP/$topo/stock.json" "$FP_TMP/$topo/module.json" "$dir/" 2>/dev/null || true
	echo "$topo: the runs are in $dir (nfb_oracle.py plan|compare)" >&2
}

# oracle_pair: both runs in topology $topo and their verdicts, each check
# prefixed with the topology's name; then the namespaces go.
oracle_pair() {
	local before=$ret status what
	ret=0
	mkdir -p "$FP_TMP/$topo"
	echo "INFO: $topo: seed $seed; reproduce with: $(repro)"
	oracle_topology

	# The reference (the stock flowtable alone), a new flowtable, the
	# module attached, the verdicts (details above, on stderr): one line
	# per run first ("stock flowtable run", "module run"), then the
	# comparisons.
	check "$topo: both runs and their comparison ran (nfb_oracle.py pair)" oracle_pairrun
	if [ -f "$FP_TMP/$topo/verdicts" ]; then
		while read -r status what; do
			check "$topo: $what" test "$status" = ok
		done <"$FP_TMP/$topo/verdicts"
	fi

	if [ "$ret" != 0 ]; then
		keep_runs
		echo "seed $seed, topology $topo failed; reproduce with: $(repro)" >&2
	fi
	ret=$((ret | before))
	oracle_ns_del
}

echo "INFO: seed $seed; topologies ${topos[*]}"
nfb_load_module
fp_tmpdir
for k in net.ipv4.icmp_msgs_per_sec net.ipv4.icmp_msgs_burst; do
	sysctl_set "$k" 100000
done

# GRO hands the stack its packets in lists of gro_normal_batch (8) and the
# list receive passes a list's slow-path packets to IP after the whole list
# went through the ingress hooks, while the stock flowtable sends its
# packets on at once: the stock path itself then lets a flow's later
# packets overtake its earlier slow-path ones. Lists of one keep that
# kernel behaviour out of both runs; --gro-batch 8 shows it.
sysctl_set net.core.gro_normal_batch "$gro_batch"

for topo in "${topos[@]}"; do
	oracle_pair
done
exit "$ret"
