#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The guests of one kernel's selftests (tools/check), sourced: kernel_run K
# VM-ARGS... runs the selftests of the array selftests in guests booted by
# tools/vm/run VM-ARGS and counts their verdicts with the functions of
# tools/testing/lib/checks.sh. The caller sets repo, logs (the guests'
# console logs go there) and guest_env (assignments added to every guest's
# environment).
#
# The kernels' guests, one kernel after the other and after the host
# checks. Under TCG a 2-vCPU guest uses about one host core (nfb_bond and
# nfb_lifetime: 214 s, 225 s of CPU), and two 2-vCPU guests at once are
# slower than in turn (their vCPU threads wait on each other: 258 s for
# what took 230 s in turn); two 1-vCPU guests at once took 122 s. So each
# kernel's tests run in two 1-vCPU guests at once, each taking the next
# test the other has not taken (run_guest.sh, NFB_LANE), then the tests
# that need two CPUs (a "# nfb-cpus: 2" line) in one 2-vCPU guest alone.
# shellcheck disable=SC2154 # repo, logs, selftests: the caller's
guest_env=()
one_cpu_tests=()
two_cpu_tests=()
# split_tests: selftests into one_cpu_tests and two_cpu_tests, the longest
# first (a "# nfb-long" line), so that the two lanes end close together.
split_tests() {
	local t long=() short=()
	two_cpu_tests=()
	for t in "${selftests[@]}"; do
		if grep -qE '^# nfb-cpus: *2( |$)' "$repo/selftests/$t"; then
			two_cpu_tests+=("$t")
		elif grep -q '^# nfb-long$' "$repo/selftests/$t"; then
			long+=("$t")
		else
			short+=("$t")
		fi
	done
	one_cpu_tests=("${long[@]}" "${short[@]}")
}
declare -A lane_pid=() lane_status=()
lanes_run=()
# lane_start K LANE VM-ARGS...: a guest of kernel K (its uname -r, booted
# with tools/vm/run VM-ARGS) in the background, one of the lanes of K:
# "two*" runs two_cpu_tests with two vCPUs, any other one_cpu_tests with
# one; the environment assignments of the array guest_env added.
lane_start() {
	local k=$1 lane=$2 smp=1 cycles=30
	shift 2
	local list=("${one_cpu_tests[@]}")
	case "$lane" in
	two*) smp=2 list=("${two_cpu_tests[@]}") ;;
	esac
	rm -f "$repo/build/selftests/$k/results.$lane"
	lanes_run+=("$lane")
	echo "-- kernel $k, guest $lane ($smp vCPU): started [$(elapsed)]"
	# The reload race test repeats itself: 30 cycles per kernel here (CI
	# time), its full 100 in make check-debug (the test's default).
	# Two virtio-net pairs for the NIC-driver tests (selftests/nfb_virtio.sh).
	# In a session of its own, so that guest_kill reaches QEMU too.
	setsid -w "$repo/tools/vm/run" "$@" --smp "$smp" --nics 2 \
		--timeout "${NFB_VM_TIMEOUT:-2700}" --boot-timeout "${NFB_VM_BOOT_TIMEOUT:-300}" -- \
		env NFB_LANE="$lane" NFB_RELOAD_CYCLES="$cycles" "${guest_env[@]}" \
		selftests/run_guest.sh "${list[@]}" >"$logs/vm-$k-$lane.log" 2>&1 &
	lane_pid[$lane]=$!
}

# lane_wait LANE: wait for LANE's guest; its exit status in lane_status.
lane_wait() {
	local status=0
	wait "${lane_pid[$1]}" || status=$?
	lane_status[$1]=$status
	unset "lane_pid[$1]"
}

# lane_hung_booting K LANE: LANE's guest (waited for) hung or died before
# its command, so before any selftest: tools/vm/run says so (its watchdog,
# or the guest stopped before the command started).
lane_hung_booting() {
	[ "${lane_status[$2]}" != 0 ] && [ ! -s "$repo/build/selftests/$1/results.$2" ] &&
		grep -aqE '^tools/vm/run: FAIL: guest (not at its command|stopped while booting)' \
			"$logs/vm-$1-$2.log"
}

# lane_again K LANE VM-ARGS...: when LANE's guest hung while booting (the
# 6.12 guest under TCG, once, on 2 December: nothing on the console, one
# vCPU running with interrupts off, the NMI not answered) or died there
# (7.3's 2-vCPU guest, 5 December: "Oops: int3" in ktime_get_mono_fast_ns
# as the clocksource switched, no module loaded: multi-threaded TCG
# running a stale translation of patched kernel text), LANE-again is
# booted in its place, and the summary says so. It takes the tests no
# guest took; a second failure leaves them unreported.
lane_again() {
	local k=$1 lane=$2
	shift 2
	lane_hung_booting "$k" "$lane" || return 1
	mv "$logs/vm-$k-$lane.log" "$logs/vm-$k-$lane-boot-hang.log"
	boot_retries+=("kernel $k, guest $lane: hung or died while booting; booted again (build/check/vm-$k-$lane-boot-hang.log)")
	echo "INFO: ${boot_retries[-1]}"
	grep -aE '^RIP=|^---- no panic' "$logs/vm-$k-$lane-boot-hang.log" | sed 's/^/    /' || true
	local l kept=()
	for l in "${lanes_run[@]}"; do
		[ "$l" = "$lane" ] || kept+=("$l")
	done
	lanes_run=("${kept[@]}")
	lane_start "$k" "$lane-again" "$@"
}

