#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Run the selftests inside the guest, one after the other:
#   selftests/run_guest.sh [TEST...]       (default: TEST_PROGS of the Makefile)
# Each test runs under the timeout of selftests/settings; its output is shown
# indented. A test also fails when the kernel logs trouble (BUG, WARNING, Oops,
# refcount_t, unregister_netdevice waiting) while it runs. Prints KTAP and a
# PASS:/FAIL:/SKIP: line per test, and writes the verdicts to
# build/selftests/KVER/results for tools/check.
#
# NFB_LANE=NAME: one of several guests of the same kernel sharing the list
# (tools/check boots two 1-vCPU guests at once: TCG runs each on its own
# core). A test runs in this guest only if it takes it first, by making
# build/selftests/KVER/claims/TEST (mkdir on the host's file system is
# atomic across guests); the verdicts go to results.NAME.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
kver=$(uname -r)
out=$repo/build/selftests/$kver
mkdir -p "$out"
results=$out/results
claims=
if [ -n "${NFB_LANE:-}" ]; then
	case "$NFB_LANE" in
	*[!a-z0-9-]*) echo "NFB_LANE=$NFB_LANE: letters, digits and - only" >&2; exit 2 ;;
	esac
	results=$out/results.$NFB_LANE
	claims=$out/claims
	mkdir -p "$claims"
fi
: >"$results"

if [ $# -gt 0 ]; then
	tests=("$@")
else
	mapfile -t tests < <(make -s --no-print-directory -C "$here" list)
fi
timeout=$(sed -n 's/^timeout=//p' "$here/settings")
case "${NFB_TIMEOUT_SCALE:-1}" in
'' | *[!0-9]* | 0*) echo "NFB_TIMEOUT_SCALE=$NFB_TIMEOUT_SCALE: not a positive number" >&2; exit 2 ;;
esac
kernel_trouble='BUG:|WARNING:|Oops|KASAN|refcount_t:|unregister_netdevice: waiting'

# QEMU's multi-threaded TCG can let a vCPU run a stale translation of code
# another vCPU has just patched: when a static key flips (netfilter hooks
# registered or removed, as namespaces and modules come and go) while
# traffic runs, the guest now and then dies of "Oops: int3" at an NF_HOOK
# site (seen in ip_rcv and ip_local_deliver on 6.12, never in our code).
# Hooks held in the initial namespace for the whole run keep the netfilter
# and tc static keys from ever going back to zero, so those sites are
# patched once, here, before any traffic. The same for two keys of the
# core's hot paths that tests switch: netstamp_needed_key, on while any
# socket asks for receive timestamps (every ping does: it patched
# netif_rx_internal twice per ping, and a 6.12 guest died of it in
# nfb_faults, 2 December), and xps_needed, on while any device has an XPS
# map (nfb_txq sets and removes some).
keep_static_keys() {
	nft -f - <<-'EOF'
	table inet nfb_selftests_keepalive {
		chain keep_prerouting { type filter hook prerouting priority 0; }
		chain keep_input { type filter hook input priority 0; }
		chain keep_forward { type filter hook forward priority 0; }
		chain keep_output { type filter hook output priority 0; }
		chain keep_postrouting { type filter hook postrouting priority 0; }
	}
	table netdev nfb_selftests_keepalive {
		chain keep_ingress { type filter hook ingress device lo priority 0; }
		chain keep_egress { type filter hook egress device lo priority 0; }
	}
	EOF
	tc qdisc add dev lo clsact
	tc filter add dev lo ingress matchall action ok
	tc filter add dev lo egress matchall action ok
	ip link add nfb_keep_xps numtxqueues 2 numrxqueues 2 type veth peer nfb_keep_xps1
	echo 1 >/sys/class/net/nfb_keep_xps/queues/tx-0/xps_cpus
	# The socket is held until the guest powers off. Its errors come through
	# the coproc's pipe; once it is set, it holds no stream of ours open.
	coproc keep_timestamps {
		exec python3 -c 'import os, signal, socket
SO_TIMESTAMP = 29  # asm-generic/socket.h; Python 3.11 lacks the name
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMP, 1)
print("set", flush=True)
null = os.open(os.devnull, os.O_RDWR)
for fd in 0, 1, 2:
    os.dup2(null, fd)
signal.pause()' 2>&1
	}
	local ready=
	read -r ready <&"${keep_timestamps[0]}" || true
	if [ "$ready" != set ]; then
		echo "run_guest.sh: the timestamp socket failed: $ready" >&2
		cat <&"${keep_timestamps[0]}" >&2 || true
		exit 1
	fi
}
keep_static_keys

