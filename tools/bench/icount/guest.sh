#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# One boot's worth of benchmark points, run inside the guest (tools/bench/run
# boots it with --icount). Prints one JSON object per point on stdout.
#
#   tools/bench/icount/guest.sh [--links "veth virtio"] [--gro "on off list udpfwd"]
#                        [--flows "1 10"] [--train "1 4 32"]
#                        [--qdisc "default noqueue fq_codel mq"]
#                        [--encap "none vlan pppoe ipip"]
#                        [--configs "gen-alone drop-west plain stock bulk"]
#                        [--count N] [--reps N] [--burst N] [--len N]
#                        [--family 4|6] [--headroom N] [--tap none|read|drop]
#                        [--events]
#                        [--nexthops 1|2]
#                        [--nat none|snat] [--vary port|addr]
#
# Configurations:
#   gen-alone  the generator sending into a dummy device (its own cost)
#   drop-west  generator, one hop, received and consumed at west's ingress
#   plain      forwarding through west and east, no nftables
#   stock      the stock flowtable on both routers
#   bulk       the stock flowtable plus nf_flow_bulk attached, both routers
#   xdp        XDP forwarding on both routers, no nftables: the kernel's
#              samples/bpf xdp_fwd (a FIB lookup and a redirect,
#              tools/bench/xdp, make bench-xdp) on their receive devices
#              (w0, e0), XDP_PASS on the sink's (r0); plain Ethernet only
#   xdp-ft     XDP forwarding that keeps the flowtable: xdp-tools'
#              xdp-forward in flowtable mode (xdp-forward load -f flowtable,
#              1.5 and later) on both routers' devices (w0 w1, e0 e1), the
#              stock flowtable and ruleset of stock in place, XDP_PASS on
#              the sink's (r0). A packet of a flow the stock path offloaded
#              is looked up in the flowtable by the bpf_xdp_flow_lookup()
#              kfunc (Linux 6.10 and later), gets the flow's NAT, a FIB
#              lookup for the next hop and is redirected; any other goes up
#              the stack. The warm-up is stock's. Needs the kfunc (6.12,
#              7.x: on 6.1 the point says unavailable, and why, on stderr)
#              and xdp-tools from the unstable chroot (tools/newkernel peers;
#              run there, as bookworm's 1.3 has no flowtable mode); plain
#              Ethernet only
#   bulk-alt   the same with another build of the module, for an A/B
#              comparison in one boot (boots differ by about 0.3 %, the runs
#              of one point by less than 0.05 %): the .ko in
#              build/kmod/KERNEL/alt/, loaded for the point instead of the
#              module, which is loaded back after it
# --gro: the routers' receive (tools/testing/lib/topology.sh topo_gro): on, off,
# or one of the stock alternatives to the module, fraglist GRO (list) or
# UDP GRO forwarding (udpfwd). Those two merge what the sink would see as
# one packet: only plain, stock and bulk run there; report.py takes the
# baselines (gen-alone, drop-west) of the same point with GRO on.
# --train: the generator's traffic shape, N consecutive packets of a flow
# before the next flow's (1: round-robin); at one flow every shape is the
# same and only the first is run.
# Under -icount shift=0 one guest nanosecond is one instruction: a run's
# cost is (last packet at the sink - generator start) / packets received;
# every run's cost is printed (runs), and the least costly one's too.
# On virtio links (tools/vm/run --nics 3) the generator keeps at most 128
# packets in flight and its calibrated busy-waiting is subtracted; the
# routers' egress devices get the device's default qdisc, noqueue or
# fq_codel (--qdisc; Debian's default, net.core.default_qdisc, set by
# systemd), and virtio TX kicks per packet are read from ethtool -S.
# veth's default is noqueue: there only noqueue, fq_codel and mq are run.
# mq (veth only): what a multi-queue NIC gets on Debian, mq at the root and
# an fq_codel per transmit queue; a plan naming it runs every point on
# routers' egress veths with two queues (topology.sh TOPO_EGRESS_TXQ), so
# it goes in a plan of its own (tools/bench/run).
# --headroom N: the generator builds its packets as a NIC driver does, in
# page fragments with N bytes of headroom (256: what XDP on veth needs to
# run without copying each packet into a new page; see
# tools/bench/kmod/nfb_bench.c), for every point of the run.
# --encap: what the west - east link carries (tools/testing/lib/topology.sh):
#   none   plain Ethernet (the default)
#   vlan   802.1Q id 100, pushed by west, popped by east
#   pppoe  a kernel-mode PPPoE session, west the client, east the access
#          concentrator (IPv4 only)
#   pppoe-direct  the same, the module (bulk) with
#          net.netfilter.nf_flow_bulk_pppoe_direct=1 on both routers: on
#          6.1 / 6.12 west's flows into the session go to w1 with the
#          PPPoE header pushed, not through the PPP device
#   ipip   an IPIP tunnel, pushed by west, popped by east (IPv4 only)
# --tap: a capture open on west's output device toward east (w1.100 with
# --encap vlan, w1, pppw) for every point of the topology: the device's
# transmit then feeds a tap (dev_queue_xmit_nit(): a clone per packet), on
# the stock path in the VLAN device's transmit, with the module where it
# stands in for that device (6.1, 6.12):
#   none   no capture (the default)
#   read   tcpdump -w /dev/null: every frame copied to the capture's ring
#          and written out, tcpdump's own instructions counted too
#   drop   tcpdump with a filter no frame matches (ethertype 0x88b5): the
#          tap's kernel cost alone, a clone and a filter run per frame
# Each point's JSON names it (tap).
# --events: what an instruction count cannot see. Every point but gen-alone
# ends with one more generator run, not in its instruction figures, during
# which kprobes count the calls of kernel functions made in softirq context
# (where the routers forward; a histogram trigger by caller and trace
# flags, tracing off); the point's JSON gives the calls per packet
# received (events):
#   spin_locks      _raw_spin_lock, _bh, _irqsave, _trylock called by a
#                   function of the packet path (EVENT_CALLERS): qdisc root
#                   and transmit queue locks, the veth ring's producer lock
#                   (spin_lock() is out of line in Debian's kernels)
#   route_releases  dst_release(): each drops a reference on a route that
#                   every CPU forwarding through it shares (a locked
#                   read-modify-write; the hold is inline, one per release)
#   neigh_xmit      neigh_xmit(): a packet sent through the neighbour
#                   layer one by one (the stock flowtable's NEIGH path)
#   napi_schedules  __napi_schedule(): a receiver woken (on veth the peer's
#                   NAPI, an IPI on a real multi-CPU host)
#   qdisc_runs      __qdisc_run(): a qdisc dequeue run
#   doorbells       virtqueue_notify(): a virtio-net transmit kick
#                   (virtio links only)
# What is inline (the module's neighbour lookup, the route hold) has no
# probe: only out-of-line functions are counted.
# --nexthops 2 (--encap none only): west sends about half the flows to a
# second next hop, 10.0.2.3 / fd00:2::3, a second address of east's e0: a
# mark set in west's prerouting (nft table nfb_bench_nh) and a rule to a
# routing table of its own. Which half is a hash of the flow's source port
# (its source address with --vary addr), nft's jhash with a seed of its
# own, unrelated to the module's order key: a split by port parity would
# be the key's bit 2 and keep the two next hops' flows off each other's
# bloom bits, a coincidence real traffic does not have. It sends 6 of 10,
# 44 of 100, 5044 of 10000 source-port flows (10000 + f) to the second
# next hop, and 5 of 10, 51 of 100 source-address flows (10.0.1.100 + f)
# (jhash(), reciprocal_scale() in python, checked against nft). The
# flows take turns, so a drain on west holds packets of both next hops
# interleaved, in two open bulks (module/queue.c nfb_drain()). East, the
# second router, keeps one next hop. Each point's JSON names it (nexthops).
# --vary addr (IPv4, --encap none, at most 100 flows): the flows differ in
# their source address (10.0.1.100 + f, source port 10000) instead of their
# source port (10.0.1.1, source port 10000 + f): many hosts to one
# service on the same ports. With --nexthops 2 a hash of the source
# address picks the next hop. Each point's JSON names it (vary).
# --nat snat: west translates the source address of every forwarded
# packet to its own on the west - east link (10.0.2.1, fd00:2::1; an nft
# snat rule in postrouting, table nfb_nat, as the selftests write it), in
# every configuration that forwards; the sink checks each packet's UDP
# checksum too (sink verify=1: a pass over the payload, in the figures)
# and the source address of the last one: a point whose sink saw another
# source (xdp's FIB mode applies no NAT) or a bad checksum is
# misforwarded. For correctness, not for figures beside runs without it.
# The flowtables are on the real devices in every case. Each point's JSON
# names its encapsulation (encap); for bulk it also gives what the module
# took per encapsulation and what it sent per packet instead of in a list
# (module: taken_encap and fallbacks of both routers, from flowbulk -j
# stats, warm-up included).
set -eu

