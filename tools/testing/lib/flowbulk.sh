#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Helpers for the flowbulk selftests; sourced after nfb.sh.

# shellcheck source=tools/testing/lib/proc.sh
source "$NFB_LIB/proc.sh"

# nfb_proc_totals NS: /proc/net/stat/nf_flow_bulk of NS (hex, one row per
# CPU) summed over CPUs, one "column total" line per column, sorted.
nfb_proc_totals() {
	nfb_proc_sums "$1" | sort
}

# The uapi's reason names (nfb_genl.py reads them from the netlink spec,
# which tools/check-names keeps equal to the uapi's list): the tool prints a
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
			"$NFB_LIB")
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
# The reads of the latest attempt stay in NFB_STATS_{BEFORE,PROC,AFTER} so
# that a failure shows what differed then, not what a later read says.
nfb_stats_agree_once() {
	NFB_STATS_TRIES=$((NFB_STATS_TRIES + 1))
	NFB_STATS_BEFORE=$(nfb_json_totals "$1")
	NFB_STATS_PROC=$(nfb_proc_totals "$1")
	NFB_STATS_AFTER=$(nfb_json_totals "$1")
	[ "$NFB_STATS_BEFORE" = "$NFB_STATS_AFTER" ] && [ "$NFB_STATS_PROC" = "$NFB_STATS_AFTER" ]
}

# nfb_stats_agree NS: flowbulk -j stats equals /proc/net/stat/nf_flow_bulk.
# Up to 10 s, and at least 5 attempts however long they take: an attempt
# starts five processes, a second or more under TCG and several on the debug
# kernel, where a time limit alone left one attempt, which the neighbour
# discovery and other ICMPv6 of the test's new links could spoil
# (flowbulk_traffic, 1 December).
nfb_stats_agree() {
	local start
	# The reason names once, here: nfb_json_totals runs in a command
	# substitution, where what it caches is lost (a python3 start per read).
	nfb_reason_names
	NFB_STATS_TRIES=0
	start=$(date +%s%3N)
	while ! nfb_stats_agree_once "$1"; do
		if [ "$NFB_STATS_TRIES" -ge 5 ] && [ $(($(date +%s%3N) - start)) -ge 10000 ]; then
			echo "INFO: no agreement in $NFB_STATS_TRIES attempts; the last one read:"
			echo "INFO: stats -j (before) vs /proc:"
			diff <(echo "$NFB_STATS_BEFORE") <(echo "$NFB_STATS_PROC") | sed 's/^/INFO:   /'
			echo "INFO: stats -j (before) vs stats -j (after):"
			diff <(echo "$NFB_STATS_BEFORE") <(echo "$NFB_STATS_AFTER") | sed 's/^/INFO:   /'
			return 1
		fi
		sleep 0.2
	done
	echo "INFO: agreed at attempt $NFB_STATS_TRIES"
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

# fb_start [-t] [-u] [-n] [-p "A B"]...: the flowbulk tests' set-up.
# FLOWBULK is the tool (build/userspace/flowbulk unless the environment
# names one): the test fails without it. -t: tmp, a scratch directory. -n:
# ns, a namespace; -p "A B" (repeatable, implies -n): a veth pair A - B in
# it, both ends up. On exit fb_cleanup removes the namespaces and tmp and,
# with -u, unloads the module when it is loaded.
FB_UNLOAD=0
fb_start() {
	local opt pair a b mkns=0 OPTIND=1
	local -a pairs=()
	while getopts "tunp:" opt; do
		case "$opt" in
		t) tmp=$(mktemp -d) ;;
		u) FB_UNLOAD=1 ;;
		n) mkns=1 ;;
		p) mkns=1; pairs+=("$OPTARG") ;;
		*) echo "fb_start: bad option" >&2; return 1 ;;
		esac
	done
	FLOWBULK=${FLOWBULK:-$NFB_REPO/build/userspace/flowbulk}
	# shellcheck disable=SC2154 # nfb.sh's exit code
	[ -x "$FLOWBULK" ] || { log_fail "$FLOWBULK missing (make userspace)"; exit "$ksft_fail"; }
	trap fb_cleanup EXIT
	[ "$mkns" = 1 ] || return 0
	setup_ns ns
	for pair in "${pairs[@]}"; do
		read -r a b <<<"$pair"
		ip -n "$ns" link add "$a" type veth peer name "$b"
		ip -n "$ns" link set "$a" up
		ip -n "$ns" link set "$b" up
	done
}

fb_cleanup() {
	cleanup_all_ns
	[ -z "${tmp:-}" ] || rm -rf "$tmp"
	if [ "$FB_UNLOAD" = 1 ] && nfb_module_loaded; then nfb_unload_module; fi
}
