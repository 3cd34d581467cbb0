#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The NIC-driver path: client - router - server over virtio-net pairs joined
# by QEMU hubs (needs tools/vm/run --nics 2), noqueue on the router's
# output. pktgen sends the same UDP stream twice, through the stock
# flowtable and through the module. Checks, in the same run:
#   - the module's mean bulk size is above 1;
#   - the driver asks to notify the device (virtqueue_kick_prepare() on
#     r1's transmit queue, counted by a kprobe) at most half as often per
#     packet as with the stock flowtable, and at most twice per bulk: it
#     asks once per packet sent without xmit_more, or that stopped the
#     queue;
#   - both runs deliver at least 95 % of what reached the router, the
#     module takes at least 99 % of it, and what r1 did not send it counted
#     as dropped (a full virtqueue on a noqueue device drops), as the
#     module's xmit drops too.
# Shares of what r0 received, not of what pktgen sent: what the router's
# receive ring had no room for never reaches the stack, and how much that
# is depends on the kernel's speed (the debug kernel received 80 %).
# Not compared: the kicks themselves (the device suppresses notifications
# while QEMU's thread drains the queue, so they follow the host's load:
# 194 module / 282 stock in one CI run), nor the two runs' delivered
# shares (a bulk fills the ring faster than single packets do, and how
# often it overflows follows the host's load too: 97.4 % against 99.3 %
# in that run).
set -eu
# shellcheck source=selftests/lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=tools/testing/lib/fastpath.sh
source "$NFB_LIB/fastpath.sh"

nfb_require_tool ip nft python3 ethtool
[ "$(uname -m)" = x86_64 ] || nfb_cannot_run "the kprobe reads x86-64 registers"
if ! "$NFB_REPO/tools/vm/nic" 1 2 >/dev/null 2>&1; then
	nfb_cannot_run "needs two virtio-net NIC pairs (tools/vm/run --nics 2)"
fi
modprobe pktgen 2>/dev/null || nfb_cannot_run "no pktgen module"

COUNT=${NFB_VIRTIO_COUNT:-20000}
TRACE=/sys/kernel/tracing
EV=$TRACE/events/nfb_virtio/kick
# shellcheck disable=SC2317 # called through the EXIT trap
cleanup() {
	kick_probe off
	if [ -n "$record_cmd" ]; then echo "$record_cmd" >"$TRACE/options/record-cmd"; fi
	fp_virtio_release
	cleanup_all_ns
	if nfb_module_loaded; then nfb_unload_module; fi
}

# kick_probe on|off: a kprobe on virtqueue_kick_prepare() counting calls
# per virtio device index and virtqueue index in a hist trigger. The
# offsets are struct virtqueue's name, vdev, index (24, 32, 40 on x86-64)
# and virtio_device.index (0): unchanged since 2.6, the same in the 6.1 and
# 6.12 headers; read from BTF they would need the virtio_ring module's
# split BTF on 6.1. With record-cmd off: task names would need the
# sched_switch probe patched into __schedule() (see nfb_txq.sh).
record_cmd=
kick_probe() {
	if [ "$1" = on ]; then
		[ -d "$TRACE/events" ] || mount -t tracefs nodev "$TRACE"
		record_cmd=$(cat "$TRACE/options/record-cmd")
		echo 0 >"$TRACE/options/record-cmd"
		echo "p:nfb_virtio/kick virtqueue_kick_prepare vdi=+0(+32(%di)):s32 vqi=+40(%di):u32" \
			>>"$TRACE/kprobe_events"
		echo 'hist:keys=vdi,vqi' >"$EV/trigger"
		echo 1 >"$EV/enable"
	elif [ -d "$EV" ]; then
		echo 0 >"$EV/enable"
		echo '!hist:keys=vdi,vqi' >"$EV/trigger" 2>/dev/null || true
		echo "-:nfb_virtio/kick" >>"$TRACE/kprobe_events"
	fi
}
trap cleanup EXIT

# kick_prepares: calls on r1's transmit queue 0 (virtqueue 1: rx0, tx0, ...).
kick_prepares() {
	awk -v d="$r1vdev" '
		{ gsub(/[{},:]/, " ") }
		$1 == "vdi" && $2 == d && $3 == "vqi" && $4 == 1 && $5 == "hitcount" { n = $6 }
		END { print n + 0 }' "$EV/hist"
}

nfb_load_module
fp_topology_virtio
ip netns exec "$R" tc qdisc replace dev r1 root noqueue
fp_ruleset 0 0
rmac=$(ip netns exec "$R" cat /sys/class/net/r0/address)
# r1's virtio device: .../virtioN
r1vdev=$(ip netns exec "$R" readlink -f /sys/class/net/r1/device)
r1vdev=${r1vdev##*/virtio}
case "$r1vdev" in
'' | *[!0-9]*) log_fail "r1 is no virtio device ($r1vdev)"; exit 1 ;;
esac
kick_probe on

pg() { ip netns exec "$C" sh -c "echo '$2' > /proc/net/pktgen/$1"; }

