#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# flowbulk programs nftables through libnftables (and reads it with
# libnftnl): the tables, flowtables and offload rules it makes must be
# exactly what `nft -j list ruleset` reports, its own listings must agree
# with nft's, and bad requests must fail with nft's message and their exit
# code while leaving the ruleset untouched.
#
#   ns: veth0 <-> veth1, vx0 <-> vx1, vy0 <-> vy1 (just devices for the
#   flowtables)
set -eu
# shellcheck source=selftests/lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=tools/testing/lib/flowbulk.sh
source "$NFB_LIB/flowbulk.sh"

nfb_require_tool ip nft jq

fb_start -p "veth0 veth1" -p "vx0 vx1" -p "vy0 vy1"

fb() { ip netns exec "$ns" "$FLOWBULK" "$@"; }
nft_json() { ip netns exec "$ns" nft -j list ruleset; }

fb table add inet fw
fb flowtable add inet fw ft hook ingress priority -10 devices veth0,veth1 counter
fb offload add inet fw ft proto all counter
fb table add ip plain

# The same object seen by nft and by flowbulk, normalised: devices sorted
# (nft prints one device as a string, several as an array).
nft_flowtables() {
	nft_json | jq -S '[.nftables[] | select(.flowtable) | .flowtable |
		{family, table, name, handle, hook, prio,
		 devices: ([.dev] | flatten | sort)}] | sort_by(.name)'
}
fb_flowtables() {
	fb -j flowtable list | jq -S '[.flowtables[] |
		{family, table, name, handle, hook, prio, devices: (.devices | sort)}] |
		sort_by(.name)'
}
same_flowtables() {
	local ours theirs
	ours=$(fb_flowtables)
	theirs=$(nft_flowtables)
	[ "$ours" = "$theirs" ] || { echo "flowbulk: $ours"; echo "nft: $theirs"; return 1; }
	[ "$(jq length <<<"$ours")" -ge 1 ]
}
check "flowtable list equals nft -j list ruleset" same_flowtables

flowtable_as_requested() {
	nft_json | jq -e '[.nftables[] | select(.flowtable) | .flowtable] |
		map(select(.family == "inet" and .table == "fw" and .name == "ft")) |
		length == 1 and .[0].hook == "ingress" and .[0].prio == -10 and
		([.[0].dev] | flatten | sort) == ["veth0", "veth1"]' >/dev/null
}
check "flowtable inet fw ft: hook ingress, prio -10, devices veth0,veth1" flowtable_as_requested

flowtable_has_counter() {
	ip netns exec "$ns" nft list flowtable inet fw ft | grep -qw counter
}
check "flowtable inet fw ft has the counter flag" flowtable_has_counter

same_tables() {
	local ours theirs
	ours=$(fb -j table list | jq -S '[.tables[] | {family, name, handle}] | sort_by(.name)')
	theirs=$(nft_json | jq -S '[.nftables[] | select(.table) | .table |
		{family, name, handle}] | sort_by(.name)')
	[ "$ours" = "$theirs" ] || { echo "flowbulk: $ours"; echo "nft: $theirs"; return 1; }
}
check "table list equals nft -j list ruleset" same_tables

forward_chain_as_requested() {
	nft_json | jq -e '[.nftables[] | select(.chain) | .chain |
		select(.table == "fw" and .name == "forward")] |
		length == 1 and .[0].type == "filter" and .[0].hook == "forward" and
		.[0].prio == 0 and .[0].policy == "accept"' >/dev/null
}
check "chain inet fw forward: type filter hook forward priority 0 policy accept" \
	forward_chain_as_requested

offload_rules_as_requested() {
	nft_json | jq -e '[.nftables[] | select(.rule) | .rule | select(.chain == "forward") |
		.expr] |
		length == 2 and
		(map(.[0].match.right) | sort) == ["tcp", "udp"] and
		all(.[]; .[0].match.left.meta.key == "l4proto" and (.[1] | has("counter")) and
			.[2].flow == {"op": "add", "flowtable": "@ft"})' >/dev/null &&
	nft_json | jq -e '[.nftables[] | select(.rule) | .rule | select(.chain == "forward") |
		.comment] == ["flowbulk", "flowbulk"]' >/dev/null
}
check "rules: meta l4proto tcp|udp counter flow add @ft comment \"flowbulk\"" \
	offload_rules_as_requested

# flowtable device add|delete changes the devices of one flowtable only, at
# its own priority (-10, which the kernel insists on), and names what is
# gone. nft 1.0.6's own "delete flowtable ... { devices = ... }" fails with
# EOPNOTSUPP on a flowtable whose priority is not 0 (6.1 guest, nft -f);
# flowbulk goes through libnftables and must fail the same way, changing
# nothing; at priority 0 the delete works.
ft_devices() {
	nft_json | jq -c --arg ft "$1" '[.nftables[] | select(.flowtable) | .flowtable |
		select(.table == "fw" and .name == $ft) |
		{prio, dev: ([.dev] | flatten | sort)}]'
}
fb flowtable device add inet fw ft vx0
check "flowtable device add: ft has veth0,veth1,vx0 at priority -10" \
	test "$(ft_devices ft)" = '[{"prio":-10,"dev":["veth0","veth1","vx0"]}]'
fb_expect_failure 1 "cannot delete devices from flowtable inet fw ft: Could not process rule: Operation not supported" \
	flowtable device delete inet fw ft vx0
