#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The four-host benchmark's agent on each host (tools/bench/hosts copies it,
# with what it uses, to /tmp/nfb-bench on every host and runs it over ssh):
#
#   node.sh check
#   node.sh prepare QUEUES IFACE=ADDRESS/PREFIX...
#   node.sh route PREFIX VIA
#   node.sh mode MODE RX TX        (routers)
#   node.sh offloaded              (routers: flows in the flowtable)
#   node.sh snap RX TX             (routers: one line of counters)
#   node.sh sink IFACE | sink-count   (sunrise)
#   node.sh gen IFACE DMAC SRC DST_MIN DST_MAX FLOWS TRAIN COUNT LEN RATE BURST
#   node.sh cleanup IFACE...
#
# Everything it installs lives in /tmp/nfb-bench (the module, flowbulk, the
# XDP objects): nothing is written to the host's system directories, and
# cleanup takes back what the run changed (nft table, module, XDP, pktgen).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
# The test library's /proc reader, copied here by tools/bench/hosts (in
# the repository it is in tools/testing/lib).
proc_lib=$here/proc.sh
[ -f "$proc_lib" ] || proc_lib=$here/../../testing/lib/proc.sh
# shellcheck source=tools/testing/lib/proc.sh
source "$proc_lib"
sid_lib=$here/sid.sh
[ -f "$sid_lib" ] || sid_lib=$here/../../testing/lib/sid.sh
# shellcheck source=tools/testing/lib/sid.sh
source "$sid_lib"
module=nf_flow_bulk
table=nfb_bench
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

die() {
	echo "$(hostname): $*" >&2
	exit 1
}

flowbulk() {
	"$here/flowbulk" "$@"
}

# The features the modes change, back to the stock defaults, on IFACE.
features_default() {
	ethtool -K "$1" gro on rx-gro-list off rx-udp-gro-forwarding off >/dev/null 2>&1 || true
	ip link set dev "$1" xdpdrv off 2>/dev/null || true
}

mode_reset() {
	local d
	flowbulk table delete inet "$table" >/dev/null 2>&1 || true
	conntrack -F >/dev/null 2>&1 || true
	for d in "$@"; do
		features_default "$d"
	done
}

flowtable() {
	modprobe nf_flow_table_inet
	flowbulk table add inet "$table"
	flowbulk flowtable add inet "$table" ft hook "$1" priority 0 devices "$2,$3"
	flowbulk offload add inet "$table" ft proto all
	# An hour, not 30 s: a flow must not leave the flowtable between
	# the warm-up and the last repetition.
	sysctl -qw net.netfilter.nf_flowtable_udp_timeout=3600 \
		net.netfilter.nf_flowtable_tcp_timeout=3600
}

# xdp_forward ARGS...: xdp-tools' xdp-forward with its flowtable mode (1.5
# and later): the host's, else that of the unstable chroot tools/newkernel
# makes (the guests of tools/bench/hosts boot the build host's root, whose
# bookworm xdp-tools 1.3 has no such mode).
xdp_forward() {
	if xdp-forward load --help 2>&1 | grep -q flowtable; then
		xdp-forward "$@"
		return
	fi
	[ -x "$sid_root/usr/sbin/xdp-forward" ] ||
		die "no xdp-forward with a flowtable mode (xdp-tools 1.5 or later; tools/newkernel peers)"
	sid_exec - xdp-forward "$@"
}

load_module() {
	[ -d "/sys/module/$module" ] && return 0
	modprobe nf_flow_table
	modprobe nf_flow_table_inet
	# NFB_MODULE_OPTS: module parameters, words.
	# shellcheck disable=SC2086
	insmod "$here/$module.ko" ${NFB_MODULE_OPTS:-}
}

cmd=${1:?command}
shift
case "$cmd" in
check)
	# What the run needs on this host, named when it is missing.
	for t in nft conntrack ethtool ip modprobe insmod; do
		command -v "$t" >/dev/null || die "$t missing"
	done
	[ -f "$here/$module.ko" ] || die "no $module.ko for $(uname -r) in $here"
	"$here/flowbulk" --version >/dev/null 2>&1 || die "flowbulk does not run here (libnftnl, libmnl, libnftables?)"
	modprobe -n pktgen || die "no pktgen module (CONFIG_NET_PKTGEN)"
	echo "$(uname -r) $(nproc)"
	;;