repo=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$repo"
# shellcheck source=tools/testing/lib/topology.sh
source tools/testing/lib/topology.sh

links="veth"
encaps="none"
qdiscs="default noqueue"
gro="on off"
flows_list="1 10"
trains="1"
configs="gen-alone drop-west plain stock bulk"
count=20000
reps=3
burst=32
len=128
family=4
headroom=0
tap=none
events=0
nexthops=1
nat=none
vary=port
while [ $# -gt 0 ]; do
	case "$1" in
	--links) links=$2; shift 2 ;;
	--gro) gro=$2; shift 2 ;;
	--qdisc) qdiscs=$2; shift 2 ;;
	--encap) encaps=$2; shift 2 ;;
	--flows) flows_list=$2; shift 2 ;;
	--train) trains=$2; shift 2 ;;
	--configs) configs=$2; shift 2 ;;
	--count) count=$2; shift 2 ;;
	--reps) reps=$2; shift 2 ;;
	--burst) burst=$2; shift 2 ;;
	--len) len=$2; shift 2 ;;
	--family) family=$2; shift 2 ;;
	--headroom) headroom=$2; shift 2 ;;
	--tap) tap=$2; shift 2 ;;
	--events) events=1; shift ;;
	--nexthops) nexthops=$2; shift 2 ;;
	--nat) nat=$2; shift 2 ;;
	--vary) vary=$2; shift 2 ;;
	*) echo "guest.sh: unknown option $1" >&2; exit 2 ;;
	esac
done

case "$tap" in
none | read | drop) ;;
*) echo "guest.sh: unknown tap $tap" >&2; exit 2 ;;
esac
case "$nat" in
none | snat) ;;
*) echo "guest.sh: unknown NAT $nat" >&2; exit 2 ;;
esac

