#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Flow set-up on the benchmark topology (issue 24): new flows arriving at a
# steady rate, the stock flowtable against the module. Run inside a guest
# (tools/bench/run --setup, or tools/vm/run --icount -- tools/bench/icount/setup.sh).
#
#   tools/bench/icount/setup.sh [--rate N] [--active N] [--count N] [--reps N]
#                        [--configs "stock bulk"] [--gro on|off]
#
# The generator (nfb_bench.ko churn=1) sends rounds of --active packets, one
# per active flow, every 1/--rate seconds of guest time (gap=); each round
# brings one new flow and retires the oldest, so --rate new flows arrive
# per second and each flow gets --active packets, one per round, over
# --active rounds. Every run starts at source ports no earlier run used:
# its flows are new to conntrack and to both flowtables.
#
# Per run, from the routers: the packets their IP stacks forwarded (the slow
# path: ip_forward()'s ForwDatagrams, both routers), per new flow and
# router, and the flows in the flowtables afterwards. The slow-path packets
# of a flow are the packets before it was offloaded, one per round: that
# count times 1/--rate is the time to offload. The cost: guest instructions
# per packet, generator to sink (QEMU -icount), the generator's waiting
# subtracted. A JSON line per configuration, with every run's figures.
set -eu

repo=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$repo"
# shellcheck source=tools/testing/lib/topology.sh
source tools/testing/lib/topology.sh

rate=5000
active=8
count=8000
reps=3
configs="stock bulk"
gro=on
while [ $# -gt 0 ]; do
	case "$1" in
	--rate) rate=$2; shift 2 ;;
	--active) active=$2; shift 2 ;;
	--count) count=$2; shift 2 ;;
	--reps) reps=$2; shift 2 ;;
	--configs) configs=$2; shift 2 ;;
	--gro) gro=$2; shift 2 ;;
	*) echo "setup.sh: unknown option $1" >&2; exit 2 ;;
	esac
done
gap=$((1000000000 / rate))
rounds=$((count / active))
new_flows=$((rounds + active - 1))

bench_start
# shellcheck source=tools/testing/lib/nfb.sh
source tools/testing/lib/nfb.sh
nfb_load_module

topo_create veth none
topo_gro "$gro"
in_ns "$NS_SUNSET" ping -q -c 1 -W 5 "$TOPO_DST4" >/dev/null
dmac=$(in_ns "$NS_WEST" cat /sys/class/net/w0/address)
sport=10000
for config in $configs; do
	topo_flowtable_del
	case "$config" in
	stock) topo_flowtable_add ;;
	bulk) topo_flowtable_add early_ingress ;;
	*) echo "setup.sh: unknown configuration $config" >&2; exit 2 ;;
	esac
	echo "sink dev=r0" | in_ns "$NS_SUNRISE" tee "$ctl" >/dev/null
	runs=()
	for ((rep = 0; rep < reps; rep++)); do
		f0=$(topo_stack_forwarded 4)
		w0=$(topo_offloaded "$NS_WEST" 4) e0=$(topo_offloaded "$NS_EAST" 4)
		echo reset >"$ctl"
		echo "gen dev=s0 dmac=$dmac src=10.0.1.1 dst=$TOPO_DST4 sport=$sport flows=$active burst=$active count=$count churn=1 gap=$gap" |
			in_ns "$NS_SUNSET" tee "$ctl" >/dev/null
		ctl_read
		f1=$(topo_stack_forwarded 4)
		w1=$(topo_offloaded "$NS_WEST" 4) e1=$(topo_offloaded "$NS_EAST" 4)
		runs+=("$(jq -cnM --argjson sent "${ctl_val[gen_sent]}" \
			--argjson received "${ctl_val[sink_packets]:-0}" \
			--argjson reordered "${ctl_val[sink_reordered]:-0}" \
			--argjson ttl_min "${ctl_val[sink_ttl_min]:-0}" \
			--argjson ttl_max "${ctl_val[sink_ttl_max]:-0}" \
			--argjson bad_csum "${ctl_val[sink_bad_csum]:-0}" \
			--argjson elapsed $((${ctl_val[sink_last_ns]:-0} - ${ctl_val[gen_start_ns]:-0} - ${ctl_val[gen_wait_ns]:-0})) \
			--argjson slow $((f1 - f0)) --argjson new_flows "$new_flows" \
			--argjson off_west $((w1 - w0)) --argjson off_east $((e1 - e0)) \
			'{sent: $sent, received: $received, reordered: $reordered,
			  forwarded_right: ($ttl_min == 62 and $ttl_max == 62 and $bad_csum == 0),
			  slow_path_per_flow_and_router: ($slow / $new_flows / 2),
			  offloaded_west: $off_west, offloaded_east: $off_east,
			  instructions_per_packet: (if $received > 0 then $elapsed / $received else null end)}')")
		sport=$((sport + new_flows))
	done
	jq -cnM --arg kernel "$(uname -r)" --arg config "$config" --arg gro "$gro" \
		--argjson rate "$rate" --argjson active "$active" --argjson new_flows "$new_flows" \
		--argjson runs "[$(IFS=,; echo "${runs[*]}")]" \
		'{kernel: $kernel, experiment: "flow-setup", config: $config, gro: $gro,
		  new_flows_per_second: $rate, active_flows: $active, new_flows_per_run: $new_flows,
		  delivered: ($runs | all(.sent > 0 and .sent == .received)),
		  runs: $runs}'
	echo "sink off" | in_ns "$NS_SUNSET" tee "$ctl" >/dev/null
done
