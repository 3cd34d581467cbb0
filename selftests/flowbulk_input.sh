#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# flowbulk -f reads its input exactly once and loads it from memory: a FIFO,
# a pipe (`<(...)`) and standard input load like a file; a directory, a
# device such as /dev/zero and input over the size limit fail at once with
# an `Error:` line and exit code 2, and change nothing.
set -eu
# shellcheck source=selftests/lib.sh
source "$(dirname "$0")/lib.sh"

nfb_require_tool ip nft jq timeout mkfifo

FLOWBULK=${FLOWBULK:-$NFB_REPO/build/userspace/flowbulk}
[ -x "$FLOWBULK" ] || { log_fail "$FLOWBULK missing (make userspace)"; exit "$ksft_fail"; }

dir=$(mktemp -d)
writer=
cleanup() {
	[ -z "$writer" ] || kill "$writer" 2>/dev/null || true
	cleanup_all_ns
	rm -rf "$dir"
}
trap cleanup EXIT

setup_ns ns
# Bounded: the old tool hung on a FIFO and read /dev/zero without end.
fb() { ip netns exec "$ns" timeout 60 "$FLOWBULK" "$@"; }
has_table() { ip netns exec "$ns" nft list table "$1" "$2" >/dev/null 2>&1; }

mkfifo "$dir/ruleset.fifo"
printf 'table inet viafifo {\n\tchain c {\n\t}\n}\n' >"$dir/ruleset.fifo" &
writer=$!
rc=0
fb -f "$dir/ruleset.fifo" 2>"$dir/err" || rc=$?
wait "$writer" || true
writer=
# loaded FAMILY TABLE: the last fb exited 0 and the table is there.
loaded() {
	if [ "$rc" = 0 ] && has_table "$1" "$2"; then
		return 0
	fi
	echo "exit $rc: $(cat "$dir/err")"
	return 1
}
check "-f FIFO: loaded" loaded inet viafifo

rc=0
fb -f <(printf 'table ip viapipe {\n}\n') 2>"$dir/err" || rc=$?
check "-f <(...) (a pipe): loaded" loaded ip viapipe

rc=0
printf 'table ip6 viastdin {\n}\n' | fb -f - 2>"$dir/err" || rc=$?
check "-f - from a pipe: loaded" loaded ip6 viastdin

# The error location still names the input and nft's line:column.
rc=0
printf 'table ip bad {\n\tchain c {\n\t\tjunk\n\t}\n}\n' >"$dir/bad.nft"
fb -f "$dir/bad.nft" 2>"$dir/err" || rc=$?
nft_says=$(ip netns exec "$ns" nft -c -f "$dir/bad.nft" 2>&1 | head -n 1) || true
located() {
	if [ "$rc" = 1 ] && [ -n "$nft_says" ] && grep -qxF -- "$nft_says" "$dir/err"; then
		return 0
	fi
	echo "exit $rc: $(cat "$dir/err"); nft -f says: $nft_says"
	return 1
}
check "-f FILE with an error: nft's own FILE:LINE:COLUMN message" located

before=$(ip netns exec "$ns" nft -j list ruleset)

# expect_refused SECONDS WHAT MESSAGE ARGS...: exit 2 within SECONDS,
# "Error: ...MESSAGE".
expect_refused() {
	local seconds=$1 what=$2 message=$3 rc=0 start end
	shift 3
	start=$(date +%s)
	"$@" 2>"$dir/err" >/dev/null || rc=$?
	end=$(date +%s)
	if [ "$rc" = 2 ] && [ $((end - start)) -lt "$seconds" ] &&
		grep -q "^Error: .*$message" "$dir/err"; then
		log_pass "$what: exit 2, $(head -n 1 "$dir/err")"
	else
		log_fail "$what: exit $rc after $((end - start)) s: $(head -c 300 "$dir/err")"
		ret=1
	fi
}
expect_refused 10 "-f /dev/zero" "not a regular file, FIFO or pipe" fb -f /dev/zero
expect_refused 10 "-f DIRECTORY" "it is a directory" fb -f "$dir"
big() { head -c $((65 * 1024 * 1024)) /dev/zero | fb -f -; }
# Piping 65 MiB takes a while under TCG: the point is the limit, not speed.
expect_refused 60 "-f - with 65 MiB" "larger than 64 MiB" big

unchanged() { [ "$(ip netns exec "$ns" nft -j list ruleset)" = "$before" ]; }
check "refused input changed nothing" unchanged

exit "$ret"