case "$vary" in
port) ;;
addr)
	if [ "$family" != 4 ] || [ "$encaps" != none ]; then
		echo "guest.sh: --vary addr is for --family 4 --encap none only" >&2
		exit 2
	fi
	for flows in $flows_list; do
		if [ "$flows" -gt 100 ]; then
			echo "guest.sh: --vary addr takes at most 100 flows" >&2
			exit 2
		fi
	done
	;;
*) echo "guest.sh: --vary is port or addr" >&2; exit 2 ;;
esac

case "$nexthops" in
1) ;;
2)
	if [ "$encaps" != none ]; then
		echo "guest.sh: --nexthops 2 is for --encap none only" >&2
		exit 2
	fi
	;;
*) echo "guest.sh: --nexthops is 1 or 2" >&2; exit 2 ;;
esac

for encap in $encaps; do
	case "$encap" in
	none | vlan) ;;
	pppoe | pppoe-direct | ipip)
		if [ "$family" = 6 ]; then
			echo "guest.sh: --encap $encap is IPv4 only" >&2
			exit 2
		fi
		;;
	*) echo "guest.sh: unknown encapsulation $encap" >&2; exit 2 ;;
	esac
done

kver=$(uname -r)
flowbulk=$repo/build/userspace/flowbulk
bench_start
# shellcheck source=tools/testing/lib/nfb.sh
source tools/testing/lib/nfb.sh
# shellcheck source=tools/testing/lib/proc.sh
source tools/testing/lib/proc.sh
bulk_ok=0
if nfb_load_module 2>/dev/null && [ -x "$flowbulk" ]; then
	bulk_ok=1
fi

if [ "$family" = 6 ]; then
	src=fd00:1::1 dst=$TOPO_DST6 nat_src=fd00:2::1
else
	src=10.0.1.1 dst=$TOPO_DST4 nat_src=10.0.2.1
fi
# --vary addr: the first flow's source address, clear of the sunset's and
# west's own (10.0.1.1, 10.0.1.2), the last one's in 10.0.1.0/24.
gen_vary=
if [ "$vary" = addr ]; then
	src=10.0.1.100
	gen_vary=" addrs=1"
fi
# The source address the sink must see: --nat's translation.
sink_src=$src
[ "$nat" = none ] || sink_src=$nat_src

mac_of() { in_ns "$1" cat "/sys/class/net/$2/address"; }

window=0
link_window=0
train=1
gen() { # gen DEV DMAC COUNT FLOWS [TRAIN]
	echo "gen dev=$1 dmac=$2 src=$src dst=$dst flows=$4 count=$3 burst=$burst len=$len window=$window train=${5:-$train} headroom=$headroom$gen_vary" |
		in_ns "$NS_SUNSET" tee "$ctl" >/dev/null
}

# nexthops_add: with --nexthops 2, west's second next hop (see above). The
# neighbour entry is permanent, as topo_neigh_permanent makes the others.
# The nft table is not the flowtable's: topo_flowtable_del leaves it.
nexthops_add() {
	local mac split="udp sport"
	[ "$nexthops" = 2 ] || return 0
	[ "$vary" = port ] || split="ip saddr"
	mac=$(mac_of "$NS_EAST" e0)
	ip -n "$NS_EAST" addr add 10.0.2.3/24 dev e0
	ip -n "$NS_EAST" addr add fd00:2::3/64 dev e0 nodad
	ip -n "$NS_WEST" neigh replace 10.0.2.3 lladdr "$mac" dev w1 nud permanent
	ip -n "$NS_WEST" neigh replace fd00:2::3 lladdr "$mac" dev w1 nud permanent
	ip -n "$NS_WEST" route add 10.0.3.0/24 via 10.0.2.3 table 100
	ip -n "$NS_WEST" -6 route add fd00:3::/64 via fd00:2::3 table 100
	ip -n "$NS_WEST" rule add fwmark 1 lookup 100
	ip -n "$NS_WEST" -6 rule add fwmark 1 lookup 100
	in_ns "$NS_WEST" nft -f - <<-EOF
		table inet nfb_bench_nh {
			chain pre {
				type filter hook prerouting priority mangle; policy accept;
				meta mark set jhash $split mod 2 seed 0x1
			}
		}
	EOF
}

# ethtool_sum STAT WEST_DEV EAST_DEV: the device statistics whose name
# (ethtool -S) matches STAT, an extended regular expression (one per
# queue), so far, summed over the two routers' devices.
ethtool_sum() {
	local n=0 k nd
	for nd in "$NS_WEST:$2" "$NS_EAST:$3"; do
		k=$(in_ns "${nd%%:*}" ethtool -S "${nd#*:}" 2>/dev/null |
			awk -v stat="^$1:\$" '$1 ~ stat {s += $2} END {print s + 0}')
		n=$((n + k))
	done
	echo "$n"
}

# kicks: virtio TX kicks so far on the routers' egress devices: ethtool -S
# names them tx_queue_N_kicks up to 6.9, txN_kicks from 6.10 on.
kicks() { ethtool_sum '(tx_queue_[0-9]+|tx[0-9]+)_kicks' w1 e1; }