# kernel_run K VM-ARGS...: K's selftests in its lanes, then the verdicts.
kernel_run() {
	local k=$1 out=$repo/build/selftests/$1 lane
	shift
	rm -rf "$out/claims"
	rm -f "$out/results" "$out/results."*
	lanes_run=()
	lane_status=()
	split_tests
	if [ ${#one_cpu_tests[@]} -gt 0 ]; then
		lane_start "$k" a "$@"
		[ ${#one_cpu_tests[@]} -lt 2 ] || lane_start "$k" b "$@"
		for lane in a b; do
			[ -z "${lane_pid[$lane]:-}" ] || lane_wait "$lane"
		done
		# One guest again for both, if either hung: it takes what is left
		# (when both stopped early, or b never started).
		for lane in a b; do
			if [ -n "${lane_status[$lane]:-}" ] && lane_again "$k" "$lane" "$@"; then
				lane_wait "$lane-again"
				break
			fi
		done
	fi
	if [ ${#two_cpu_tests[@]} -gt 0 ]; then
		lane_start "$k" two "$@"
		lane_wait two
		if lane_again "$k" two "$@"; then
			lane_wait two-again
		fi
	fi
	for lane in "${lanes_run[@]}"; do
		lane_report "$k" "$lane"
	done
	# Every test reported once, by whichever guest took it.
	local t name by
	for t in "${selftests[@]}"; do
		name=${t%.sh}
		if ! cat "$out/results."* 2>/dev/null | grep -qx "[A-Z]* $name"; then
			if [ -d "$out/claims/$name" ]; then
				by=$(cat "$out/claims/$name/lane" 2>/dev/null || echo "?")
				fail "selftest: $name [$k] (not reported: taken by guest $by, which stopped; log: build/check/vm-$k-$by.log)"
			else
				fail "selftest: $name [$k] (not reported: no guest took it)"
			fi
		fi
	done
}

# lane_report K LANE: after its guest, show its output (kernel log lines
# left out: they are in build/check/vm-K-LANE.log) and count its verdicts.
lane_report() {
	local k=$1 lane=$2 results=$repo/build/selftests/$1/results.$2 tlog
	local vm_status=${lane_status[$2]} log=$logs/vm-$1-$2.log
	echo "-- kernel $k, guest $lane: done [$(elapsed)]"
	# The guest's console tail that tools/vm/run prints when a run fails
	# is shown whole: in a hang the kernel's own lines are all there is.
	awk '/^---- last lines of the guest console/ { tail = 1 }
		tail || !/^\[ *[0-9]+\.[0-9]+\] /' "$log" || true
	if [ -s "$results" ]; then
		while read -r verdict name; do
			case "$verdict" in
			PASS) pass "selftest: $name [$k]" ;;
			*)
				fail "selftest: $name [$k] ($verdict)"
				# The checks that failed, where the summary shows them.
				tlog=$repo/build/selftests/$k/$name.log
				if [ -f "$tlog" ]; then
					while IFS= read -r line; do
						failures+=("    $line")
					done < <(grep '^FAIL:' "$tlog" | head -n 8)
				fi
				;;
			esac
		done <"$results"
	fi
	if [ "$vm_status" != 0 ] && { [ ! -s "$results" ] || ! grep -qv '^PASS' "$results"; }; then
		# Every test it ran passed but the run did not: the kernel logged
		# trouble outside any test, the guest stopped in a test (that
		# test is not reported), or it did not shut down cleanly.
		fail "selftests VM run [$k, guest $lane] (exit $vm_status, log: build/check/vm-$k-$lane.log)"
	fi
	# Why the guest stopped, where the summary shows it (a CI log may show
	# no more than that): tools/vm/run's verdict and its watchdog's
	# findings (each vCPU's RIP), then the kernel's first words of trouble
	# (an oops and its RIP come before the panic's task dump).
	if [ "$vm_status" != 0 ]; then
		while IFS= read -r line; do
			failures+=("    $line")
		done < <(grep -aE '^tools/vm/run: |^the (guest|command) had|^CPU#|^RIP=' "$log" | head -n 8
			grep -aE 'Oops|BUG:|PANIC:|Kernel panic|detected stall|blocked for more than|LOCKUP|RIP: 0010:|RSP: 0018:' \
				"$log" | sed -E 's/^\[ *[0-9]+\.[0-9]+\] //' | awk '!seen[$0]++' | head -n 10
			first_trace "$log")
	fi
}
# first_trace LOG: the functions of the first call trace the kernel
# printed after its first words of trouble, innermost first, on few lines:
# what a summary cut to its tail needs to tell one crash from another.
first_trace() {
	awk '/Oops|BUG:|WARNING:|detected stall|blocked for more than|LOCKUP/ { seen = 1 }
		seen && /Call Trace:/ { on = 1; next }
		on && /<\/TASK>|^\[ *[0-9.]+\] ---\[/ { exit }
		on && match($0, /[A-Za-z_][A-Za-z0-9_.]*\+0x[0-9a-f]+/) {
			f = substr($0, RSTART, RLENGTH); sub(/\+.*/, "", f)
			line = line (line == "" ? "" : " < ") f
			if (++n == 60) exit
		}
		END { if (line != "") print "call trace: " line }' "$1" |
		fold -s -w 150
}
# An interrupted check does not leave its guest running.
guest_kill() {
	local pid
	for pid in "${lane_pid[@]}"; do
		kill -- "-$pid" 2>/dev/null || kill "$pid" 2>/dev/null || true
	done
}
