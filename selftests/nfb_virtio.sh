#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The NIC-driver path: client - router - server over virtio-net pairs joined
# by QEMU hubs (needs tools/vm/run --nics 2), noqueue on the router's
# output. pktgen sends the same UDP stream twice, through the stock
# flowtable and through the module. Checks, in the same run:
#   - the module's mean bulk size is above 1;
#   - virtqueue kicks per packet on the output are at most half the stock
#     flowtable's;
#   - both runs deliver at least 95 % of what reached the router (a full
#     virtqueue on a noqueue device drops), the module as large a share as
#     stock; the module takes at least 99 % of it.
# Shares of what r0 received, not of what pktgen sent: what the router's
# receive ring had no room for never reaches the stack, and how much that
# is depends on the kernel's speed (the debug kernel received 80 %).
set -eu
# shellcheck source=selftests/lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=selftests/lib_fastpath.sh
source "$(dirname "$0")/lib_fastpath.sh"

nfb_require_tool ip nft python3 ethtool
if ! "$NFB_REPO/tools/vm/nic" 1 2 >/dev/null 2>&1; then
	nfb_cannot_run "needs two virtio-net NIC pairs (tools/vm/run --nics 2)"
fi
modprobe pktgen 2>/dev/null || nfb_cannot_run "no pktgen module"

COUNT=${NFB_VIRTIO_COUNT:-20000}
# shellcheck disable=SC2317 # called through the EXIT trap
cleanup() {
	fp_virtio_release
	cleanup_all_ns
	if nfb_module_loaded; then nfb_unload_module; fi
}
trap cleanup EXIT

nfb_load_module
fp_topology_virtio
ip netns exec "$R" tc qdisc replace dev r1 root noqueue
fp_ruleset 0 0
rmac=$(ip netns exec "$R" cat /sys/class/net/r0/address)

pg() { ip netns exec "$C" sh -c "echo '$2' > /proc/net/pktgen/$1"; }

# ethtool -S counter NAME of r1's queue 0: tx_queue_0_NAME on 6.1,
# tx0_NAME since the virtio-net statistics rework (6.10).
r1stat() {
	ip netns exec "$R" ethtool -S r1 |
		awk -v a="tx_queue_0_$1:" -v b="tx0_$1:" '$1 == a || $1 == b { s += $2 } END { print s + 0 }'
}
r1tx() { ip netns exec "$R" cat /sys/class/net/r1/statistics/tx_packets; }
s0rx() { ip netns exec "$S" cat /sys/class/net/s0/statistics/rx_packets; }
r0rx() { ip netns exec "$R" cat /sys/class/net/r0/statistics/rx_packets; }

# run_pktgen: COUNT UDP packets of 128 bytes from c0; prints
# "kicks tx_packets received arrived" (arrived: r0's rx_packets).
run_pktgen() {
	local k0 p0 r0 a0 k1 p1 r1 a1
	k0=$(r1stat kicks)
	p0=$(r1tx)
	r0=$(s0rx)
	a0=$(r0rx)
	pg kpktgend_0 rem_device_all
	pg kpktgend_0 "add_device c0"
	for c in "count $COUNT" "pkt_size 128" "delay 0" "burst 8" \
		"dst 10.0.2.1" "src_min 10.0.1.1" "src_max 10.0.1.1" \
		"dst_mac $rmac" "udp_src_min 9" "udp_src_max 9" \
		"udp_dst_min 9" "udp_dst_max 9"; do
		pg c0 "$c"
	done
	pg pgctrl start
	busywait 10000 eval "[ \$((\$(s0rx) - $r0)) -ge $((COUNT * 99 / 100)) ]" || true
	k1=$(r1stat kicks)
	p1=$(r1tx)
	r1=$(s0rx)
	a1=$(r0rx)
	echo "$((k1 - k0)) $((p1 - p0)) $((r1 - r0)) $((a1 - a0))"
}

# Stock flowtable first (the flow is offloaded by its second packet).
read -r ks ps rs as < <(run_pktgen)
echo "INFO: stock: kicks $ks tx $ps received $rs of $as that reached r0 ($COUNT sent)"

fp_genl "$R" attach inet fp ft
fp_genl "$R" reset
read -r km pm rm am < <(run_pktgen)
taken=$(fp_stat "$R" 't["packets"]')
bulks=$(fp_stat "$R" 't["bulks"]')
echo "INFO: module: kicks $km tx $pm received $rm of $am that reached r0 ($COUNT sent), taken $taken in $bulks bulks"
echo "INFO: module bulk sizes: $(fp_stat "$R" 't["hist"]')"

# A full virtqueue on a noqueue device drops, with or without the module.
# At least half the stream reaches the router, or the shares mean little.
check "the stream reached r0 (stock $as, module $am of $COUNT)" \
	test $((as * 2)) -ge "$COUNT" -a $((am * 2)) -ge "$COUNT"
check "stock run delivers ($rs of $as)" test $((rs * 100)) -ge $((as * 95))
check "module run delivers ($rm of $am)" test $((rm * 100)) -ge $((am * 95))
# rm / am >= 99 % of rs / as
check "module delivers as large a share as stock, within 1 %" \
	test $((rm * as * 100)) -ge $((rs * am * 99))
check "module took the stream ($taken of $am)" \
	test $((taken * 100)) -ge $((am * 99))
check "mean bulk size above 1 ($taken / $bulks)" test "$taken" -gt "$bulks"
check "virtio counters read (stock tx $ps, module tx $pm)" \
	test "$ps" -gt 0 -a "$pm" -gt 0
# kicks per packet: km/pm <= ks/ps / 2  <=>  2 * km * ps <= ks * pm
check "kicks per packet at most half of stock ($km/$pm vs $ks/$ps)" \
	test $((2 * km * ps)) -le $((ks * pm))

fp_genl "$R" detach inet fp ft
exit "$ret"