# nfb_stats: the packets and bulks columns of /proc/net/stat/nf_flow_bulk
# (hex, one row per CPU), each summed over CPUs and over both routers:
# "PACKETS BULKS". One process per router: it runs between the warm-up and
# the runs (see point_counters_before).
nfb_stats() {
	local ns p=0 b=0 pb
	for ns in "$NS_WEST" "$NS_EAST"; do
		pb=$(nfb_proc_get "$ns" packets bulks 2>/dev/null) || continue
		p=$((p + ${pb% *}))
		b=$((b + ${pb#* }))
	done
	echo "$p $b"
}

# The kprobes of --events: NAME:SYMBOL, one probe each (a NAME may have
# several symbols; their calls are added).
EVENT_PROBES="spin_locks:_raw_spin_lock spin_locks:_raw_spin_lock_bh
spin_locks:_raw_spin_lock_irqsave spin_locks:_raw_spin_trylock
route_releases:dst_release neigh_xmit:neigh_xmit
napi_schedules:__napi_schedule qdisc_runs:__qdisc_run
doorbells:virtqueue_notify"
TRACE=/sys/kernel/tracing

# events_setup: the probes, disabled; a symbol the kernel lacks (virtio_ring
# not loaded) gets no probe, and its name counts 0.
events_setup() {
	local i=0 p
	[ -d "$TRACE/events" ] || mount -t tracefs nodev "$TRACE"
	echo 0 >"$TRACE/tracing_on"
	for p in $EVENT_PROBES; do
		if awk -v s="${p#*:}" '$3 == s { found = 1; exit } END { exit !found }' /proc/kallsyms; then
			echo "p:nfbev/${p%%:*}_$i ${p#*:} caller=+0(\$stack):x64" >>"$TRACE/kprobe_events"
		fi
		i=$((i + 1))
	done
}

# events_hits: "NAME CALLS" per probe: the calls made in softirq context
# (the trace flags' SOFTIRQ bit, 0x10, without HARDIRQ 0x08 or NMI 0x40),
# where the routers forward, and for a spin lock only by a function of the
# packet path (EVENT_CALLERS); what the rest of the guest does meanwhile
# (timers, RCU, page faults, the processes that start the generator) is
# left out.
EVENT_CALLERS='^(veth_|dev_|__dev_|sch_|__qdisc|qdisc_|nfb_|__nfb_|neigh_|__neigh|ip_|ip6_|__ip|nf_|__nf_|flow_|netif_|__netif|napi_|__napi|gro_|skb_|__skb|net_rx|validate_xmit|vlan_|pppoe_|ppp_|ipip_|ip_tunnel)'
events_hits() {
	local e name
	for e in "$TRACE"/events/nfbev/*/; do
		[ -f "$e/hist" ] || continue
		name=$(basename "$e")
		awk -v n="${name%_*}" -v callers="$EVENT_CALLERS" '
			/^\{ caller:/ {
				# { caller: [ffffffff81abcdef] veth_xmit , common_flags: 11 } hitcount: 5
				# (in a module: "nfb_drain [nf_flow_bulk] ,")
				sym = $4
				for (i = 5; i < NF && $i != "common_flags:"; i++)
					;
				flags = $(i + 1)
				f = 0
				for (i = 1; i <= length(flags); i++)
					f = f * 16 + index("0123456789abcdef", substr(flags, i, 1)) - 1
				if (!(int(f / 16) % 2) || int(f / 8) % 2 || int(f / 64) % 2)
					next
				if (n == "spin_locks" && sym !~ callers)
					next
				s += $NF
			}
			END { print n, s + 0 }' "$e/hist"
	done
}

# events_triggers on|off: a histogram of each probe's calls by caller and
# context (its return address, the trace flags).
# A trigger arms its probe even while the event is disabled: they exist
# only for the events run, or every probe would cost the measured runs.
events_triggers() {
	local e cmd='hist:keys=caller.sym,common_flags.hex:vals=hitcount'
	[ "$1" = on ] || cmd="!$cmd"
	for e in "$TRACE"/events/nfbev/*/; do
		[ ! -f "$e/trigger" ] || echo "$cmd" >"$e/trigger"
	done
}

# events_run DEV DMAC FLOWS: one generator run with the probes on; sets
# events_json, the softirq calls per packet the sink received (for
# drop-west: west consumed) of each NAME.
events_run() {
	echo reset >"$ctl"
	events_triggers on
	echo 1 >"$TRACE/events/nfbev/enable"
	gen "$1" "$2" "$count" "$3" || true
	echo 0 >"$TRACE/events/nfbev/enable"
	ctl_read
	events_json=$(events_hits |
		awk -v r="${ctl_val[sink_packets]:-0}" -v names="${EVENT_PROBES//$'\n'/ }" '
		BEGIN {
			n = split(names, p, / +/)
			for (i = 1; i <= n; i++) { split(p[i], a, ":"); calls[a[1]] = 0 }
		}
		{ calls[$1] += $2 }
		END {
			s = ""
			for (k in calls)
				s = s sprintf("%s\"%s\": %s", s == "" ? "" : ", ", k,
					r > 0 ? sprintf("%.3f", calls[k] / r) : "null")
			print "{" s "}"
		}')
	events_triggers off
}

# xdp_attach on|off: the benchmark's XDP forwarder on the routers' receive
# devices, XDP_PASS on the sink's: a frame redirected into a veth is
# received by its peer's NAPI, which an XDP program on the peer turns on
# (with GRO off nothing else does).
xdp_attach() {
	local nd
	if [ "$1" = off ]; then
		for nd in "$NS_WEST:w0" "$NS_EAST:e0" "$NS_SUNRISE:r0"; do
			ip -n "${nd%%:*}" link set dev "${nd#*:}" xdpdrv off 2>/dev/null || true
		done
		return 0
	fi
	ip -n "$NS_WEST" link set dev w0 xdpdrv obj "$repo/build/xdp/xdp_fwd.o" sec xdp &&
		ip -n "$NS_EAST" link set dev e0 xdpdrv obj "$repo/build/xdp/xdp_fwd.o" sec xdp &&
		ip -n "$NS_SUNRISE" link set dev r0 xdpdrv obj "$repo/build/xdp/xdp_pass.o" sec xdp
}

# xdp-ft: xdp-forward of the unstable chroot (tools/newkernel peers).
# shellcheck source=tools/testing/lib/sid.sh
source tools/testing/lib/sid.sh

# xdp_ft_why: why xdp-ft cannot run here (empty when it can). The kfunc
# is nf_flow_table's, listed once the module is in (topo_flowtable_add).
xdp_ft_why() {
	if ! grep -qw bpf_xdp_flow_lookup /proc/kallsyms; then
		echo "no bpf_xdp_flow_lookup() kfunc in $kver (Linux 6.10 and later)"
	elif [ ! -x "$sid_root/usr/sbin/xdp-forward" ]; then
		echo "no xdp-forward in $sid_root (tools/newkernel peers installs it)"
	fi
}

# xdp_ft_attach: xdp-forward in flowtable mode on both routers (every
# device it redirects to must be in its set: the transmit devices too),
# XDP_PASS on the sink's, as xdp_attach does.
xdp_ft_attach() {
	sid_exec "$NS_WEST" xdp-forward load -f flowtable w0 w1 &&
		sid_exec "$NS_EAST" xdp-forward load -f flowtable e0 e1 &&
		ip -n "$NS_SUNRISE" link set dev r0 xdpdrv obj "$repo/build/xdp/xdp_pass.o" sec xdp
}

# xdp_redirected: frames the routers' receive devices redirected from XDP
# so far (veth's rx_queue_N_xdp_redirect), both routers summed.
xdp_redirected() { ethtool_sum 'rx_queue_[0-9]+_xdp_redirect' w0 e0; }

# xdp_ft_detach: xdp-forward's own unload, which removes its pins too.
xdp_ft_detach() {
	sid_exec "$NS_WEST" xdp-forward unload w0 w1 >/dev/null 2>&1 || true
	sid_exec "$NS_EAST" xdp-forward unload e0 e1 >/dev/null 2>&1 || true
}

# nat_add: --nat snat on west (see the usage); kept for the whole topology.
nat_add() {
	[ "$nat" != none ] || return 0
	in_ns "$NS_WEST" nft -f - <<-EOF
	table inet nfb_nat {
		chain post {
			type nat hook postrouting priority srcnat;
			oifname "$TOPO_MID_W" meta nfproto ipv4 snat ip to 10.0.2.1
			oifname "$TOPO_MID_W" meta nfproto ipv6 snat ip6 to fd00:2::1
		}
	}
	EOF
}

# egress_qdisc default|noqueue|fq_codel|mq on the routers' egress devices.
egress_qdisc() {
	local nd i n
	for nd in "$NS_WEST:w1" "$NS_EAST:e1"; do
		case "$1" in
		noqueue | fq_codel)
			in_ns "${nd%%:*}" tc qdisc replace dev "${nd#*:}" root "$1"
			;;
		mq)
			n=$(in_ns "${nd%%:*}" ls -d /sys/class/net/"${nd#*:}"/queues/tx-* | wc -l)
			in_ns "${nd%%:*}" tc qdisc replace dev "${nd#*:}" root handle 1: mq
			for ((i = 1; i <= n; i++)); do
				in_ns "${nd%%:*}" tc qdisc replace dev "${nd#*:}" parent "1:$(printf %x "$i")" fq_codel
			done
			;;
		*)
			in_ns "${nd%%:*}" tc qdisc del dev "${nd#*:}" root 2>/dev/null || true
			;;
		esac
	done
}

# module_counters: what both routers' module took per encapsulation and
# sent per packet per reason, summed, as one JSON object
# ({"encap_vlan": N, "fallback_qdisc": N, ...}).
module_counters() {
	local ns
	for ns in "$NS_WEST" "$NS_EAST"; do
		in_ns "$ns" "$flowbulk" -j stats
	done | jq -cs 'map(.stats.total
		| [(.taken_encap[] | {key: ("encap_" + .encap), value: .packets}),
		   (.fallbacks[] | {key: ("fallback_" + .reason), value: .packets})]
		| from_entries)
		| reduce .[] as $o ({}; reduce ($o | to_entries[]) as $e (.; .[$e.key] += $e.value))'
}

