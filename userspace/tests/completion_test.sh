#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Unit test of the bash completion: completion_test.sh COMPLETION_FILE
set -eu
# shellcheck source=userspace/completion/flowbulk.bash
source "$1"
status=0

# expect "WORDS" "CANDIDATES": completing the last of WORDS offers CANDIDATES.
expect() {
	local got
	read -r -a COMP_WORDS <<<"$1"
	COMP_CWORD=${#COMP_WORDS[@]}
	[[ $1 == *" " ]] && COMP_WORDS+=("")
	COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
	_flowbulk
	got="${COMPREPLY[*]}"
	if [ "$got" = "$2" ]; then
		echo "PASS: '$1' -> $2"
	else
		echo "FAIL: '$1' -> '$got', wanted '$2'"
		status=1
	fi
}

expect "flowbulk " "table flowtable offload attach detach stats monitor help"
expect "flowbulk of" "offload"
expect "flowbulk offload " "add delete list help"
expect "flowbulk -j offload add " "ip ip6 inet"
expect "flowbulk offload add inet fw ft " "proto counter chain position"
expect "flowbulk offload add inet fw ft position " "top bottom after before"
expect "flowbulk offload delete inet fw ft " "proto chain"
expect "flowbulk flowtable add inet fw ft hook " "ingress early_ingress"
expect "flowbulk --j" "--json"
exit "$status"
