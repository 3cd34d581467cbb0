#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Wall-clock figures, inside a guest booted without -icount (multi-threaded
# TCG, tools/bench/run starts it once the icount boots are done, alone on
# the host): packets per second through the veth topology and iperf3 TCP
# goodput, plain forwarding, stock flowtable and nf_flow_bulk side by side.
# They depend on the host and on TCG; the icount figures are the reference.
# Prints one JSON object per point on stdout.
#
#   tools/bench/icount/wall.sh [--flows "1 10"] [--count N] [--reps N] [--seconds S]
set -eu

repo=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$repo"
# shellcheck source=tools/testing/lib/topology.sh
source tools/testing/lib/topology.sh

flows_list="1 10"
count=100000
reps=3
seconds=5
configs="plain stock bulk"
while [ $# -gt 0 ]; do
	case "$1" in
	--flows) flows_list=$2; shift 2 ;;
	--count) count=$2; shift 2 ;;
	--reps) reps=$2; shift 2 ;;
	--seconds) seconds=$2; shift 2 ;;
	*) echo "wall.sh: unknown option $1" >&2; exit 2 ;;
	esac
done

kver=$(uname -r)
bench_start
# shellcheck source=tools/testing/lib/nfb.sh
source tools/testing/lib/nfb.sh
nfb_load_module


configure() { # configure plain|stock|bulk
	topo_flowtable_del
	case "$1" in
	stock) topo_flowtable_add ingress ;;
	bulk) topo_flowtable_add early_ingress ;;
	esac
}

# pps CONFIG FLOWS: the best of $reps generator runs, each fully delivered.
pps() {
	local config=$1 flows=$2 dmac rep sent recv first last best=0 delivered=true
	dmac=$(in_ns "$NS_WEST" cat /sys/class/net/w0/address)
	echo "sink dev=r0" | in_ns "$NS_SUNRISE" tee "$ctl" >/dev/null
	for rep in 0 1 2; do # warm-up: puts every flow in the flowtables
		echo "gen dev=s0 dmac=$dmac src=10.0.1.1 dst=$TOPO_DST4 flows=$flows count=$flows burst=32 len=128" |
			in_ns "$NS_SUNSET" tee "$ctl" >/dev/null
	done
	for ((rep = 0; rep < reps; rep++)); do
		echo reset >"$ctl"
		echo "gen dev=s0 dmac=$dmac src=10.0.1.1 dst=$TOPO_DST4 flows=$flows count=$count burst=32 len=128" |
			in_ns "$NS_SUNSET" tee "$ctl" >/dev/null
		ctl_read
		sent=${ctl_val[gen_sent]:-0}
		recv=${ctl_val[sink_packets]:-0}
		first=${ctl_val[gen_start_ns]:-0}
		last=${ctl_val[sink_last_ns]:-0}
		if [ "${sent:-0}" -eq 0 ] || [ "$sent" != "$recv" ]; then
			delivered=false
			continue
		fi
		# packets per second, in integers: sent * 1e9 / elapsed ns
		local r=$((sent * 1000000000 / (last - first)))
		[ "$r" -gt "$best" ] && best=$r
	done
	echo "sink off" | in_ns "$NS_SUNRISE" tee "$ctl" >/dev/null
	jq -cnM --arg kernel "$kver" --arg config "$config" --argjson flows "$flows" \
		--argjson pps "$best" --argjson delivered "$delivered" \
		--argjson count "$count" --argjson reps "$reps" \
		'{kind: "pps", kernel: $kernel, link: "veth", gro: "on", config: $config,
		  flows: $flows, count: $count, reps: $reps, delivered: $delivered,
		  pps: (if $delivered then $pps else null end)}'
}

# goodput CONFIG: iperf3 TCP, sunset -> sunrise, $seconds seconds.
goodput() {
	local config=$1 out bps
	in_ns "$NS_SUNRISE" iperf3 -s -1 -D -p 5201 >/dev/null
	busywait 10000 eval "in_ns '$NS_SUNRISE' ss -Htln 'sport = :5201' | grep -q LISTEN"
	out=$(in_ns "$NS_SUNSET" iperf3 -c "$TOPO_DST4" -p 5201 -t "$seconds" -J)
	bps=$(jq '.end.sum_received.bits_per_second | floor' <<<"$out")
	jq -cnM --arg kernel "$kver" --arg config "$config" --argjson bps "$bps" \
		--argjson seconds "$seconds" \
		'{kind: "goodput", kernel: $kernel, link: "veth", gro: "on",
		  config: $config, seconds: $seconds, bits_per_second: $bps}'
}

topo_create veth
topo_gro on
in_ns "$NS_SUNSET" ping -q -c 1 -W 5 "$TOPO_DST4" >/dev/null
for config in $configs; do
	configure "$config"
	for flows in $flows_list; do
		pps "$config" "$flows"
	done
	goodput "$config"
	if [ "$config" = bulk ]; then
		# The module must have carried the traffic, or the figure is stock's.
		taken=$(in_ns "$NS_WEST" "$repo/build/userspace/flowbulk" -j stats |
			jq '.stats.total.packets')
		jq -cnM --argjson taken "$taken" '{kind: "taken", taken: $taken}'
	fi
done