# tap_start / tap_stop: the --tap capture on west's output device. It is
# in west's namespace, so topo_destroy ends it too. Ready once tcpdump
# says it listens: the socket is bound and its filter attached.
tap_pid=
tap_err=/run/nfb-bench-tap.err
tap_start() {
	local filter=() i
	[ "$tap" != none ] || return 0
	[ "$tap" != drop ] || filter=(ether proto 0x88b5)
	rm -f "$tap_err"
	# Not through in_ns(): $! must be tcpdump's, not that of a subshell
	# that ignores the SIGINT (an asynchronous command's, without job
	# control) which ends the capture.
	ip netns exec "$NS_WEST" tcpdump -i "$TOPO_MID_W" -Q out -nn -B 8192 -w /dev/null \
		"${filter[@]}" 2>"$tap_err" &
	tap_pid=$!
	for ((i = 0; i < 300; i++)); do
		! grep -q "listening on" "$tap_err" 2>/dev/null || return 0
		kill -0 "$tap_pid" 2>/dev/null || break
		sleep 0.1
	done
	echo "guest.sh: no capture on $TOPO_MID_W:" >&2
	cat "$tap_err" >&2
	return 1
}

# The frames the capture got and its kernel dropped (tcpdump's summary).
tap_stop() {
	[ -n "$tap_pid" ] || return 0
	kill -INT "$tap_pid" 2>/dev/null || true
	wait "$tap_pid" 2>/dev/null || true
	tap_pid=
	sed -n 's/^\([0-9]* packets \(captured\|dropped by kernel\)\)$/guest.sh: tap on '"$TOPO_MID_W"': \1/p' "$tap_err" >&2
}

