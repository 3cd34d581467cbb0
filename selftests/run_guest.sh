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
set -eu

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
kver=$(uname -r)
out=$repo/build/selftests/$kver
mkdir -p "$out"
results=$out/results
: >"$results"

if [ $# -gt 0 ]; then
	tests=("$@")
else
	mapfile -t tests < <(make -s --no-print-directory -C "$here" list)
fi
timeout=$(sed -n 's/^timeout=//p' "$here/settings")
kernel_trouble='BUG:|WARNING:|Oops|KASAN|refcount_t:|unregister_netdevice: waiting'

echo "TAP version 13"
echo "1..${#tests[@]}"
n=0
pass=0
fail=0
skip=0
for t in "${tests[@]}"; do
	n=$((n + 1))
	name=${t%.sh}
	log=$out/$name.log
	dmesg_before=$(dmesg | wc -l)
	start=$(date +%s)
	set +e
	timeout -k 10 "$timeout" "$here/$t" >"$log" 2>&1
	rc=$?
	set -e
	secs=$(($(date +%s) - start))
	sed 's/^/# /' "$log"
	trouble=$(dmesg | tail -n +"$((dmesg_before + 1))" | grep -E "$kernel_trouble" || true)
	if [ -n "$trouble" ]; then
		printf '%s\n' "$trouble" | sed 's/^/# kernel: /'
		[ "$rc" = 0 ] && rc=1
	fi
	if [ "$rc" = 124 ]; then
		echo "# $name timed out after ${timeout}s"
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
echo "# Totals: pass:$pass fail:$fail xfail:0 xpass:0 skip:$skip error:0"
[ "$fail" = 0 ]
