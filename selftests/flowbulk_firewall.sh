#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# flowbulk offload on a router that already has a firewall: a forward chain
# with policy drop and its own rules keeps its policy and its rules after
# `offload add` (twice); the offload rules go where `position` says (top by
# default), are not added twice, are listed with nft's handles and are
# removed again by `offload delete`, which leaves the chain as it was. Two
# `offload add` runs at once add each rule once: the write names the ruleset
# generation its reads saw, and the kernel refuses it if another writer
# committed in between.
#
#   ns: veth0 <-> veth1 (just devices for the flowtable)
# nfb-long
set -eu
# shellcheck source=selftests/lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=tools/testing/lib/fastpath.sh
source "$NFB_LIB/fastpath.sh"
# shellcheck source=tools/testing/lib/flowbulk.sh
source "$NFB_LIB/flowbulk.sh"

nfb_require_tool ip nft jq

fb_start -t -p "veth0 veth1"
output=$tmp/output

fb() { ip netns exec "$ns" "$FLOWBULK" "$@"; }
nft_ns() { ip netns exec "$ns" nft "$@"; }

fp_ruleset -n "$ns" -t fw -d "veth0 veth1" -N -l none -s 'chain forward {
		type filter hook forward priority filter; policy drop;
		ct state established,related accept
		iifname "veth0" oifname "veth1" tcp dport 22 accept
	}'

# The chain as nft sees it: policy, then each rule as "handle expr-json".
chain_state() {
	nft_ns -j list chain inet fw forward | jq -r '.nftables[] |
		(select(.chain) | .chain | "policy \(.policy)"),
		(select(.rule) | .rule | "\(.handle) \(.expr)")'
}
# The rules that are not offload rules (no "flow" statement), in order.
firewall_rules() {
	chain_state | grep -v '"flow"'
}
offload_rules() {
	chain_state | grep -c '"flow"' || true
}

before=$(chain_state)

fb offload add inet fw ft >"$output"
fb offload add inet fw ft >"$output"

policy_kept() {
	[ "$(chain_state | head -n 1)" = "policy drop" ] ||
		{ echo "chain: $(chain_state)"; return 1; }
}
check "offload add (twice) keeps policy drop" policy_kept

rules_kept() {
	[ "$(firewall_rules)" = "$before" ] ||
		{ echo "before: $before"; echo "after: $(firewall_rules)"; return 1; }
}
check "offload add (twice) keeps the chain's own rules, handles and order" rules_kept

two_offload_rules() {
	[ "$(offload_rules)" = 2 ] || { echo "chain: $(chain_state)"; return 1; }
}
check "offload add twice makes two rules (tcp, udp), not four" two_offload_rules

second_says_so() { grep -q "nothing changed" "$output" || { cat "$output"; return 1; }; }
check "the second offload add says nothing changed" second_says_so

at_top() {
	# policy line, then the two offload rules, then the firewall's rules.
	chain_state | sed -n '2,3p' | grep -c '"flow"' | grep -qx 2 ||
		{ echo "chain: $(chain_state)"; return 1; }
}
check "offload rules are at the top of the chain by default" at_top

json_unchanged() {
	fb -j offload add inet fw ft | jq -e '.changed == false and (.present | length) == 2' \
		>/dev/null
}
check "-j offload add again: changed false, two rules present" json_unchanged

list_matches_nft() {
	local ours theirs
	ours=$(fb -j offload list inet fw | jq -c '[.offloads[] | .handle] | sort')
	theirs=$(nft_ns -j list chain inet fw forward | jq -c '[.nftables[] | select(.rule) |
		.rule | select(any(.expr[]; has("flow"))) | .handle] | sort')
	[ "$ours" = "$theirs" ] || { echo "flowbulk: $ours nft: $theirs"; return 1; }
}
check "offload list shows the offload rules with nft's handles" list_matches_nft

fb offload delete inet fw ft
restored() {
	[ "$(chain_state)" = "$before" ] ||
		{ echo "before: $before"; echo "after: $(chain_state)"; return 1; }
}
check "offload delete leaves the chain exactly as it was" restored

# position after HANDLE: right after the established rule.
established=$(nft_ns -j list chain inet fw forward |
	jq '[.nftables[] | select(.rule) | .rule.handle][0]')
fb offload add inet fw ft proto tcp position after "$established"
after_handle() {
	chain_state | sed -n '3p' | grep -q '"flow"' || { echo "chain: $(chain_state)"; return 1; }
}
check "position after $established puts the rule second" after_handle
fb offload delete inet fw ft

fb offload add inet fw ft proto udp position bottom
at_bottom() {
	chain_state | tail -n 1 | grep -q '"flow"' || { echo "chain: $(chain_state)"; return 1; }
}
check "position bottom puts the rule last" at_bottom
check "offload delete of the last rule leaves the chain as it was" \
	fb offload delete inet fw ft proto udp
check "... and it is" restored

# Two runs at once, again and again: without the generation check both read
# an empty chain and both write, leaving four rules.
concurrent_adds_add_once() {
	local round first second count
	for round in $(seq 20); do
		fb offload add inet fw ft >/dev/null &
		first=$!
		fb offload add inet fw ft >/dev/null &
		second=$!
		wait "$first" || { echo "round $round: the first run failed"; return 1; }
		wait "$second" || { echo "round $round: the second run failed"; return 1; }
		count=$(offload_rules)
		[ "$count" = 2 ] ||
			{ echo "round $round: $count offload rules: $(chain_state)"; return 1; }
		fb offload delete inet fw ft
	done
}
check "two offload add runs at once, 20 times: two rules each time" concurrent_adds_add_once
check "... and the chain is as it was" restored

exit "$ret"