# measure_rep SINK_NS [TTL]: add one generator run to the point's totals.
# Sets sent, recv, reord (sums over runs), per_rep (cost per packet of each
# run), elapsed / best_recv / wait_ns of the least costly delivered run, and
# misforwarded: packets that arrived with a TTL other than TTL (the
# generator's 64 less the routers passed) or a wrong IPv4 header checksum,
# in any run (the sink's minimum and maximum TTL both must be TTL), or at
# the sunrise with another source address than --nat's.
measure_rep() {
	local s r o first last w e
	ctl_read
	if [ -n "$1" ] && [ "${ctl_val[sink_packets]:-0}" -gt 0 ]; then
		if [ "${ctl_val[sink_ttl_min]}" != "${2:-62}" ] ||
			[ "${ctl_val[sink_ttl_max]}" != "${2:-62}" ] ||
			[ "${ctl_val[sink_bad_csum]}" != 0 ]; then
			misforwarded="$misforwarded ttl=${ctl_val[sink_ttl_min]}..${ctl_val[sink_ttl_max]},bad_csum=${ctl_val[sink_bad_csum]}"
		fi
		# Past west (--nat): its translation, as the last packet shows.
		if [ "$nat" != none ] && [ "$1" = "$NS_SUNRISE" ] &&
			[ "${ctl_val[sink_src]:-}" != "$sink_src" ]; then
			misforwarded="$misforwarded src=${ctl_val[sink_src]:-none}"
		fi
	fi
	s=${ctl_val[gen_sent]:-0}
	first=${ctl_val[gen_start_ns]:-0}
	w=${ctl_val[gen_wait_ns]:-0}
	if [ -n "$1" ]; then
		r=${ctl_val[sink_packets]:-0}
		o=${ctl_val[sink_reordered]:-0}
		last=${ctl_val[sink_last_ns]:-0}
	else
		r=$s
		o=0
		last=${ctl_val[gen_end_ns]:-0}
	fi
	: "${s:=0}" "${r:=0}" "${o:=0}" "${w:=0}"
	sent=$((sent + s))
	recv=$((recv + r))
	reord=$((reord + o))
	[ "$r" -gt 0 ] || return 0
	e=$((last - first - w))
	per_rep+=("$((e * 1000 / r))")
	# e / r < best / best_recv, in integers
	if [ "$best_recv" = 0 ] || [ $((e * best_recv)) -lt $((best * r)) ]; then
		best=$e best_recv=$r elapsed=$e wait_ns=$w
	fi
}

# The helpers of point() below work on its locals (bash's dynamic scope):
# each sets the ones its comment names.

# point_attach: CONFIG's forwarder on both routers (a flowtable, the
# module, an XDP program) and where the point's packets go; sets dev,
# sink_ns, sink_dev, ttl, window, and status when the forwarder is not
# there.
point_attach() {
	case "$config" in
	gen-alone) dev=d0 sink_ns='' window=0 ;;
	drop-west) sink_ns=$NS_WEST sink_dev=w0 ttl=64 ;;
	plain) ;;
	stock) topo_flowtable_add ;;
	bulk)
		if [ "$bulk_ok" = 1 ]; then
			topo_flowtable_add early_ingress || status=attach-failed
			if [ "$encap" = pppoe-direct ]; then
				in_ns "$NS_WEST" sysctl -qw net.netfilter.nf_flow_bulk_pppoe_direct=1
				in_ns "$NS_EAST" sysctl -qw net.netfilter.nf_flow_bulk_pppoe_direct=1
			fi
		else
			status=unavailable
		fi
		;;
	xdp)
		if [ "$encap" != none ]; then
			status=unavailable
		elif ! xdp_attach on >&2; then
			status=attach-failed
		fi
		;;
	xdp-ft)
		topo_flowtable_add
		why=$(xdp_ft_why)
		if [ "$encap" != none ]; then
			status=unavailable
			echo "guest.sh: xdp-ft: plain Ethernet only, not --encap $encap" >&2
		elif [ -n "$why" ]; then
			status=unavailable
			echo "guest.sh: xdp-ft cannot run: $why" >&2
		elif ! xdp_ft_attach >&2; then
			status=attach-failed
		fi
		;;
	bulk-alt)
		# On a kernel the module is not proven on, the option the
		# selftests' library gives every load (NFB_UNPROVEN_KERNEL=1).
		alt_opts=()
		if [ "${NFB_UNPROVEN_KERNEL:-0}" = 1 ]; then alt_opts=(unproven_kernel=1); fi
		if [ "$bulk_ok" = 1 ] && rmmod "$NFB_MODULE" &&
			insmod "$repo/build/kmod/$kver/alt/$NFB_MODULE.ko" "${alt_opts[@]}"; then
			topo_flowtable_add early_ingress || status=attach-failed
		else
			status=unavailable
		fi
		;;
	esac
}