# ethtool -S counter NAME of r1's queue 0: tx_queue_0_NAME on 6.1,
# tx0_NAME since the virtio-net statistics rework (6.10).
r1stat() {
	ip netns exec "$R" ethtool -S r1 |
		awk -v a="tx_queue_0_$1:" -v b="tx0_$1:" '$1 == a || $1 == b { s += $2 } END { print s + 0 }'
}
r1tx() { ip netns exec "$R" cat /sys/class/net/r1/statistics/tx_packets; }
r1drop() { ip netns exec "$R" cat /sys/class/net/r1/statistics/tx_dropped; }
s0rx() { ip netns exec "$S" cat /sys/class/net/s0/statistics/rx_packets; }
r0rx() { ip netns exec "$R" cat /sys/class/net/r0/statistics/rx_packets; }

# shellcheck disable=SC2317 # called through busywait
r0_settled() {
	local now
	now=$(r0rx)
	[ "$now" = "$r0_last" ] && return 0
	r0_last=$now
	return 1
}

# run_pktgen: COUNT UDP packets of 128 bytes from c0; prints
# "kicks kick_prepares tx_packets tx_dropped received arrived" (r1's
# counters, s0's rx_packets, r0's rx_packets).
run_pktgen() {
	local k0 c0 p0 d0 r0 a0 k1 c1 p1 d1 r1 a1
	k0=$(r1stat kicks)
	c0=$(kick_prepares)
	p0=$(r1tx)
	d0=$(r1drop)
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
	# Returns once pktgen has sent the stream; what is still on its way
	# has reached r0 once r0's count stops moving (a poll is some 0.2 s).
	pg pgctrl start
	r0_last=-1
	busywait 10000 r0_settled || true
	# What reached r0 left r1 or was dropped there; then it reached s0.
	busywait 10000 eval "[ \$((\$(r1tx) - $p0 + \$(r1drop) - $d0)) -ge \$((\$(r0rx) - $a0)) ]" || true
	busywait 5000 eval "[ \$((\$(s0rx) - $r0)) -ge \$((\$(r1tx) - $p0)) ]" || true
	k1=$(r1stat kicks)
	c1=$(kick_prepares)
	p1=$(r1tx)
	d1=$(r1drop)
	r1=$(s0rx)
	a1=$(r0rx)
	echo "$((k1 - k0)) $((c1 - c0)) $((p1 - p0)) $((d1 - d0)) $((r1 - r0)) $((a1 - a0))"
}

# Stock flowtable first (the flow is offloaded by its second packet).
read -r ks cs ps ds rs as < <(run_pktgen)
echo "INFO: stock: kicks $ks, kick_prepare $cs, tx $ps, tx_dropped $ds, received $rs of $as that reached r0 ($COUNT sent)"

fp_genl "$R" attach inet fp ft
fp_genl "$R" reset
read -r km cm pm dm rm am < <(run_pktgen)
taken=$(fp_stat "$R" 't["packets"]')
bulks=$(fp_stat "$R" 't["bulks"]')
xdrops=$(fp_stat "$R" 't["drop"]["xmit"]')
echo "INFO: module: kicks $km, kick_prepare $cm, tx $pm, tx_dropped $dm, received $rm of $am that reached r0 ($COUNT sent), taken $taken in $bulks bulks, xmit drops $xdrops"
echo "INFO: module bulk sizes: $(fp_stat "$R" 't["hist"]')"

# At least half the stream reaches the router, or the shares mean little.
check "the stream reached r0 (stock $as, module $am of $COUNT)" \
	test $((as * 2)) -ge "$COUNT" -a $((am * 2)) -ge "$COUNT"
check "stock run delivers ($rs of $as)" test $((rs * 100)) -ge $((as * 95))
check "module run delivers ($rm of $am)" test $((rm * 100)) -ge $((am * 95))
# Neighbour traffic may add a few packets on either side.
check "stock run: r1 sent or counted as dropped what reached r0 ($ps + $ds of $as)" \
	test $((ps + ds)) -ge $((as - 4)) -a $((ps + ds)) -le $((as + 4))
check "module run: r1 sent or counted as dropped what reached r0 ($pm + $dm of $am)" \
	test $((pm + dm)) -ge $((am - 4)) -a $((pm + dm)) -le $((am + 4))
check "module run: the module counted r1's drops as its xmit drops ($xdrops of $dm)" \
	test "$xdrops" -le "$dm" -a "$xdrops" -ge $((dm - 4))
check "module took the stream ($taken of $am)" \
	test $((taken * 100)) -ge $((am * 99))
check "mean bulk size above 1 ($taken / $bulks)" test "$taken" -gt "$bulks"
check "virtio counters read (stock tx $ps, module tx $pm)" \
	test "$ps" -gt 0 -a "$pm" -gt 0
# The probe counts what it should: stock asks about once per packet.
check "stock: the driver asks to notify once per packet sent ($cs for $ps)" \
	test $((cs * 100)) -ge $((ps * 99))
# per packet: cm/pm <= cs/ps / 2  <=>  2 * cm * ps <= cs * pm
check "module: asks to notify at most half as often per packet as stock ($cm/$pm vs $cs/$ps)" \
	test $((2 * cm * ps)) -le $((cs * pm))
check "module: asks to notify at most twice per bulk ($cm for $bulks bulks)" \
	test "$cm" -le $((2 * bulks))

fp_genl "$R" detach inet fp ft
exit "$ret"
