#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# TCP through both routers, inside a guest (make bench-tcp boots it with
# --icount): iperf3 from sunset to sunrise over the veth topology
# (tools/testing/lib/topology.sh), GRO on and TSO as Debian ships it (on),
# so that the routers forward TCP GSO skbs as they come off veth. Prints
# one JSON object per run on stdout, then one summary per configuration.
#
#   tools/bench/icount/tcp.sh [--configs "direct stock bulk stock bulk plain"] [--reps N]
#                      [--bytes N] [--small N] [--wall SECONDS]
#
# Configurations (a name may come back: its blocks are pooled):
#   direct  iperf3 from sunset to west's w0 (10.0.1.2), no nftables: the
#           two TCP ends alone, over one veth link, the baseline that the
#           per-router figures subtract
#   plain   forwarding through west and east, no nftables
#   stock   the stock flowtable on both routers (the ruleset of the bench)
#   bulk    the same flowtable with nf_flow_bulk attached
#
# Under -icount shift=0,sleep=off one guest nanosecond is one instruction
# while the vCPU runs, and the clock jumps over the time it idles: a run's
# cost is its elapsed guest time minus the time the CPU spent idle. The
# idle time is the kernel's nohz idle accounting in nanoseconds
# (idle_sleeptime + iowait_sleeptime of /proc/timer_list); /proc/stat and
# /proc/uptime give the same time rounded to 10 ms (10 million
# instructions), which each run records too, for comparison. Each
# repetition transfers --small bytes, then --bytes bytes (new connections
# each time): what the two runs' busy instructions differ by is the cost
# of the bytes between, without iperf3's start, its control connection
# and the connection set-up, which both runs pay alike. Per configuration
# the summary gives the median and spread of: instructions per MB (2^20
# bytes of payload), per wire segment (the sender's TcpOutSegs, in MSS-
# sized segments, ACKs not counted), per skb the routers received (w0's
# rx_packets: veth GRO and TSO merge segments), and per router:
# (configuration - direct) / 2, both routers doing the same work.
# Each run records what the module took (bulk) and what the routers' IP
# stacks forwarded (plain: everything; stock and bulk: the connections'
# first packets and FINs only), the retransmissions of both ends and the
# data phase's length by iperf3's clock (data_ns): a run that idled far
# longer than that waited for a timer outside the data phase.
# --wall SECONDS: no icount figures; iperf3 -t SECONDS goodput instead,
# stock and bulk alternating --reps times, as tools/bench/icount/wall.sh measures
# it (in a boot without -icount).
set -eu

repo=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$repo"
# shellcheck source=tools/testing/lib/topology.sh
source tools/testing/lib/topology.sh
# shellcheck source=tools/testing/lib/nfb.sh
source tools/testing/lib/nfb.sh
# shellcheck source=tools/testing/lib/proc.sh
source tools/testing/lib/proc.sh

# Stock and the module in alternating blocks: the TCP ends' cost per MiB
# drifts over a boot by up to about 1 %, half a router's share of it, and
# alternating puts that drift on both alike.
configs="direct stock bulk stock bulk plain"
reps=3
bytes=$((64 << 20))
small=$((8 << 20))
wall=0
while [ $# -gt 0 ]; do
	case "$1" in
	--configs) configs=$2; shift 2 ;;
	--reps) reps=$2; shift 2 ;;
	--bytes) bytes=$2; shift 2 ;;
	--small) small=$2; shift 2 ;;
	--wall) wall=$2; shift 2 ;;
	*) echo "tcp.sh: unknown option $1" >&2; exit 2 ;;
	esac
done
if [ "$wall" = 0 ] && [ "$bytes" -le "$small" ]; then
	echo "tcp.sh: --bytes must be more than --small" >&2
	exit 2
fi

kver=$(uname -r)
runs=$(mktemp /tmp/nfb-tcp.XXXXXX)

cleanup() {
	topo_destroy
	rm -f "$runs"
}
trap cleanup EXIT