# point_warm_up: the generator's runs before the measured ones; sets mod0.
point_warm_up() {
	# Warm-up. With a flowtable it puts every flow in it: a UDP flow
	# is offloaded by a packet that finds its conntrack entry
	# confirmed, and packets of one NAPI batch go through prerouting
	# together, before the first is confirmed, so that takes three
	# separate runs. Otherwise one run warms the caches.
	local round rounds=1
	case "$config" in stock | bulk* | xdp-ft) rounds=3 ;; esac
	# Before the warm-up: flowbulk is a process to load, and the
	# guest's clock runs ahead while it is read in (icount,
	# sleep=off); between the warm-up and the runs that could
	# outlast a flow's time in the flowtable (an hour here,
	# topo_flowtable_add; 30 s by default).
	[ "${config%-alt}" != bulk ] || mod0=$(module_counters)
	# A packet per flow (trains of 1), whatever the shape measured.
	for ((round = 0; round < rounds; round++)); do
		gen "$dev" "$dmac" "$flows" "$flows" 1 || true
	done
}

# point_counters_before / point_counters_after: the counters read around
# the measured runs (kicks, the module's, the stacks' forwarded, XDP's
# redirected); the after reads also set west_off and east_off.
point_counters_before() {
	# As few processes as possible between the warm-up and the
	# runs: each lets the clock run ahead while it is loaded, and
	# an idle flow leaves the flowtable once its timeout passes.
	[ "$link" = veth ] || kicks0=$(kicks)
	if [ "${config%-alt}" = bulk ]; then
		read -r taken0 bulks0 < <(nfb_stats)
	fi
	[ -z "$sink_ns" ] || [ "$config" = drop-west ] || fwd0=$(topo_stack_forwarded "$family")
	[ "$link" != veth ] || [ "${config#xdp}" = "$config" ] || redir0=$(xdp_redirected)
}

point_counters_after() {
	# The flows in the flowtables, right after the runs refreshed
	# them (read after the warm-up, they could have left already).
	if [ "$config" = stock ] || [ "$config" = xdp-ft ] || [ "${config%-alt}" = bulk ]; then
		west_off=$(topo_offloaded "$NS_WEST" "$family")
		east_off=$(topo_offloaded "$NS_EAST" "$family")
	fi
	[ "$link" = veth ] || kicks1=$(kicks)
	if [ "${config%-alt}" = bulk ]; then
		read -r taken1 bulks1 < <(nfb_stats)
		mod1=$(module_counters)
	fi
	[ -z "$sink_ns" ] || [ "$config" = drop-west ] || fwd1=$(topo_stack_forwarded "$family")
	[ "$link" != veth ] || [ "${config#xdp}" = "$config" ] || redir1=$(xdp_redirected)
	# XDP's point only if XDP forwarded it: an xdp-ft whose
	# program passed packets on went through the stock flowtable,
	# which no stack counter shows.
	if [ "$link" = veth ] && [ "${config#xdp}" != "$config" ] &&
		[ $(((redir1 - redir0) * 100)) -lt $((2 * recv * 99)) ]; then
		echo "guest.sh: $config: XDP redirected $((redir1 - redir0)) of 2 x $recv packets" >&2
	fi
}

# point_runs: the measured runs (measure_rep); sets status when the
# generator fails.
point_runs() {
	# $reps runs; tools/bench/icount/report.py takes the median of every
	# run of every boot (virtio-net batching moves both ways).
	local rep
	for ((rep = 0; rep < reps; rep++)); do
		echo reset >"$ctl"
		gen "$dev" "$dmac" "$count" "$flows" || status=generator-failed
		measure_rep "$sink_ns" "$ttl"
	done
}

