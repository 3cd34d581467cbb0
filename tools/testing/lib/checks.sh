#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The verdicts of a check command (tools/check, tools/lint): every check
# prints PASS:/FAIL: with its name, finish prints the failures and the last
# line "N passed, N failed" and returns non-zero when anything failed.
# The caller sets repo (the tree: log paths are shown relative to it) and
# CHECK_NAME (what finish says took how long).

passed=0
failed=0
failures=()
boot_retries=()
# Minutes and seconds since the start, on every heading: where CI's time goes.
elapsed() { printf '%d:%02d' $((SECONDS / 60)) $((SECONDS % 60)); }
pass() { passed=$((passed + 1)); echo "PASS: $*"; }
fail() { failed=$((failed + 1)); failures+=("$*"); echo "FAIL: $*"; }

# run NAME LOGFILE COMMAND...: one check, its output kept in LOGFILE and shown
# on failure.
run() {
	local name=$1 log=$2
	shift 2
	if "$@" >"$log" 2>&1; then
		pass "$name"
	else
		fail "$name (log: ${log#"$repo"/})"
		tail -n 30 "$log" | sed 's/^/    /'
	fi
}

# run_verdicts COMMAND...: a check command of its own (tools/lint) whose
# PASS:/FAIL: lines count here; its other lines are shown, but for its own
# tally and time. A command that fails without a FAIL: line is a failure.
run_verdicts() {
	local line bad='' before=$failed
	while IFS= read -r line; do
		case "$line" in
		"PASS: "*) pass "${line#PASS: }" ;;
		"FAIL: "*) fail "${line#FAIL: }" ;;
		"run_verdicts: exit "*) bad=${line#run_verdicts: } ;;
		*" took "[0-9]*:[0-9][0-9] | [0-9]*" passed, "[0-9]*" failed" | "") ;;
		*) echo "$line" ;;
		esac
	done < <("$@" 2>&1 || echo "run_verdicts: exit $?")
	if [ -n "$bad" ] && [ "$failed" = "$before" ]; then
		fail "$* ($bad without a FAIL line)"
	fi
}

finish() {
	echo
	echo "${CHECK_NAME:-$0} took $(elapsed)"
	if [ "${#boot_retries[@]}" -gt 0 ]; then
		echo "Booted again:"
		printf '  %s\n' "${boot_retries[@]}"
	fi
	# Nested in another check command (run_verdicts), which lists them.
	if [ "$failed" -gt 0 ] && [ -z "${NFB_CHECK_NESTED:-}" ]; then
		echo "Failed:"
		printf '  %s\n' "${failures[@]}"
	fi
	echo "$passed passed, $failed failed"
	[ "$failed" = 0 ]
}