prepare)
	queues=${1:?queues}
	shift
	modprobe nf_conntrack
	# A flow is a conntrack entry first: the kernel sizes the table by
	# memory (8,192 entries in a 1 GB guest), and a point with more flows
	# than that churns it and never gets them all offloaded.
	if [ "$(sysctl -n net.netfilter.nf_conntrack_max)" -lt 65536 ]; then
		sysctl -qw net.netfilter.nf_conntrack_max=65536
	fi
	sysctl -qw net.ipv4.ip_forward=1 net.ipv4.conf.all.rp_filter=0 \
		net.ipv4.conf.default.rp_filter=0
	ncpu=$(nproc)
	for spec in "$@"; do
		dev=${spec%%=*}
		addr=${spec#*=}
		[ -d "/sys/class/net/$dev" ] || die "no interface $dev"
		ip addr flush dev "$dev"
		sysctl -qw "net.ipv6.conf.$dev.disable_ipv6=1" "net.ipv4.conf.$dev.rp_filter=0"
		ethtool -L "$dev" combined "$queues" >/dev/null 2>&1 || true
		# virtio-net with RSS on 6.12: an XDP program adds queue pairs
		# for its transmits, and with the default indirection table the
		# driver sets their number by an RSS command; with this host's
		# QEMU, frames received on or sent from the added pairs were
		# lost (the XDP modes delivered 0 to 25 %). With an indirection
		# table of its own the driver sets it by the queue-pairs command,
		# and every frame arrives; the table spreads over the same queues.
		if [ "$(basename "$(readlink -f "/sys/class/net/$dev/device/driver")")" = virtio_net ]; then
			ethtool -X "$dev" equal "$queues" >/dev/null 2>&1 || true
		fi
		ip link set "$dev" up
		ip addr add "$addr" dev "$dev"
		features_default "$dev"
		# XPS: transmit queue i on CPU i.
		i=0
		for q in /sys/class/net/"$dev"/queues/tx-*; do
			[ -w "$q/xps_cpus" ] || continue
			n=${q##*/tx-}
			[ "$n" -lt "$ncpu" ] || continue
			printf '%x\n' $((1 << n)) >"$q/xps_cpus" 2>/dev/null || true
			i=$((i + 1))
		done
	done
	;;
route)
	ip route replace "${1:?prefix}" via "${2:?next hop}"
	;;
mode)
	mode=${1:?mode}
	rx=${2:?receive device}
	tx=${3:?send device}
	mode_reset "$rx" "$tx"
	case "$mode" in
	plain) ;;
	stock) flowtable ingress "$rx" "$tx" ;;
	fraglist)
		flowtable ingress "$rx" "$tx"
		# As on a real NIC, which cannot send a frag list: the router
		# segments the list itself.
		ethtool -K "$tx" tx-gso-list off >/dev/null 2>&1 || true
		ethtool -K "$rx" rx-gro-list on
		;;
	udpfwd)
		flowtable ingress "$rx" "$tx"
		ethtool -K "$rx" rx-udp-gro-forwarding on
		;;
	bulk)
		load_module
		flowtable early_ingress "$rx" "$tx"
		;;
	xdp)
		# On both devices: virtio-net takes a redirected frame only on
		# a device with an XDP program of its own.
		ip link set dev "$rx" xdpdrv obj "$here/xdp_fwd.o" sec xdp
		ip link set dev "$tx" xdpdrv obj "$here/xdp_fwd.o" sec xdp
		;;
	xdp-ft)
		# The stock flowtable offloads a flow; xdp-forward's flowtable
		# mode then forwards its packets from XDP, on both devices.
		flowtable ingress "$rx" "$tx"
		grep -qw bpf_xdp_flow_lookup /proc/kallsyms ||
			die "xdp-ft: no bpf_xdp_flow_lookup() kfunc in $(uname -r) (Linux 6.10 and later)"
		xdp_forward load -f flowtable "$rx" "$tx" >/dev/null
		;;
	*) die "unknown mode $mode" ;;
	esac
	;;
offloaded)
	conntrack -L 2>/dev/null | grep -c OFFLOAD || true
	;;
