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
for heading in NAME OVERVIEW OPTIONS COMMANDS "EXIT STATUS" FILES "SEE ALSO"; do
	expect "man renders $heading" grep -q "^$heading" <<<"$text"
done
for command in "offload delete" "offload list" "position" "When an attach fails" \
	"-e, -echo, --echo" "-c, -check, --check" "-n NETNS" "nothing would change" "show" \
	"flowtable device"; do
	expect "documents $command" grep -qi -e "$command" <<<"$text"
done
# -e on the module's commands; the text as one line, whatever man's
# justification made of its spaces.
flat=$(tr -s ' \n\t' '   ' <<<"$text")
expect "documents -e attach" grep -qF "attach flowtable inet fw ft # state attached" <<<"$flat"
# EXIT STATUS names every code main() returns (error.h: 0, 1, 2, 3).
status_section=$(sed -n '/^EXIT STATUS/,/^[A-Z]/p' <<<"$text")
for code in 0 1 2 3; do
	expect "EXIT STATUS documents $code" grep -qE "^ +$code +[A-Z]" <<<"$status_section"
done
expect "SEE ALSO names nft(8)" grep -qE 'nft\(8\)' <<<"$(sed -n '/^SEE ALSO/,$p' <<<"$text")"
exit "$status"
