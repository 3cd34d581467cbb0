#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Helpers for the flowbulk selftests; sourced after lib.sh.

# nfb_proc_totals NS: /proc/net/stat/nf_flow_bulk of NS (hex, one row per
# CPU) summed over CPUs, one "column total" line per column, sorted.
nfb_proc_totals() {
	local -a fields names sums
	local i header=1
	while read -r -a fields; do
		if [ "$header" = 1 ]; then
			names=("${fields[@]}")
			header=0
			continue
		fi
		for i in "${!fields[@]}"; do
			sums[i]=$((${sums[i]:-0} + 16#${fields[i]}))
		done
	done < <(ip netns exec "$1" cat /proc/net/stat/nf_flow_bulk)
	for i in "${!names[@]}"; do
		echo "${names[i]} ${sums[i]:-0}"
	done | sort
}

# The uapi's reason names (nfb_genl.py mirrors them): the tool prints a
# reason it does not name yet as its number, /proc by its name.
NFB_REASON_NAMES=
nfb_reason_names() {
	[ -n "$NFB_REASON_NAMES" ] ||
		NFB_REASON_NAMES=$(python3 -c '
import json, sys
sys.dont_write_bytecode = True
sys.path.insert(0, sys.argv[1])
import nfb_genl as g
print(json.dumps({"decline": g.DECLINE, "fallback": g.FALLBACK, "drop": g.DROP}))' \
			"$NFB_REPO/selftests")
}

# nfb_json_totals NS: the same totals from flowbulk -j stats.
nfb_json_totals() {
	nfb_reason_names
	ip netns exec "$1" "$NFB_REPO/build/userspace/flowbulk" -j stats |
		jq -r --argjson n "$NFB_REASON_NAMES" '
		def name($l): if (.reason | test("^[0-9]+$"))
			then ($l[.reason | tonumber] // .reason) else .reason end;
		.stats.total |
		"packets \(.packets)", "bulks \(.bulks)",
		(.decline[] | "decline_\(name($n.decline)) \(.packets)"),
		(.fallbacks[] | "fallback_\(name($n.fallback)) \(.packets)"),
		(.drops[] | "drop_\(name($n.drop)) \(.packets)"),
		(.histogram[] | "bulk\(.min) \(.bulks)")' | sort
}

# Stray packets (IPv6 neighbour discovery, late ACKs) can move a counter
# between the two reads: compare a /proc read framed by two equal JSON reads.
nfb_stats_agree_once() {
	local before proc after
	before=$(nfb_json_totals "$1")
	proc=$(nfb_proc_totals "$1")
	after=$(nfb_json_totals "$1")
	[ "$before" = "$after" ] && [ "$proc" = "$after" ]
}

# nfb_stats_agree NS: flowbulk -j stats equals /proc/net/stat/nf_flow_bulk.
nfb_stats_agree() {
	busywait 10000 nfb_stats_agree_once "$1" && return 0
	# Show what differed: the three reads, as the last attempt made them.
	local before proc after
	before=$(nfb_json_totals "$1")
	proc=$(nfb_proc_totals "$1")
	after=$(nfb_json_totals "$1")
	echo "INFO: stats -j (before) vs /proc:"
	diff <(echo "$before") <(echo "$proc") | sed 's/^/INFO:   /'
	echo "INFO: stats -j (before) vs stats -j (after):"
	diff <(echo "$before") <(echo "$after") | sed 's/^/INFO:   /'
	return 1
}

# fb_expect_failure CODE MESSAGE ARGS...: the test's fb ARGS (flowbulk in
# its namespace) exits with CODE and says MESSAGE on stderr.
fb_expect_failure() {
	local code=$1 message=$2 rc=0 errors
	shift 2
	errors=$(fb "$@" 2>&1 >/dev/null) || rc=$?
	if [ "$rc" = "$code" ] && grep -qF -- "$message" <<<"$errors"; then
		log_pass "flowbulk $* -> exit $code, \"$message\""
	else
		log_fail "flowbulk $* -> exit $rc, stderr: $errors (wanted exit $code, \"$message\")"
		# shellcheck disable=SC2034 # lib.sh's test status
		ret=1
	fi
}