echo "TAP version 13"
# A lane knows how many tests it ran only at the end: its plan comes last.
[ -n "$claims" ] || echo "1..${#tests[@]}"
n=0
pass=0
fail=0
skip=0
for t in "${tests[@]}"; do
	name=${t%.sh}
	if [ -n "$claims" ]; then
		mkdir "$claims/$name" 2>/dev/null || continue
		# Which guest to look at when the test is never reported.
		echo "$NFB_LANE" >"$claims/$name/lane"
	fi
	n=$((n + 1))
	log=$out/$name.log
	dmesg_before=$(dmesg | wc -l)
	start=$(date +%s)
	# A test may ask for more time than settings gives every test.
	t_timeout=$(sed -n 's/^# nfb-timeout: *\([0-9][0-9]*\)$/\1/p' "$here/$t")
	t_timeout=${t_timeout:-$timeout}
	# NFB_TIMEOUT_SCALE=N: N times every limit (the debug kernel is slower).
	t_timeout=$((t_timeout * ${NFB_TIMEOUT_SCALE:-1}))
	# A test that needs more CPUs than the guest has ("# nfb-cpus: N":
	# tools/check runs it in a 2-vCPU guest) would lose checks silently.
	t_cpus=$(sed -n 's/^# nfb-cpus: *\([0-9][0-9]*\)\( .*\)\{0,1\}$/\1/p' "$here/$t")
	if [ "$(nproc)" -lt "${t_cpus:-1}" ]; then
		echo "SKIP: needs $t_cpus CPUs, the guest has $(nproc)" >"$log"
		rc=4
	else
		set +e
		timeout -k 10 "$t_timeout" "$here/$t" >"$log" 2>&1
		rc=$?
		set -e
	fi
	secs=$(($(date +%s) - start))
	sed 's/^/# /' "$log"
	trouble=$(dmesg | tail -n +"$((dmesg_before + 1))" | grep -E "$kernel_trouble" || true)
	if [ -n "$trouble" ]; then
		printf '%s\n' "$trouble" | sed 's/^/# kernel: /'
		[ "$rc" = 0 ] && rc=1
	fi
	if [ "$rc" = 124 ]; then
		echo "# $name timed out after ${t_timeout}s"
		# Its cleanup did not run: the next test loads its own module.
		modprobe -r nf_flow_bulk 2>/dev/null || true
	fi
	if [ "$rc" = 4 ] && [ "${CI:-}" = true ]; then
		echo "# $name skipped, which is a failure under CI"
		rc=1
	fi
	case "$rc" in
	0)
		pass=$((pass + 1))
		echo "ok $n $name # ${secs}s"
		echo "PASS: $name [$kver]"
		echo "PASS $name" >>"$results"
		;;
	4)
		skip=$((skip + 1))
		echo "ok $n $name # SKIP"
		echo "SKIP: $name [$kver]"
		echo "SKIP $name" >>"$results"
		;;
	*)
		fail=$((fail + 1))
		echo "not ok $n $name # exit $rc, ${secs}s"
		echo "FAIL: $name [$kver]"
		echo "FAIL $name" >>"$results"
		;;
	esac
done
[ -z "$claims" ] || echo "1..$n"
echo "# Totals: pass:$pass fail:$fail xfail:0 xpass:0 skip:$skip error:0"
[ "$fail" = 0 ]