# point_json: the point's JSON line on stdout.
point_json() {
	jq -cnM --arg kernel "$kver" --arg link "$link" --arg gro "$g" --arg qdisc "$q" \
		--arg encap "$encap" --arg config "$config" --arg status "$status" \
		--arg tap "$tap" --argjson nexthops "$nexthops" --arg nat "$nat" --arg vary "$vary" \
		--argjson flows "$flows" --argjson train "$train" --argjson family "$family" \
		--argjson len "$len" --argjson burst "$burst" --argjson headroom "$headroom" \
		--argjson sent "${sent:-0}" --argjson received "${recv:-0}" \
		--argjson reordered "${reord:-0}" --argjson elapsed_ns "$elapsed" \
		--argjson offloaded_west "$west_off" --argjson offloaded_east "$east_off" \
		--argjson wait_ns "$wait_ns" --argjson kicks $((kicks1 - kicks0)) \
		--argjson best_received "$best_recv" \
		--argjson per_rep "[$(IFS=,; echo "${per_rep[*]}")]" \
		--argjson taken $((taken1 - taken0)) --argjson bulks $((bulks1 - bulks0)) \
		--argjson stack_forwarded $((fwd1 - fwd0)) \
		--argjson xdp_redirected $((redir1 - redir0)) \
		--argjson mod0 "$mod0" --argjson mod1 "$mod1" \
		--arg misforwarded "${misforwarded# }" --argjson events "$events_json" \
		'{kernel: $kernel, link: $link, gro: $gro, qdisc: $qdisc, encap: $encap,
		  config: $config, headroom: $headroom, tap: $tap, nexthops: $nexthops, nat: $nat, vary: $vary,
		  status: $status, flows: $flows, train: $train, family: $family, len: $len,
		  burst: $burst, sent: $sent, received: $received,
		  reordered: $reordered, elapsed_ns: $elapsed_ns, wait_ns: $wait_ns,
		  misforwarded: (if $misforwarded == "" then null else $misforwarded end),
		  best_received: $best_received,
		  runs: ($per_rep | map(. / 1000)),
		  taken: $taken, bulks: $bulks, stack_forwarded: $stack_forwarded,
		  xdp_redirected: $xdp_redirected,
		  module: ($mod1 | with_entries(.value -= ($mod0[.key] // 0))
		    | with_entries(select(.value != 0))),
		  bulk_mean: (if $bulks > 0 then ($taken / $bulks) else null end),
		  taken_fraction:
		    (if ($config | startswith("bulk")) and $received > 0 then ($taken / (2 * $received)) else null end),
		  kicks_per_packet:
		    (if $link == "veth" or $received == 0 then null else ($kicks / $received) end),
		  offloaded_west: $offloaded_west, offloaded_east: $offloaded_east,
		  events: $events,
		  delivered: ($status == "ok" and $sent > 0 and $sent == $received),
		  instructions_per_packet:
		    (if $best_received > 0 then ($elapsed_ns / $best_received) else null end)}'
}

point() { # point LINK ENCAP GRO QDISC CONFIG FLOWS
	local link=$1 encap=$2 g=$3 q=$4 config=$5 flows=$6 dev=s0 sink_ns=$NS_SUNRISE sink_dev=r0
	sent=0 recv=0 reord=0 elapsed=0 wait_ns=0 best=0 best_recv=0 per_rep=()
	misforwarded='' ttl=62 events_json=null
	local dmac status=ok west_off=0 east_off=0 alt_opts
	local kicks0=0 kicks1=0 taken0=0 taken1=0 bulks0=0 bulks1=0 mod0='{}' mod1='{}'
	local fwd0=0 fwd1=0 why verify='' redir0=0 redir1=0
	topo_flowtable_del
	xdp_attach off
	window=$link_window
	point_attach
	dmac=$(mac_of "$NS_WEST" w0)
	echo "sink off" | in_ns "$NS_SUNSET" tee "$ctl" >/dev/null
	[ "$nat" = none ] || verify=" verify=1"
	if [ -n "$sink_ns" ]; then
		echo "sink dev=$sink_dev$verify" | in_ns "$sink_ns" tee "$ctl" >/dev/null
	fi
	if [ "$status" = ok ]; then
		point_warm_up
		point_counters_before
		point_runs
		point_counters_after
		# Last: its probes must not reach the figures above.
		[ "$events" = 0 ] || [ -z "$sink_ns" ] || events_run "$dev" "$dmac" "$flows"
	else
		measure_rep "$sink_ns" "$ttl"
	fi
	point_json
	[ "$config" != xdp-ft ] || [ "$status" = unavailable ] || xdp_ft_detach
	case "$config" in xdp | xdp-ft) xdp_attach off ;; esac
	if [ "$config" = bulk-alt ] && [ "$bulk_ok" = 1 ]; then
		topo_flowtable_del
		rmmod "$NFB_MODULE" 2>/dev/null || true
		nfb_load_module
	fi
}

[ "$events" = 0 ] || events_setup
for link in $links; do
	for encap in $encaps; do
		TOPO_EGRESS_TXQ=1
		case " $qdiscs " in
		*" mq "*) [ "$link" != veth ] || TOPO_EGRESS_TXQ=2 ;;
		esac
		topo_create "$link" "${encap%-direct}"
		nexthops_add
		qs=$qdiscs
		link_window=128
		if [ "$link" = veth ]; then
			qs=
			for q in $qdiscs; do
				case "$q" in noqueue | fq_codel | mq) qs="$qs $q" ;; esac
			done
			[ -n "$qs" ] || qs=noqueue
			link_window=0
		fi
		# Resolve every neighbour on the path, both ways, before measuring.
		in_ns "$NS_SUNSET" ping -q -c 1 -W 5 "$TOPO_DST4" >/dev/null
		[ "${encap%-direct}" = pppoe ] || in_ns "$NS_SUNSET" ping -q -c 1 -W 5 "$TOPO_DST6" >/dev/null
		nat_add
		tap_start
		# gen-alone first, before the links carry any traffic: it sends
		# into a dummy device, but its cost (slab slow paths of 32-skb
		# bursts) depends on the memory layout that earlier traffic left,
		# and on virtio-net that traffic is timed by the host. Measured
		# right after the topology is made, it moves by 0.1 %, not 2 %.
		first='' rest=''
		for config in $configs; do
			if [ "$config" = gen-alone ]; then
				first=$config
			else
				rest="$rest $config"
			fi
		done
		for pass in "$first" "$rest"; do
			[ -n "$pass" ] || continue
			for g in $gro; do
				topo_gro "$g"
				for q in $qs; do
					egress_qdisc "$q"
					for flows in $flows_list; do
						for train in $trains; do
							[ "$flows" -gt 1 ] || [ "$train" = "${trains%% *}" ] || continue
							for config in $pass; do
								case "$g:$config" in
								list:gen-alone | list:drop-west | udpfwd:gen-alone | udpfwd:drop-west) continue ;;
								# XDP forwards before GRO: the stock alternatives' receive modes are not its own.
								list:xdp* | udpfwd:xdp*) continue ;;
								esac
								# The generator alone: one figure per topology (report.py).
								if [ "$config" = gen-alone ] &&
									[ "$g $flows $train" != "${gro%% *} ${flows_list%% *} ${trains%% *}" ]; then
									continue
								fi
								point "$link" "$encap" "$g" "$q" "$config" "$flows"
							done
						done
					done
				done
			done
		done
		tap_stop
	done
done
