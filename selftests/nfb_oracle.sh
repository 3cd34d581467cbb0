#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Differential oracle: the same seeded traffic through the router twice,
# once with the stock flowtable alone and once with the module attached;
# what reaches the server and the ICMP errors that come back to the client
# must be the same, packet for packet and in the same order per flow, and
# must be what was sent.
#
#   nfb_oracle.sh [--seed N] [--gro-batch N]
#
# --seed N (or NFB_ORACLE_SEED=N; default 1, "random" draws one) seeds the
# traffic; --gro-batch N (NFB_ORACLE_GRO_BATCH) sets net.core.gro_normal_batch
# for both runs (default 1, see below). A failure prints the seed, the
# first differing packet per flow and the command that reproduces it.
#
# The traffic (nfb_oracle.py): 8 flows (UDP, TCP x IPv4, IPv6 x masquerade
# or not), offloaded by warm-up packets before anything is measured, then
# about 250 packets of random sizes in bursts: mostly data, mixed with
# packets of those offloaded flows that must take the slow path: IPv4
# options, over the egress MTU with DF (ICMP frag-needed) and without
# (fragmented), IPv6 over the MTU (packet too big), TTL / hop limit 1
# (time exceeded), and each TCP flow ends with a FIN or a RST.
#
# Bursts: the module reorders only what waits in its per-CPU queue, so
# the router must receive several packets in one NAPI poll. r0 and r1 run
# veth NAPI (GRO on, TSO off on the peers), threaded, the NAPI kthreads
# pinned to the generator's CPU; the generator sends each burst as
# SCHED_FIFO, so the kthread polls the whole burst at once. The module's
# bulk-size histogram must show bulks of 2 or more, else the test fails.
# Long under TCG on a busy host (up to ~280 s seen):
# nfb-timeout: 600
set -eu
# shellcheck source=selftests/lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=selftests/lib_fastpath.sh
source "$(dirname "$0")/lib_fastpath.sh"

seed=${NFB_ORACLE_SEED:-1}
gro_batch=${NFB_ORACLE_GRO_BATCH:-1}
while [ $# -gt 0 ]; do
	case "$1" in
	--seed) seed=${2:?--seed N}; shift 2 ;;
	--gro-batch) gro_batch=${2:?--gro-batch N}; shift 2 ;;
	*) echo "usage: $0 [--seed N] [--gro-batch N]" >&2; exit "$ksft_fail" ;;
	esac
done
[ "$seed" != random ] || seed=$((RANDOM * 32768 + RANDOM))
case "$seed$gro_batch" in
'' | *[!0-9]*) echo "seed and batch are numbers: $seed $gro_batch" >&2; exit "$ksft_fail" ;;
esac

nfb_require_tool ip nft python3 ethtool conntrack

ORACLE=("$FP_DIR/nfb_oracle.py")
SYSCTL_RESTORE=()

# shellcheck disable=SC2317 # called through the EXIT trap
cleanup() {
	local s
	cleanup_all_ns
	fp_cleanup_tmp
	for s in "${SYSCTL_RESTORE[@]}"; do
		sysctl -qw "$s" || true
	done
	if nfb_module_loaded; then nfb_unload_module; fi
}
trap cleanup EXIT

repro() {
	local env="NFB_ORACLE_SEED=$seed"
	[ "$gro_batch" = 1 ] || env="$env NFB_ORACLE_GRO_BATCH=$gro_batch"
	[ -z "${NFB_KMOD_DIR:-}" ] || env="$env NFB_KMOD_DIR=$NFB_KMOD_DIR"
	printf 'tools/vm/run --kernel %s -- env %s selftests/run_guest.sh nfb_oracle.sh' \
		"$(uname -r)" "$env"
}

# The global ICMP limits (per namespace on newer kernels, global on 6.1).
icmp_limits() {
	local k
	for k in net.ipv4.icmp_msgs_per_sec net.ipv4.icmp_msgs_burst; do
		sysctl_set "$k" 100000
	done
	ip netns exec "$R" sysctl -qw net.ipv4.icmp_ratelimit=0 \
		net.ipv6.icmp.ratelimit=0 net.ipv4.icmp_msgs_per_sec=100000 \
		net.ipv4.icmp_msgs_burst=100000
}

# sysctl_set KEY VALUE in the initial namespace, restored at exit.
sysctl_set() {
	SYSCTL_RESTORE+=("$1=$(sysctl -n "$1")")
	sysctl -qw "$1=$2"
}

mac() {
	ip -n "$1" -br link show "$2" | awk '{ print $3 }'
}

