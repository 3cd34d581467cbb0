#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Unit test of the bash completion: completion_test.sh COMPLETION_FILE
set -eu
# shellcheck source=userspace/completion/flowbulk.bash
source "$1"
status=0

# The completion reads names with the command the user typed: here a
# stand-in that lists what a router would have.
# shellcheck disable=SC2317 # called by the completion
flowbulk() {
	case "$*" in
	"table list inet")
		printf 'FAMILY NAME HANDLE OBJECTS\ninet   fw   1      3\ninet   nat  2      1\n'
		;;
	"table list ip") printf 'FAMILY NAME HANDLE OBJECTS\nip     filter 3    1\n' ;;
	"-n blue table list inet") printf 'FAMILY NAME HANDLE OBJECTS\ninet   bluefw 1    3\n' ;;
	"flowtable list inet fw")
		printf 'FAMILY TABLE NAME HOOK PRIORITY DEVICES FLAGS\n'
		printf 'inet   fw    ft   ingress 0     eth0    -\ninet   fw    ft2  ingress 10    eth1    -\n'
		;;
	*) return 1 ;;
	esac
}

# expect "WORDS" "CANDIDATES": completing the last of WORDS offers CANDIDATES.
expect() {
	local got
	read -r -a COMP_WORDS <<<"$1"
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
expect "flowbulk offload " "add delete list show help"
expect "flowbulk -j offload add " "ip ip6 inet"
# By position: FAMILY, then TABLE and FLOWTABLE names that exist, then
# options; never options in place of a name.
expect "flowbulk flowtable add inet " "fw nat"
expect "flowbulk flowtable add inet fw " ""
expect "flowbulk flowtable add inet fw new " "hook priority devices counter"
expect "flowbulk flowtable add inet fw new hook " "ingress early_ingress"
expect "flowbulk flowtable add inet fw new hook ingress " "hook priority devices counter"
expect "flowbulk flowtable delete inet fw " "ft ft2"
expect "flowbulk flowtable " "add delete device list show help"
expect "flowbulk flowtable device " "add delete help"
expect "flowbulk flowtable device add " "ip ip6 inet"
expect "flowbulk flowtable device delete inet " "fw nat"
expect "flowbulk flowtable device add inet fw " "ft ft2"
expect "flowbulk flowtable device delete inet fw ft eth0 " ""
expect "flowbulk flowtable delete inet fw f" "ft ft2"
expect "flowbulk flowtable delete inet fw ft " ""
expect "flowbulk table add inet " ""
expect "flowbulk table delete ip " "filter"
expect "flowbulk flowtable list " "ip ip6 inet"
expect "flowbulk flowtable list inet " "fw nat"
expect "flowbulk table list inet " "fw nat"
expect "flowbulk table list inet fw " ""
expect "flowbulk flowtable list inet fw " "ft ft2"
expect "flowbulk flowtable list inet fw ft " ""
expect "flowbulk offload list inet fw " ""
expect "flowbulk table " "add delete list show help"
expect "flowbulk flowtable show inet fw " "ft ft2"
expect "flowbulk attach s" "show"
# -n NETNS: names are read in that namespace; NETNS from /run/netns.
expect "flowbulk -n blue flowtable delete inet " "bluefw"
expect "flowbulk --netns blue table list inet " "bluefw"
expect "flowbulk -n" "-n"
expect "flowbulk offload add inet fw " "ft ft2"
expect "flowbulk offload add inet fw ft " "proto counter chain position"
expect "flowbulk offload add inet fw ft position " "top bottom after before"
expect "flowbulk offload add inet fw ft chain " ""
expect "flowbulk offload delete inet fw ft " "proto chain"
expect "flowbulk attach " "list show ip ip6 inet help"
expect "flowbulk attach inet " "fw nat"
expect "flowbulk attach inet fw " "ft ft2"
expect "flowbulk detach inet fw " "ft ft2"
expect "flowbulk attach list " ""
expect "flowbulk monitor interval " ""
expect "flowbulk monitor interval 1 " "interval count"
expect "flowbulk flowtable add nosuch " ""
expect "flowbulk --j" "--json"
# The options of an nft user: check, echo, netns, and show for list.
expect "flowbulk --e" "--echo"
expect "flowbulk --c" "--check"
expect "flowbulk -e -c offload " "add delete list show help"
expect "flowbulk -c -e flowtable add inet " "fw nat"
# -e on the module's writes: attach and detach complete as without it.
expect "flowbulk -e attach " "list show ip ip6 inet help"
expect "flowbulk -e detach inet fw " "ft ft2"
exit "$status"
