#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Where the instructions go, inside the guest (tools/bench/profile boots it
# with --icount): the veth topology, one configuration (stock or bulk), its
# flows warmed up, then perf samples the cpu-clock while the generator runs.
# Under icount the cpu-clock counts instructions, so the samples are an
# instruction profile (perf's own sampling costs a little, alike for all).
#
#   tools/bench/profiling/guest.sh CONFIG [FLOWS] [GRO] [ENCAP]
#
# ENCAP: none (default), vlan or pppoe on the west - east link
# (tools/testing/lib/topology.sh).
set -eu

repo=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$repo"
# shellcheck source=tools/testing/lib/topology.sh
source tools/testing/lib/topology.sh
# shellcheck source=tools/testing/lib/nfb.sh
source tools/testing/lib/nfb.sh

config=${1:?usage: guest.sh stock|bulk [FLOWS] [GRO] [ENCAP]}
flows=${2:-10}
gro=${3:-on}
encap=${4:-none}
count=20000

bench_start

topo_create veth "$encap"
topo_gro "$gro"
if [ -n "${NFB_PROFILE_QDISC:-}" ]; then
	ip netns exec "$NS_WEST" tc qdisc replace dev w1 root "$NFB_PROFILE_QDISC"
	ip netns exec "$NS_EAST" tc qdisc replace dev e1 root "$NFB_PROFILE_QDISC"
fi
if [ "$config" = bulk ]; then
	nfb_load_module
	topo_flowtable_add early_ingress
else
	topo_flowtable_add ingress
fi
ip netns exec "$NS_SUNSET" ping -q -c 1 -W 5 "$TOPO_DST4" >/dev/null
echo "sink dev=r0" | ip netns exec "$NS_SUNRISE" tee "$ctl" >/dev/null
dmac=$(ip netns exec "$NS_WEST" cat /sys/class/net/w0/address)
gen() {
	echo "gen dev=s0 dmac=$dmac src=10.0.1.1 dst=$TOPO_DST4 flows=$flows count=$1 burst=32 len=128" |
		ip netns exec "$NS_SUNSET" tee "$ctl" >/dev/null
}
for _ in 1 2 3; do gen "$flows"; done
echo reset >"$ctl"

# One sample every $count instructions while $count packets pass: a
# symbol's sample count is its instructions per packet (whole path, both
# routers, generator and sink included).
# NFB_CALLERS="sym ...": also record call chains, and print who calls these.
callg=() flat=()
[ -z "${NFB_CALLERS:-}" ] || { callg=(-g); flat=(-g none); }
perf record -q -e cpu-clock -c "$count" "${callg[@]}" -a -o /tmp/perf.data -- \
	bash -c "echo 'gen dev=s0 dmac=$dmac src=10.0.1.1 dst=$TOPO_DST4 flows=$flows count=$count burst=32 len=128' | ip netns exec $NS_SUNSET tee $ctl >/dev/null" \
	>/dev/null 2>&1
echo "== $config, $flows flows, GRO $gro, encap $encap: $(sed -n 's/^sink_packets=//p' "$ctl") of $count packets delivered"
echo "   share  instructions/packet  symbol"
perf report -i /tmp/perf.data --stdio --no-children -n --sort sym "${flat[@]}" \
	--percent-limit "${NFB_PERCENT_LIMIT:-0.7}" 2>/dev/null |
	grep -v '^#' | grep -v '^$'
for sym in ${NFB_CALLERS:-}; do
	echo "== callers of $sym"
	perf report -i /tmp/perf.data --stdio --no-children -n --sort sym -S "$sym" \
		-g caller,0.5,callee,function,percent 2>/dev/null |
		grep -v '^#' | grep -v '^$' | head -60
done
# NFB_ANNOTATE="sym ...": the instruction-level profile of these symbols.
for sym in ${NFB_ANNOTATE:-}; do
	echo "== annotate $sym"
	perf annotate -i /tmp/perf.data --stdio -s "$sym" 2>/dev/null |
		grep -E '^ +[0-9]+\.[0-9]+ ' | sort -rn | head -40
done