nfb_load_module
topo_create veth
# GRO on every device (veth receives in NAPI mode); TSO, GSO and checksum
# offloads left as the kernel sets them on veth.
for nd in "$NS_SUNSET:s0" "$NS_WEST:w0" "$NS_WEST:w1" "$NS_EAST:e0" \
	"$NS_EAST:e1" "$NS_SUNRISE:r0"; do
	in_ns "${nd%%:*}" ethtool -K "${nd#*:}" gro on
done
features=$(in_ns "$NS_WEST" ethtool -k w1 | awk -F': ' '
	/^(tcp-segmentation-offload|generic-receive-offload|generic-segmentation-offload):/ {
		printf "%s%s=%s", sep, $1, $2; sep = ","
	}')
in_ns "$NS_SUNSET" ping -q -c 1 -W 5 "$TOPO_DST4" >/dev/null

listening() { # listening NS: an iperf3 server listens in NS
	in_ns "$1" ss -Htln 'sport = :5201' | grep -q LISTEN
}
for ns in "$NS_SUNRISE" "$NS_WEST"; do
	in_ns "$ns" iperf3 -s -D -p 5201 >/dev/null
	busywait 30000 listening "$ns"
done

configure() { # configure direct|plain|stock|bulk
	topo_flowtable_del
	case "$1" in
	stock) topo_flowtable_add ingress ;;
	bulk) topo_flowtable_add early_ingress ;;
	esac
}

# clock: the guest's time and the CPU's idle time, in ns, into clk_now and
# clk_idle (/proc/timer_list), clk_idle_stat (/proc/stat, idle + iowait)
# and clk_idle_uptime (/proc/uptime), read by bash alone: no process runs
# between a reading and the transfer.
clock() {
	local line f
	local -a l
	clk_now=0 clk_idle=0
	while IFS= read -r line; do
		case "$line" in
		"now at "*) f=${line#now at }; clk_now=${f%% *} ;;
		*.idle_sleeptime*|*.iowait_sleeptime*)
			f=${line#*: }; clk_idle=$((clk_idle + ${f%% *})) ;;
		esac
	done </proc/timer_list
	read -r -a l </proc/stat
	clk_idle_stat=$(((l[4] + l[5]) * 10000000))
	read -r -a l </proc/uptime
	f=${l[1]/./}
	clk_idle_uptime=$((10#$f * 10000000))
}

# counters: the devices', TCP's, the routers' stacks' and the module's
# counters, as one line of numbers (see the JSON of run()).
counters() {
	local nd ns dev v m=0 d=0 f=0 x=0 drops=0 name sum
	for nd in "$NS_WEST:w0:rx_packets" "$NS_WEST:w0:rx_bytes" \
		"$NS_EAST:e0:rx_packets" "$NS_WEST:w1:rx_packets" "$NS_EAST:e1:rx_packets"; do
		IFS=: read -r ns dev v <<<"$nd"
		printf '%s ' "$(in_ns "$ns" cat "/sys/class/net/$dev/statistics/$v")"
	done
	for ns in "$NS_SUNSET" "$NS_SUNRISE" "$NS_WEST"; do
		in_ns "$ns" cat /proc/net/snmp | awk '$1 == "Tcp:" && !h {
			for (i = 2; i <= NF; i++) { if ($i == "OutSegs") k = i; if ($i == "RetransSegs") r = i }
			h = 1; next }
			$1 == "Tcp:" { printf "%s %s ", $k, $r }'
	done
	printf '%s ' "$(topo_stack_forwarded 4)"
	for nd in "$NS_SUNSET:s0" "$NS_WEST:w0" "$NS_WEST:w1" "$NS_EAST:e0" \
		"$NS_EAST:e1" "$NS_SUNRISE:r0"; do
		for v in tx_dropped rx_dropped; do
			drops=$((drops + $(in_ns "${nd%%:*}" cat "/sys/class/net/${nd#*:}/statistics/$v")))
		done
	done
	printf '%s ' "$drops"
	for ns in "$NS_WEST" "$NS_EAST"; do
		v=$(nfb_proc_sums "$ns") || continue
		while read -r name sum; do
			case "$name" in
			packets) m=$((m + sum)) ;;
			decline_*) d=$((d + sum)) ;;
			fallback_*) f=$((f + sum)) ;;
			drop_*) x=$((x + sum)) ;;
			esac
		done <<<"$v"
	done
	echo "$m $d $f $x"
}