check "flowtable device delete at priority -10 refused as nft refuses it: ft unchanged" \
	test "$(ft_devices ft)" = '[{"prio":-10,"dev":["veth0","veth1","vx0"]}]'
fb flowtable add inet fw f0 hook ingress priority 0 devices vx1,vy0
fb_expect_failure 1 "cannot delete devices from flowtable inet fw f0: " \
	flowtable device delete inet fw f0 vy1
fb flowtable device delete inet fw f0 vy0
check "flowtable device delete: f0 has vx1 only" \
	test "$(ft_devices f0)" = '[{"prio":0,"dev":["vx1"]}]'
fb flowtable delete inet fw f0

# Bad requests against the real kernel: each has its message and exit code,
# and the ruleset is the same afterwards.
before=$(nft_json)
fb_expect_failure 1 "cannot add table inet fw: Could not process rule: File exists" table add inet fw
fb_expect_failure 1 "cannot add flowtable inet nope ft: No such file or directory" \
	flowtable add inet nope ft hook ingress devices veth0
fb_expect_failure 1 "cannot add flowtable inet fw ft: Could not process rule: File exists" \
	flowtable add inet fw ft hook ingress devices veth0
# veth0 is in ft: a device is in one flowtable of a table only.
fb_expect_failure 1 "cannot add flowtable inet fw ft2: Could not process rule: File exists" \
	flowtable add inet fw ft2 hook ingress devices veth0
fb_expect_failure 2 "device \"nosuch0\" does not exist" \
	flowtable add inet fw ft2 hook ingress devices nosuch0
fb_expect_failure 2 "is out of range" \
	flowtable add inet fw ft2 hook ingress priority 2147483648 devices veth0
fb_expect_failure 1 "cannot add offload rule for flowtable ip plain nope: " \
	offload add ip plain nope
fb_expect_failure 1 "cannot delete flowtable inet fw ft: Could not process rule: Device or resource busy" \
	flowtable delete inet fw ft
fb_expect_failure 1 "cannot delete table ip6 nope: Could not process rule: No such file or directory" table delete ip6 nope
fb_expect_failure 2 "unknown family \"netdev\"" table add netdev n
after=$(nft_json)
unchanged() { [ "$before" = "$after" ]; }
check "failed requests changed nothing (no chain left from the failed offload batch)" unchanged

# Offload rules nft writes, as the kernel encodes them: the kernel
# selftest's rule (flow add before a counter and a verdict, after a device
# and a port), the nft wiki's ip/ip6 set pair (`flow offload`), in a
# forward chain that is not called forward; and an operator's rule next to
# flowbulk's in fw. flowbulk's listing must name each with nft's handle,
# and add and delete must leave every rule flowbulk did not write.
ip netns exec "$ns" nft -f - <<'EOF'
table inet wiki {
	flowtable f1 { hook ingress priority 10; devices = { veth0, veth1 }; }
	chain FWD {
		type filter hook forward priority filter; policy accept;
		meta oifname "veth1" tcp dport 12345 flow add @f1 counter accept
		ip protocol { tcp, udp } flow offload @f1
		ip6 nexthdr { tcp, udp } flow add @f1
	}
}
add rule inet fw forward meta l4proto tcp flow add @ft
EOF
wiki_as_nft_has_it() {
	local ours theirs
	ours=$(fb -j offload list inet wiki | jq -c '[.offloads[] |
		[.chain, .handle, .flowtable, .proto, .nfproto, .counter, .flowbulk]]')
	theirs=$(nft_json | jq -c '[.nftables[] | select(.rule) | .rule |
		select(.table == "wiki") | .handle]')
	if [ "$(jq -c '[.[] | .[1]]' <<<"$ours")" != "$theirs" ] ||
	   [ "$(jq -c '[.[] | del(.[1])]' <<<"$ours")" != \
	     '[["FWD","f1","other","any",true,false],["FWD","f1","tcp,udp","ipv4",false,false],["FWD","f1","tcp,udp","ipv6",false,false]]' ]; then
		echo "flowbulk: $ours"
		echo "nft handles: $theirs"
		return 1
	fi
}
check "offload list: nft_flowtable.sh's rule is other, the wiki pair tcp,udp per IP version" \
	wiki_as_nft_has_it
before=$(nft_json)
added=$(fb -j offload add inet wiki f1)
after=$(nft_json)
wiki_covered() {
	jq -e '.changed == false and (.present | length) == 2' <<<"$added" >/dev/null &&
		[ "$before" = "$after" ]
}
check "offload add to a chain FWD the wiki pair covers: nothing added" wiki_covered
fb_expect_failure 1 "has no offload rule for it that flowbulk wrote" offload delete inet wiki f1
fb_expect_failure 1 "Device or resource busy; used by:" flowtable delete inet wiki f1
after=$(nft_json)
check "a failed offload delete and flowtable delete changed nothing" unchanged
fb offload delete inet fw ft
only_the_operators_rule() {
	nft_json | jq -e '[.nftables[] | select(.rule) | .rule | select(.table == "fw")] |
		length == 1 and (.[0] | has("comment") | not) and
		.[0].expr[0].match.right == "tcp" and .[0].expr[1].flow.flowtable == "@ft"' \
		>/dev/null
}
check "offload delete took flowbulk's two rules and left the operator's" only_the_operators_rule

fb table delete inet wiki
fb table delete inet fw
fb table delete ip plain
empty() { [ "$(nft_json | jq '[.nftables[] | select(.table)] | length')" = 0 ]; }
check "table delete removes everything flowbulk made" empty

exit "$ret"
