#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Names and priorities are nft's, not flowbulk's: a table that nft created
# with a name nft's syntax cannot even write (JSON: "my table.v2") or with
# one it can ("my-table.v2") is listed, deleted and attached by flowbulk;
# `priority filter + 10` is evaluated by libnftables to 10, as nft does, and
# a priority name a flowtable does not have is refused with nft's message.
# Names that are nft keywords (table "flow") are used by flowbulk where nft
# made them; flowbulk itself creates only names nft reads back from its own
# listing (exit 2 otherwise), and what it made passes `nft -c -f` of that
# listing. Reading (attach list, stats, monitor) does not load the module.
#
#   ns: veth0 <-> veth1 (devices for the flowtables)
set -eu
# shellcheck source=selftests/lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=tools/testing/lib/flowbulk.sh
source "$NFB_LIB/flowbulk.sh"

nfb_require_tool ip nft jq modprobe

fb_start -u -p "veth0 veth1"
nfb_load_module

fb() { ip netns exec "$ns" "$FLOWBULK" "$@"; }
nft_ns() { ip netns exec "$ns" nft "$@"; }
# nft JSON commands on stdin.
nft_json_cmd() { ip netns exec "$ns" nft -j -f -; }


tables() { nft_ns -j list tables | jq -c '[.nftables[] | select(.table) | .table.name] | sort'; }

# ---- tables nft made, with names flowbulk used to refuse --------------------

nft_ns add table inet "my-table.v2"
echo '{"nftables": [{"add": {"table": {"family": "inet", "name": "my table.v2"}}},
	{"add": {"flowtable": {"family": "inet", "table": "my table.v2", "name": "ft 1",
	  "hook": "ingress", "prio": 5, "dev": ["veth0"]}}}]}' | nft_json_cmd

listed() {
	fb -j table list inet |
		jq -e '[.tables[].name] | index("my-table.v2") != null and
			index("my table.v2") != null' >/dev/null
}
check "table list shows \"my-table.v2\" and \"my table.v2\"" listed

attached() {
	fb attach inet "my table.v2" "ft 1" &&
		fb -j attach list | jq -e '[.attachments[] |
			select(.table == "my table.v2" and .flowtable == "ft 1")] |
			length == 1' >/dev/null
}
check "attach inet \"my table.v2\" \"ft 1\" (made by nft -j)" attached

offloaded() {
	fb offload add inet "my table.v2" "ft 1" &&
		nft_ns -j list chain inet "my table.v2" forward 2>/dev/null |
		jq -e '[.nftables[] | select(.rule) | .rule.expr[-1].flow.flowtable] ==
			["@ft 1", "@ft 1"]' >/dev/null
}
check "offload add into table \"my table.v2\" flowtable \"ft 1\"" offloaded

deleted() {
	fb table delete inet "my table.v2" &&
		fb table delete inet "my-table.v2" &&
		[ "$(tables)" = "[]" ] &&
		[ "$(fb -j attach list | jq '.attachments | length')" = 0 ]
}
check "table delete of both tables nft made; the attachment goes with them" deleted

# ---- priorities as nft takes them -------------------------------------------

fb table add inet fw
fb flowtable add inet fw ft hook ingress priority filter + 10 devices veth0 counter

prio_is() {
	local name=$1 want=$2
	nft_ns -j list flowtables | jq -e --arg name "$name" --argjson want "$want" \
		'[.nftables[] | select(.flowtable) | .flowtable |
		  select(.table == "fw" and .name == $name)] |
		length == 1 and .[0].prio == $want' >/dev/null
}
check "flowtable add ... priority filter + 10: nft -j list flowtables says prio 10" \
	prio_is ft 10
counter_kept() { nft_ns list flowtable inet fw ft | grep -qw counter; }
check "the flowtable has the counter flag" counter_kept

fb flowtable add inet fw named hook ingress priority filter devices veth1
check "priority filter: prio 0" prio_is named 0

fb flowtable delete inet fw ft
fb flowtable add inet fw ft hook ingress priority filter - 5 devices veth0
check "priority filter - 5: prio -5" prio_is ft -5

before=$(nft_ns -j list ruleset)
fb_expect_failure 1 "invalid priority expression" \
	flowtable add inet fw ft2 hook ingress priority dstnat devices veth1
fb_expect_failure 2 "invalid priority" \
	flowtable add inet fw ft2 hook ingress priority "0; flush ruleset" devices veth1
fb_expect_failure 1 "No such file or directory; did you mean table" \
	flowtable add inet wf ft2 hook ingress priority filter devices veth1
after=$(nft_ns -j list ruleset)
unchanged() { [ "$before" = "$after" ]; }
check "refused priorities changed nothing" unchanged

fb offload add inet fw ft
reads_back() { nft_ns list ruleset | ip netns exec "$ns" nft -c -f -; }
check "nft list ruleset | nft -c -f - reads back what flowbulk made" reads_back
fb table delete inet fw

# nft keywords as names: the kernel takes them, nft's syntax cannot write
# them. flowbulk works in a table nft made under one, and makes none.
echo '{"nftables": [{"add": {"table": {"family": "inet", "name": "flow"}}}]}' | nft_json_cmd
keyword_names() {
	fb flowtable add inet flow ft hook ingress devices veth0 &&
		fb offload add inet flow ft &&
		[ "$(fb -j offload list inet flow | jq '.offloads | length')" = 2 ] &&
		nft_ns -j list flowtables | jq -e '.nftables[] | select(.flowtable) |
			.flowtable | select(.table == "flow" and .name == "ft")' >/dev/null &&
		fb offload delete inet flow ft &&
		fb flowtable delete inet flow ft &&
		fb table delete inet flow
}
check "table \"flow\" made by nft: flowtable added, offloaded to, deleted" keyword_names
fb_expect_failure 2 "would make a ruleset nft cannot read back" table add inet flow
fb_expect_failure 2 "would make a ruleset nft cannot read back" table add inet "my table"
fb_expect_failure 2 "table name is empty" table add inet ""
fb_expect_failure 1 "cannot list flowtables: table inet nosuch: No such file or directory" \
	flowtable list inet nosuch

check "everything removed" [ "$(tables)" = "[]" ]

# A family lookup by name makes the kernel load the module
# (request_module of its genetlink alias): reading must not.
nfb_unload_module
fb_expect_failure 1 "the nf_flow_bulk module is not loaded" stats
fb_expect_failure 1 "the nf_flow_bulk module is not loaded" monitor count 1
not_loaded_listing() { [ "$(fb attach list)" = "module not loaded: no attachments" ]; }
check "attach list without the module: \"module not loaded: no attachments\"" not_loaded_listing
still_unloaded() { ! nfb_module_loaded; }
check "stats, monitor and attach list left nf_flow_bulk unloaded" still_unloaded

exit "$ret"
