#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# pppd with the kernel PPPoE plugin, as selftests/nfb_pppoe.sh and the
# benchmark's PPPoE link (tools/bench/topology.sh) run it. Sourced.

# nfb_ppp_plugin: the kernel PPPoE plugin of pppd, pppoe.so (ppp 2.5) or
# rp-pppoe.so (older); fails when there is none.
nfb_ppp_plugin() {
	local p
	for p in /usr/lib/pppd/*/pppoe.so /usr/lib/pppd/*/rp-pppoe.so; do
		[ -e "$p" ] && { basename "$p"; return 0; }
	done
	return 1
}

# nfb_pppd NS PLUGIN LOG OPTION...: pppd in NS as a background job, its
# output in LOG, without the system's ip-up / ip-down scripts and with
# nothing negotiated that would change the packets (compression). Sets
# NFB_PPPD_PID: pppd's own PID (ip netns exec execs it), which SIGTERM
# ends cleanly (LCP terminate, PADT).
nfb_pppd() {
	local ns=$1 plugin=$2 log=$3
	shift 3
	ip netns exec "$ns" pppd plugin "$plugin" noauth nodetach \
		ip-up-script /bin/true ip-down-script /bin/true \
		noccp novj novjccomp noaccomp nopcomp nobsdcomp nodeflate \
		lcp-echo-interval 0 maxfail 1 "$@" >"$log" 2>&1 &
	# shellcheck disable=SC2034 # read by the callers
	NFB_PPPD_PID=$!
}
