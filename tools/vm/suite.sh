#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Which selftests each kernel runs (tools/check; Documentation/testing.rst,
# "What runs where"). The caller sets repo, and line_kver (an associative
# array: the Debian 7.x lines' kernels, tools/newkernel lines) before
# set_for.
# shellcheck disable=SC2154 # repo: the caller's

if [ -n "${NFB_SELFTESTS:-}" ]; then
	read -r -a all_selftests <<<"$NFB_SELFTESTS"
else
	mapfile -t all_selftests < <(make -s --no-print-directory -C selftests list)
fi
# The core set, on every kernel: the gate (a proven kernel loads the
# module plainly, any other refuses it), the kernel's own flowtable
# selftest with the module attached, the
# differential oracle (the same packets out with and without the module).
core_selftests=(nfb_kernel_gate.sh nfb_kernel_flowtable.sh nfb_oracle.sh)
# probe_answers K: the probes module/conftest.sh answered yes to for kernel
# K (its build's nfb_config.h), one per line.
probe_answers() {
	sed -n 's/^#define NFB_HAVE_\([A-Z0-9_]*\).*/\1/p' "$repo/build/kmod/$1/module/nfb_config.h" | sort
}
# probe_tests P...: the selftests selftests/probe-tests names for probes P.
probe_tests() {
	local p
	for p in "$@"; do
		awk -v p="$p" '$1 == p { for (i = 2; i <= NF && $i != "-"; i++) print $i }' \
			"$repo/selftests/probe-tests"
	done
}
# set_for K REF: the selftests kernel K runs, into the array selftests:
# with REF "full" (or NFB_SUITE=full) every one; otherwise the core set,
# the selftests of every probe whose answer on K differs from its answer on
# the reference kernel REF, and those of kernel behaviour no probe sees
# (selftests/probe-tests: every-kernel; newest-kernel on the newest 7.x).
# It prints the set and why.
set_for() {
	local k=$1 ref=$2 extra=() differ=() why t
	if [ "${NFB_SUITE:-sets}" = full ] || [ "$ref" = full ]; then
		extra=("${all_selftests[@]}")
		why="the whole suite"
	else
		mapfile -t differ < <(comm -3 <(probe_answers "$k") <(probe_answers "$ref") | tr -d '\t')
		why="core set; probes unlike $ref's: ${differ[*]:-none}; every-kernel"
		differ+=(every-kernel)
		if [ "$k" = "${line_kver[newest]:-}" ]; then
			differ+=(newest-kernel)
			why+=", newest-kernel"
		fi
		mapfile -t extra < <(probe_tests "${differ[@]}")
	fi
	selftests=()
	for t in "${core_selftests[@]}" "${extra[@]}"; do
		# Each once; NFB_SELFTESTS narrows every set.
		[[ " ${selftests[*]} " != *" $t "* ]] || continue
		if [ -z "${NFB_SELFTESTS:-}" ] || [[ " $NFB_SELFTESTS " == *" $t "* ]]; then
			selftests+=("$t")
		fi
	done
	echo "-- kernel $k: $why: ${selftests[*]}"
}
