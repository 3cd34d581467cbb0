#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The one reader of /proc/net/stat/nf_flow_bulk: a header line of column
# names, then one row per CPU, in hex. Plain bash, no other process than
# the cat (a poll of busywait does not start Python: about half a second
# under TCG), and nothing else of the library: tools/bench/hosts copies this
# file beside four-hosts/node.sh to hosts that have no repository.

# nfb_proc_sums NS: one "column sum" line per column, in the file's order,
# each summed over the CPU rows, of namespace NS ("": the current one).
# Fails when the file cannot be read (the module is not loaded).
nfb_proc_sums() {
	local out i
	local -a names row sums
	if [ -n "$1" ]; then
		out=$(ip netns exec "$1" cat /proc/net/stat/nf_flow_bulk 2>/dev/null) || return 1
	else
		out=$(cat /proc/net/stat/nf_flow_bulk 2>/dev/null) || return 1
	fi
	{
		read -r -a names || return 1
		while read -r -a row; do
			for i in "${!row[@]}"; do
				sums[i]=$((${sums[i]:-0} + 16#${row[i]}))
			done
		done
	} <<<"$out"
	for i in "${!names[@]}"; do
		echo "${names[i]} ${sums[i]:-0}"
	done
}

# nfb_proc_get NS COLUMN...: the sums of the COLUMNs ("packets",
# "decline_miss", "fallback_neigh"...), space separated, in that order. A
# column the file does not have is said on stderr, counted 0, and the
# function fails; so does an unreadable file.
nfb_proc_get() {
	local ns=$1 name sum col rc=0 sums
	local -a vals=()
	local -A have=()
	shift
	sums=$(nfb_proc_sums "$ns") || return 1
	while read -r name sum; do
		have[$name]=$sum
	done <<<"$sums"
	for col in "$@"; do
		if [ -n "${have[$col]+set}" ]; then
			vals+=("${have[$col]}")
		else
			echo "nfb_proc_get: no column $col in /proc/net/stat/nf_flow_bulk" >&2
			vals+=(0)
			rc=1
		fi
	done
	echo "${vals[*]}"
	return "$rc"
}