# module_reasons: the module's non-zero counters of both routers since the
# flowtables were attached, by reason, as one JSON object.
module_reasons() {
	local ns
	for ns in "$NS_WEST" "$NS_EAST"; do
		in_ns "$ns" "$repo/build/userspace/flowbulk" -j stats
	done | jq -cMs '{kind: "tcp-module", taken: (map(.stats.total.packets) | add),
		bulks: (map(.stats.total.bulks) | add)} + (map(.stats.total
		| [(.decline[] | {key: ("decline_" + .reason), value: .packets}),
		   (.fallbacks[] | {key: ("fallback_" + .reason), value: .packets}),
		   (.drops[] | {key: ("drop_" + .reason), value: .packets})]
		| from_entries)
		| reduce .[] as $o ({}; reduce ($o | to_entries[]) as $e (.; .[$e.key] += $e.value))
		| with_entries(select(.value > 0)))'
}

# run CONFIG BYTES [warm-up]: one transfer, its JSON line on stdout and,
# unless it is a warm-up, in $runs (the summary pairs each repetition's
# small and big transfers in order).
run() {
	local config=$1 n=$2 warm=${3:-} dst=$TOPO_DST4 a b out t0 i0 is0 iu0 recv secs line
	[ "$config" != direct ] || dst=10.0.1.2
	read -r -a a <<<"$(counters)"
	clock
	t0=$clk_now i0=$clk_idle is0=$clk_idle_stat iu0=$clk_idle_uptime
	out=$(in_ns "$NS_SUNSET" iperf3 -c "$dst" -p 5201 -n "$n" -J)
	clock
	read -r -a b <<<"$(counters)"
	recv=$(jq '.end.sum_received.bytes' <<<"$out")
	# The data phase alone, in guest ns (iperf3's clock): a run whose
	# elapsed time is far above it waited in the set-up or the end.
	secs=$(jq '.end.sum_received.seconds * 1e9 | floor' <<<"$out")
	line=$(jq -cnM --arg kernel "$kver" --arg config "$config" --arg features "$features" \
		--argjson bytes "$n" --argjson received "$recv" --argjson data_ns "$secs" \
		--argjson elapsed "$((clk_now - t0))" --argjson idle "$((clk_idle - i0))" \
		--argjson idle_stat "$((clk_idle_stat - is0))" \
		--argjson idle_uptime "$((clk_idle_uptime - iu0))" \
		--argjson w0_skbs "$((b[0] - a[0]))" --argjson w0_bytes "$((b[1] - a[1]))" \
		--argjson e0_skbs "$((b[2] - a[2]))" --argjson w1_skbs "$((b[3] - a[3]))" \
		--argjson e1_skbs "$((b[4] - a[4]))" --argjson segs_out "$((b[5] - a[5]))" \
		--argjson retrans "$((b[6] - a[6]))" --argjson retrans_back "$((b[8] - a[8]))" \
		--argjson acks_out "$((b[7] + b[9] - a[7] - a[9]))" \
		--argjson stack_forwarded "$((b[11] - a[11]))" --argjson dev_drops "$((b[12] - a[12]))" \
		--argjson taken "$((b[13] - a[13]))" --argjson declined "$((b[14] - a[14]))" \
		--argjson fallback "$((b[15] - a[15]))" --argjson dropped "$((b[16] - a[16]))" \
		'{kind: "tcp", kernel: $kernel, link: "veth", features: $features,
		  config: $config, bytes: $bytes, received: $received,
		  elapsed_ns: $elapsed, data_ns: $data_ns, idle_ns: $idle, idle_stat_ns: $idle_stat,
		  idle_uptime_ns: $idle_uptime, busy: ($elapsed - $idle),
		  w0_skbs: $w0_skbs, w0_bytes: $w0_bytes, e0_skbs: $e0_skbs,
		  w1_skbs: $w1_skbs, e1_skbs: $e1_skbs, segs_out: $segs_out,
		  retrans: $retrans, retrans_back: $retrans_back, acks_out: $acks_out,
		  stack_forwarded: $stack_forwarded, dev_drops: $dev_drops,
		  taken: $taken, declined: $declined, fallback: $fallback,
		  dropped: $dropped}')
	echo "$line"
	[ -n "$warm" ] || echo "$line" >>"$runs"
}

