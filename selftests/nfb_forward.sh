#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Forwarding through the module: TCP and UDP, IPv4 and IPv6, without and
# with masquerade, and TCP with GRO on the router's input. For each case:
#   - the bytes received are the bytes sent (cmp);
#   - the module took the packets that did not go through the forward
#     chain (router rx - slow path - non-TCP/UDP), by its own counters
#     against the interface and nft counters, to within 1 % or 3 packets;
#   - no checksum error on client or server.
# NFB_FWD_MASQ=1 (nfb_forward_nat.sh) runs the masquerade cases instead.
set -eu
# shellcheck source=selftests/lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=tools/testing/lib/fastpath.sh
source "$NFB_LIB/fastpath.sh"

nfb_require_tool ip nft python3 socat nstat ethtool cmp

ret=0
# shellcheck disable=SC2317 # called through the EXIT trap
cleanup() {
	cleanup_all_ns
	fp_cleanup_tmp
	if nfb_module_loaded; then nfb_unload_module; fi
}
trap cleanup EXIT

nfb_load_module
fp_topology
fp_tmpdir
fp_make_file "$FP_TMP/in" 1
# TCP goes in GSO skbs of up to 64 KiB: 1 MiB is only a few dozen of them,
# and the one or two a flow's start and end leave to the stock path would
# weigh more than 1 %. 4 MiB keeps them under it.
fp_make_file "$FP_TMP/in_tcp" 4

# One transfer and its checks. run_case NAME PROTO DSTADDR [gro]
# With GRO the interface counts wire packets and the module counts GRO
# skbs: then the check is that the slow path stays at the flow set-up and
# tear-down packets and that the module declined none of the flow's
# packets for a reason the stock flowtable would have accepted.
run_case() {
	local name=$1 proto=$2 addr=$3 gro=${4:-} in=$FP_TMP/in
	local rx0 fwd0 tk0 nf0 cs0 rx1 fwd1 tk1 nf1 cs1 off taken dc0 slack

	rm -f "$FP_TMP/out"
	if [ "$proto" = tcp ]; then in=$FP_TMP/in_tcp; fi
	read -r rx0 fwd0 tk0 nf0 cs0 < <(fp_snapshot)
	dc0=0
	if [ -n "$gro" ]; then
		dc0=$(fp_stat "$R" 'sum(v for k, v in t["decline"].items() if k not in ("miss", "not_ip", "l4proto", "tcp_flags"))')
	fi

	if ! "fp_${proto}_copy" "$addr" "$in" "$FP_TMP/out"; then
		log_fail "$name: transfer failed"
		ret=1
		return
	fi

	read -r rx1 fwd1 tk1 nf1 cs1 < <(fp_snapshot)

	if cmp -s "$in" "$FP_TMP/out"; then
		log_pass "$name: data received identical"
	else
		log_fail "$name: data differs ($(stat -c %s "$FP_TMP/out") bytes received)"
		ret=1
	fi

	off=$(((rx1 - rx0) - (fwd1 - fwd0) - (nf1 - nf0)))
	taken=$((tk1 - tk0))
	if [ -n "$gro" ]; then
		# skbs the module saw that were neither taken nor slow path
		off=$((taken + $(fp_stat "$R" 'sum(v for k, v in t["decline"].items() if k not in ("miss", "not_ip", "l4proto", "tcp_flags"))') - dc0))
	fi
	# At most 1 % or 3 packets, whichever is more, between the counters:
	# they are read one after the other while the last ACKs still pass,
	# and on 6.12 a MiB of TCP crosses veth in about 250 GSO skbs (254 of
	# 257 seen once in CI; 1121 of 1120 in the same run).
	slack=$((off / 100))
	[ "$slack" -ge 3 ] || slack=3
	if [ "$off" -gt 30 ] && [ $((taken + slack)) -ge "$off" ] &&
		[ $((fwd1 - fwd0)) -lt 20 ]; then
		log_pass "$name: module took $taken of $off offloaded packets (slow path $((fwd1 - fwd0)))"
	else
		log_fail "$name: module took $taken of $off offloaded packets (slow path $((fwd1 - fwd0)))"
		echo "INFO: $name: $(fp_stat "$R" '{k: t[k] for k in ("decline", "fallback")}')"
		ret=1
	fi

	if [ "$cs1" -eq "$cs0" ]; then
		log_pass "$name: no checksum errors"
	else
		log_fail "$name: $((cs1 - cs0)) checksum errors"
		ret=1
	fi
}

# The flowtable has "counter": offloaded packets are added to conntrack's
# counters (nf_conntrack_acct must be on when the entry is made).
# check_acct NAME FAMILY: the flow's original direction counted every
# datagram of the file (1 MiB / 1200 bytes = 874).
check_acct() {
	local n
	n=$(ip netns exec "$R" conntrack -L -f "$2" -p udp --dport 5202 2>/dev/null |
		sed -n 's/.*dport=5202 packets=\([0-9]*\).*/\1/p' | sort -n | tail -n 1)
	if [ "${n:-0}" -ge 874 ]; then
		log_pass "$1: conntrack counted $n packets"
	else
		log_fail "$1: conntrack counted ${n:-no} packets, expected >= 874"
		ret=1
	fi
}

masq=${NFB_FWD_MASQ:-0}
ip netns exec "$R" nft flush ruleset
ip netns exec "$R" conntrack -F 2>/dev/null || true
fp_ruleset 0 "$masq"
ip netns exec "$R" sysctl -qw net.netfilter.nf_conntrack_acct=1
fp_genl "$R" attach inet fp ft
sfx=
[ "$masq" = 0 ] || sfx=" masquerade"
run_case "tcp ipv4$sfx" tcp 10.0.2.1
run_case "tcp ipv6$sfx" tcp fd00:2::1
run_case "udp ipv4$sfx" udp 10.0.2.1
check_acct "udp ipv4$sfx" ipv4
run_case "udp ipv6$sfx" udp fd00:2::1
check_acct "udp ipv6$sfx" ipv6
fp_genl "$R" detach inet fp ft

[ "$masq" = 0 ] || exit "$ret"

# GRO on the router's input: aggregated TCP arrives as GSO skbs, veth runs
# NAPI, so the router sees batches; the bulks get bigger than one.
ip netns exec "$R" ethtool -K r0 gro on >/dev/null
ip netns exec "$C" ethtool -K c0 tso off >/dev/null
fp_genl "$R" attach inet fp ft
fp_genl "$R" reset
run_case "tcp ipv4 gro" tcp 10.0.2.1 gro
echo "INFO: gro runs: $(fp_genl "$R" stats | python3 -c '
import json, sys
t = json.load(sys.stdin)["total"]
print(t["packets"], "packets", t["bulks"], "bulks, sizes", t["hist"],
      "fallback", t["fallback"], "drop", t["drop"])')"
fp_genl "$R" detach inet fp ft

exit "$ret"
