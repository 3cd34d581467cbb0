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

# nfb_json_totals NS: the same totals from flowbulk -j stats.
nfb_json_totals() {
	ip netns exec "$1" "$NFB_REPO/build/userspace/flowbulk" -j stats | jq -r '.stats.total |
		"packets \(.packets)", "bulks \(.bulks)",
		(.decline[] | "decline_\(.reason) \(.packets)"),
		(.fallbacks[] | "fallback_\(.reason) \(.packets)"),
		(.drops[] | "drop_\(.reason) \(.packets)"),
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