# goodput CONFIG: iperf3 -t $wall, as tools/bench/icount/wall.sh measures it.
goodput() {
	local out bps
	out=$(in_ns "$NS_SUNSET" iperf3 -c "$TOPO_DST4" -p 5201 -t "$wall" -J)
	bps=$(jq '.end.sum_received.bits_per_second | floor' <<<"$out")
	jq -cnM --arg kernel "$kver" --arg config "$1" --argjson bps "$bps" \
		--argjson seconds "$wall" --arg features "$features" \
		'{kind: "goodput", kernel: $kernel, link: "veth", features: $features,
		  config: $config, seconds: $seconds, bits_per_second: $bps}'
}

if [ "$wall" != 0 ]; then
	for ((rep = 0; rep < reps; rep++)); do
		for config in $configs; do
			configure "$config"
			goodput "$config"
		done
	done
	exit 0
fi

for config in $configs; do
	configure "$config"
	run "$config" "$small" warm-up >/dev/null
	for ((rep = 0; rep < reps; rep++)); do
		run "$config" "$small"
		run "$config" "$bytes"
	done
	[ "$config" != bulk ] || module_reasons
done

# Per configuration, each repetition's (big run - small run), then the
# median and the spread ((max - min) / median) over repetitions.
jq -cMs --argjson mb "$(((bytes - small) >> 20))" '
	def med: sort | .[length / 2 | floor];
	def stat: {median: (med | floor), spread: (((max - min) / med * 1000 | round) / 1000)};
	group_by(.config) | map(. as $runs
		| ($runs | map(select(.bytes == ($runs | map(.bytes) | min)))) as $s
		| ($runs | map(select(.bytes == ($runs | map(.bytes) | max)))) as $b
		| [range(0; $b | length) as $i | {
			busy: ($b[$i].busy - $s[$i].busy),
			segs: ($b[$i].segs_out - $s[$i].segs_out),
			skbs: ($b[$i].w0_skbs - $s[$i].w0_skbs)}] as $d
		| {kind: "tcp-summary", config: $runs[0].config,
		   per_mb: ($d | map(.busy / $mb) | stat),
		   per_segment: ($d | map(.busy / .segs) | stat),
		   per_router_skb: ($d | map(.busy / .skbs) | stat),
		   segments_per_router_skb: ($d | map(.segs / .skbs) | stat),
		   taken: ($b | map(.taken) | add), declined: ($b | map(.declined) | add),
		   fallback: ($b | map(.fallback) | add), dropped: ($b | map(.dropped) | add),
		   retrans: ($b | map(.retrans + .retrans_back) | add), dev_drops: ($b | map(.dev_drops) | add),
		   idle_ns: ($b | map(.idle_ns) | med),
		   stack_forwarded: ($b | map(.stack_forwarded) | add),
		   router_skbs: ($b | map(.w0_skbs + .e0_skbs + .w1_skbs + .e1_skbs) | add)})
	| (map({key: .config, value: .per_mb.median}) | from_entries) as $m
	| map(. + {per_router_per_mb: (if .config == "direct" or ($m.direct | not) then null
		else ((.per_mb.median - $m.direct) / 2 | floor) end)})
	| .[]' "$runs"