# end_drop NS DEV: NS's stack never sees the TCP and UDP that DEV receives.
end_drop() {
	ip netns exec "$1" nft -f - <<-EOF
	table netdev oracle {
		chain in {
			type filter hook ingress device $2 priority 0;
			meta l4proto { tcp, udp } drop
		}
	}
	EOF
	ip netns exec "$1" ethtool -K "$2" tso off >/dev/null
}

# The ruleset of R: flowtable ft on r0 r1, every TCP and UDP flow offloaded,
# masquerade for the source ports 30000-39999.
oracle_ruleset() {
	ip netns exec "$R" nft -f - <<-EOF
	table inet fp {
		flowtable ft { hook ingress priority 0; devices = { r0, r1 }; counter; }
		chain fwdchain {
			type filter hook forward priority filter; policy accept;
			meta l4proto { tcp, udp } flow add @ft
			counter
		}
		chain post {
			type nat hook postrouting priority srcnat;
			oifname "r1" meta l4proto { tcp, udp } th sport 30000-39999 masquerade
		}
	}
	EOF
}

# C - R - S with r1's MTU 1280; C and S drop the TCP and UDP they receive
# (their stacks must not answer the generator's packets; the captures see
# them first); R has permanent neighbours and no ICMP rate limits.
oracle_topology() {
	local cmac smac
	fp_topology
	ip -n "$R" link set r1 mtu 1280
	oracle_ruleset
	end_drop "$C" c0
	end_drop "$S" s0
	cmac=$(mac "$C" c0)
	smac=$(mac "$S" s0)
	ip -n "$R" -batch - <<-EOF
	neigh replace 10.0.1.1 lladdr $cmac nud permanent dev r0
	neigh replace fd00:1::1 lladdr $cmac nud permanent dev r0
	neigh replace 10.0.2.1 lladdr $smac nud permanent dev r1
	neigh replace fd00:2::1 lladdr $smac nud permanent dev r1
	EOF
	icmp_limits
	# Bursts: r0 and r1 receive in veth NAPI mode, threaded.
	ip netns exec "$R" sh -ec "ethtool -K r0 gro on; ethtool -K r1 gro on
		echo 1 > /sys/class/net/r0/threaded
		echo 1 > /sys/class/net/r1/threaded"
}

ct_empty() {
	[ "$(ip netns exec "$R" sysctl -n net.netfilter.nf_conntrack_count)" = 0 ]
}

# Between the runs: a new flowtable (the old one and its flows are freed
# with the table) and no conntrack entry left.
oracle_reset() {
	ip netns exec "$R" nft delete table inet fp
	ip netns exec "$R" conntrack -F >/dev/null 2>&1
	ip netns exec "$R" conntrack -F -f ipv6 >/dev/null 2>&1
	busywait 10000 ct_empty
	oracle_ruleset
}

# oracle_run NAME [ARGS]: the traffic, recorded in $FP_TMP/NAME.json.
oracle_run() {
	local name=$1
	shift
	python3 "${ORACLE[@]}" run --seed "$seed" --ns "$C" "$R" "$S" \
		--out "$FP_TMP/$name.json" --cpu $(($(nproc) - 1)) "$@"
}

# On failure the two runs are kept for a look with nfb_oracle.py plan /
# compare.
keep_runs() {
	local dir
	dir=$NFB_REPO/build/selftests/$(uname -r)/nfb_oracle
	mkdir -p "$dir"
	cp "$FP_TMP/stock.json" "$FP_TMP/module.json" "$dir/" 2>/dev/null || true
	echo "the runs are in $dir (nfb_oracle.py plan|compare)" >&2
}

echo "INFO: seed $seed; reproduce with: $(repro)"
nfb_load_module
fp_tmpdir
oracle_topology

# GRO hands the stack its packets in lists of gro_normal_batch (8) and the
# list receive passes a list's slow-path packets to IP after the whole list
# went through the ingress hooks, while the stock flowtable sends its
# packets on at once: the stock path itself then lets a flow's later
# packets overtake its earlier slow-path ones. Lists of one keep that
# kernel behaviour out of both runs; --gro-batch 8 shows it.
sysctl_set net.core.gro_normal_batch "$gro_batch"

# 1. The reference: the stock flowtable alone.
check "stock flowtable run" oracle_run stock

# 2. The module attached.
oracle_reset
check "module run" oracle_run module --attach inet/fp/ft \
	--ref "$FP_TMP/stock.json" --verdicts "$FP_TMP/verdicts"

# 3. The verdicts (details above, on stderr).
if [ -f "$FP_TMP/verdicts" ]; then
	while read -r status what; do
		check "$what" test "$status" = ok
	done <"$FP_TMP/verdicts"
fi

if [ "$ret" != 0 ]; then
	keep_runs
	echo "seed $seed failed; reproduce with: $(repro)" >&2
fi
exit "$ret"