snap)
	# The time and the CPUs' idle time in nanoseconds, CPUs, softirq
	# summed over the CPUs (USER_HZ ticks, 1/100 s), the devices'
	# packets, and what the module took and in how many bulks (0
	# without it). The times are the kernel's own: /proc/timer_list's
	# clock and its nohz idle accounting (idle + iowait), which
	# /proc/stat gives rounded down to 10 ms (ten million instructions
	# under icount, 3 % of a point); where /proc/timer_list has no idle
	# accounting, /proc/uptime and /proc/stat's.
	rx=${1:?receive device}
	tx=${2:?send device}
	# /proc/net/stat/nf_flow_bulk (proc.sh), 0 0 without the module.
	taken=0 bulks=0
	if tb=$(nfb_proc_get "" packets bulks 2>/dev/null); then
		taken=${tb% *} bulks=${tb#* }
	fi
	read -r up _ </proc/uptime
	awk -v up="$up" -v taken="$taken" -v bulks="$bulks" \
		-v rxp="$(cat "/sys/class/net/$rx/statistics/rx_packets")" \
		-v txp="$(cat "/sys/class/net/$tx/statistics/tx_packets")" '
		FILENAME == "/proc/timer_list" && /^now at / { now = $3 }
		FILENAME == "/proc/timer_list" && /\.(idle|iowait)_sleeptime/ {
			sub(/.*: */, ""); idle_ns += $1; have_ns = 1
		}
		FILENAME == "/proc/stat" && /^cpu[0-9]/ { n++; idle += $5 + $6; sirq += $8 }
		END {
			if (!have_ns || !now) { now = up * 1e9; idle_ns = idle * 1e7 }
			printf "%.0f %d %.0f %d %d %d %s %s\n", now, n, idle_ns, sirq, rxp, txp, taken, bulks
		}' /proc/timer_list /proc/stat
	;;
sink)
	dev=${1:?device}
	nft delete table netdev "$table" 2>/dev/null || true
	nft -f - <<EOF
table netdev $table {
	chain in {
		type filter hook ingress device "$dev" priority 0; policy accept;
		udp dport 9 counter drop
	}
}
EOF
	;;
sink-count)
	nft -j list chain netdev "$table" in |
		python3 -c 'import json, sys
for o in json.load(sys.stdin)["nftables"]:
    for e in o.get("rule", {}).get("expr", []):
        if "counter" in e:
            print(e["counter"]["packets"])'
	;;
gen)
	dev=${1:?} dmac=${2:?} src=${3:?} dmin=${4:?} dmax=${5:?} flows=${6:?}
	train=${7:?} count=${8:?} len=${9:?} rate=${10:-0} burst=${11:-1}
	modprobe pktgen
	pg() {
		echo "$2" >"/proc/net/pktgen/$1"
		grep -q '^Result: OK' "/proc/net/pktgen/$1" ||
			die "pktgen $1 '$2': $(grep '^Result' "/proc/net/pktgen/$1")"
	}
	pg kpktgend_0 rem_device_all
	pg kpktgend_0 "add_device $dev"
	p=$dev
	pg "$p" "count $count"
	pg "$p" "clone_skb 0"
	pg "$p" "pkt_size $len"
	pg "$p" "delay 0"
	# Frames handed to the driver BURST at a time (xmit_more): one doorbell
	# a burst, so a router sees them arrive together, as from a sender
	# faster than itself.
	[ "$burst" = 1 ] || pg "$p" "burst $burst"
	[ "$rate" = 0 ] || pg "$p" "ratep $rate"
	pg "$p" "dst_mac $dmac"
	pg "$p" "src_min $src"
	pg "$p" "src_max $src"
	pg "$p" "dst_min $dmin"
	pg "$p" "dst_max $dmax"
	pg "$p" "udp_src_min 9"
	pg "$p" "udp_src_max 9"
	pg "$p" "udp_dst_min 9"
	pg "$p" "udp_dst_max 9"
	# One destination address per flow, TRAIN packets of a flow before
	# the next one's.
	pg "$p" "flows $flows"
	pg "$p" "flowlen $train"
	pg "$p" "flag FLOW_SEQ"
	echo start >/proc/net/pktgen/pgctrl
	# What it sent (with bursts, up to a burst more than asked) and at
	# what rate.
	echo "$(awk '$1 == "pkts-sofar:" { print $2 }' "/proc/net/pktgen/$p")" \
		"$(grep -o '[0-9]*pps' "/proc/net/pktgen/$p" | head -n 1)"
	pg kpktgend_0 rem_device_all
	;;
cleanup)
	# Only what the run made, on the inventory's devices: another XDP
	# program of the host stays.
	nft delete table netdev "$table" 2>/dev/null || true
	flowbulk table delete inet "$table" >/dev/null 2>&1 || true
	for d in "$@"; do
		features_default "$d"
	done
	[ ! -d "/sys/module/$module" ] || rmmod "$module" || true
	[ ! -d /proc/net/pktgen ] || rmmod pktgen || true
	;;
*)
	die "unknown command $cmd"
	;;
esac
