#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Unit test of the man page built from Documentation/flowbulk.rst:
# man_page_test.sh flowbulk.8
set -eu
page=$1
status=0
expect() {
	local what=$1
	shift
	if "$@"; then
		echo "PASS: $what"
	else
		echo "FAIL: $what"
		status=1
	fi
}
expect "section 8 header" grep -q '^\.TH "FLOWBULK" 8' "$page"
expect "NAME line" grep -qF 'flowbulk \- program nftables flowtables' "$page"
text=$(MANWIDTH=80 man -l "$page" 2>/dev/null)
for heading in NAME OVERVIEW OPTIONS COMMANDS; do
	expect "man renders $heading" grep -q "^$heading" <<<"$text"
done
for command in "offload delete" "offload list" "position" "Rollback"; do
	expect "documents $command" grep -qi "$command" <<<"$text"
done
exit "$status"
