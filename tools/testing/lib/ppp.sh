#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# pppd with the kernel PPPoE plugin, as selftests/nfb_pppoe.sh,
# selftests/nfb_oracle.sh and the benchmark's PPPoE link (topology.sh) run
# it, and the selftests' waits on it. Sourced; nfb_ppp_stop needs nfb.sh's
# busywait.

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

# NFB_PPP_PIDS: the pppd a selftest started and nfb_ppp_stop ends.
NFB_PPP_PIDS=()

nfb_pid_gone() {
	! kill -0 "$1" 2>/dev/null
}

# nfb_ppp_stop: the pppd of NFB_PPP_PIDS end their sessions (SIGTERM: LCP
# terminate, PADT), killed if they have not within 10 s.
nfb_ppp_stop() {
	local p
	for p in "${NFB_PPP_PIDS[@]}"; do
		kill "$p" 2>/dev/null || true
	done
	for p in "${NFB_PPP_PIDS[@]}"; do
		busywait 10000 nfb_pid_gone "$p" || kill -9 "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	NFB_PPP_PIDS=()
}

# nfb_has_addr NS DEV ADDR: DEV in NS has the IPv4 address ADDR.
nfb_has_addr() {
	ip -n "$1" -4 addr show dev "$2" 2>/dev/null | grep -q "inet $3 "
}

# nfb_has_ll6 NS DEV: IPV6CP is up on DEV (pppd set its link-local address).
nfb_has_ll6() {
	ip -n "$1" -6 addr show dev "$2" 2>/dev/null | grep -q "inet6 fe80::"
}
