#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The RFC's `hook early_ingress` through flowbulk: a ruleset file that uses
# it loads (the rest exactly as nft -f would), its flowtable sits at ingress
# and is attached to nf_flow_bulk, which the kernel loads on demand by its
# genetlink family alias. A ruleset with a syntax error is refused with nft's
# message and line and changes nothing. A flowtable re-created by nft at hook
# ingress is not taken (the attachment shows stale) until the early_ingress
# file is loaded again, and gives way to a new attachment at
# max_attachments; a file declaring it hook ingress detaches it. -c checks
# in the kernel and changes nothing; -e prints the kernel's handles, and
# on attach and detach the attachment with its state. An nft
# JSON ruleset (nft -j -f)
# loads the same way. `flowtable add ... hook
# early_ingress` does the same in one command; `stats -j` agrees with
# /proc/net/stat/nf_flow_bulk; `monitor -j` prints one document per sample.
#
#   ns: veth0 <-> veth1, veth2 <-> veth3 (devices for the flowtables)
set -eu
# shellcheck source=selftests/lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=tools/testing/lib/flowbulk.sh
source "$NFB_LIB/flowbulk.sh"

nfb_require_tool ip nft jq modprobe

fb_start -t -u
# Installed but not loaded: flowbulk's family lookup must load it.
nfb_install_module
if nfb_module_loaded; then nfb_unload_module; fi

setup_ns ns
# No IPv6 on the links: their neighbour discovery and MLD packets would
# reach the module's hooks and move the decline counters between the reads
# that 'stats -j' and /proc must agree on (a flake seen once on 6.1). With
# no address at all, nothing crosses the links unless the test sends it.
ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 \
	net.ipv6.conf.default.disable_ipv6=1
for pair in "veth0 veth1" "veth2 veth3"; do
	read -r a b <<<"$pair"
	ip -n "$ns" link add "$a" type veth peer name "$b"
	ip -n "$ns" link set "$a" up
	ip -n "$ns" link set "$b" up
done

fb() { ip netns exec "$ns" "$FLOWBULK" "$@"; }
nft_json() { ip netns exec "$ns" nft -j list ruleset; }

cat >"$tmp/router.nft" <<'NFT'
# A router's ruleset: only the flowtable's hook is not stock nft.
table inet fw {
	flowtable ft {
		hook early_ingress priority 10
		devices = { veth0, veth1 }
	}

	chain forward {
		type filter hook forward priority filter; policy accept;
		meta l4proto { tcp, udp } flow add @ft
	}
}
NFT

fb -f "$tmp/router.nft"

module_autoloaded() { nfb_module_loaded; }
check "nf_flow_bulk loaded on demand through its genetlink family" module_autoloaded

at_ingress() {
	nft_json | jq -e '[.nftables[] | select(.flowtable) | .flowtable |
		select(.table == "fw" and .name == "ft")] |
		length == 1 and .[0].hook == "ingress" and .[0].prio == 10 and
		([.[0].dev] | flatten | sort) == ["veth0", "veth1"]' >/dev/null
}
check "-f: early_ingress flowtable inet fw ft is at hook ingress priority 10" at_ingress

rest_loaded() {
	nft_json | jq -e '[.nftables[] | select(.rule) | .rule | select(.chain == "forward")] |
		length == 1' >/dev/null
}
check "-f: the rest of the ruleset loaded as nft would" rest_loaded

# attached FAMILY TABLE FLOWTABLE PRIORITY DEVICES(json array)
attached() {
	fb -j attach list | jq -e --arg f "$1" --arg t "$2" --arg n "$3" \
		--argjson p "$4" --argjson d "$5" \
		'[.attachments[] | select(.family == $f and .table == $t and .flowtable == $n)] |
		length == 1 and .[0].priority == $p and (.[0] | has("hook_priority") | not) and
		([.[0].devices[].ifname] | sort) == $d' >/dev/null
}
check "-f: inet fw ft attached, module hook at priority 10 on veth0,veth1" \
	attached inet fw ft 10 '["veth0","veth1"]'

# Loading the same file again (a router's boot script run twice) works and
# keeps the attachment.
reload_same_file() { fb -f "$tmp/router.nft"; }
check "-f of the same file again succeeds" reload_same_file
check "-f again: inet fw ft still attached" attached inet fw ft 10 '["veth0","veth1"]'

# state_is STATE: inet fw ft's attachment state in 'attach list -j'.
state_is() {
	fb -j attach list | jq -e --arg s "$1" \
		'[.attachments[] | select(.table == "fw" and .flowtable == "ft")] |
		length == 1 and .[0].state == $s' >/dev/null
}
check "-f: inet fw ft's attachment state is attached" state_is attached

# The table deleted and the file loaded by nft as nft takes it (hook
# ingress): the flowtable of that name is another one, which the module
# must not take. The attachment shows it, then the early_ingress file
# loaded again attaches the new one.
sed 's/early_ingress/ingress/' "$tmp/router.nft" >"$tmp/router-ingress.nft"
ip netns exec "$ns" nft delete table inet fw
check "table deleted: the attachment is waiting" state_is waiting
ip netns exec "$ns" nft -f "$tmp/router-ingress.nft"
check "re-created by nft at hook ingress: the attachment is stale" state_is stale

# A stale attachment gives way at max_attachments (nothing will ever use it
# again): with room for one, attaching another flowtable replaces it.
max_param=/sys/module/nf_flow_bulk/parameters/max_attachments
echo 1 >"$max_param"
ip netns exec "$ns" nft "add table inet spare
	add flowtable inet spare ft { hook ingress priority 0; devices = { veth2 }; }"
stale_gives_way() {
	fb attach inet spare ft &&
		fb -j attach list | jq -e '[.attachments[] | [.table, .state]] ==
			[["spare", "attached"]]' >/dev/null
}
check "max_attachments 1: attaching inet spare ft takes the stale one's place" stale_gives_way
echo 64 >"$max_param"
fb table delete inet spare
fb -f "$tmp/router.nft"
check "-f of the early_ingress file again: the new inet fw ft attached" \
	attached inet fw ft 10 '["veth0","veth1"]'
check "-f again: the attachment state is attached" state_is attached

# The same flowtable declared hook ingress in a file flowbulk loads (an
# update: the flowtable stays, and would stay attached): flowbulk detaches
# it, and says so.
detaches_ingress() {
	fb -f "$tmp/router-ingress.nft" >"$tmp/out" &&
		grep -qx "detached flowtable inet fw ft: $tmp/router-ingress.nft declares it hook ingress" \
			"$tmp/out" &&
		! fb -j attach list | jq -e '.attachments[] | select(.table == "fw")' >/dev/null
}
check "-f of a file declaring inet fw ft hook ingress: detached, and said so" detaches_ingress
fb -f "$tmp/router.nft"

# -n NETNS, as ip -n: the namespace's listing from outside it; a namespace
# that does not exist is named in the error.
netns_option() { [ "$("$FLOWBULK" -n "$ns" -j attach list)" = "$(fb -j attach list)" ]; }
check "-n $ns: attach list as from inside the namespace" netns_option
netns_missing() {
	! "$FLOWBULK" -n "$ns-gone" table list 2>"$tmp/err" &&
		grep -q "cannot open network namespace \"$ns-gone\": No such file" "$tmp/err"
}
check "-n of a namespace that does not exist: exit 1, named in the error" netns_missing

# A syntax error on line 4: nft's message with the line, nothing applied.
cat >"$tmp/broken.nft" <<'NFT'
table inet other {
	flowtable f2 {
		hook early_ingress priority 0
		devices = { veth2 } junk
	}
}
NFT
before=$(nft_json)
# What is attached, not the scan counters a sweep moves meanwhile.
attach_state() { fb -j attach list | jq -c '[.attachments[] | [.table, .flowtable, .state]]'; }
attach_before=$(attach_state)
rc=0
fb -f "$tmp/broken.nft" 2>"$tmp/err" || rc=$?
syntax_error_reported() {
	[ "$rc" = 1 ] && grep -qF "$tmp/broken.nft:4:" "$tmp/err" && grep -q "Error:" "$tmp/err"
}
check "-f with a syntax error: exit 1 with nft's message at line 4" syntax_error_reported
[ "$rc" = 1 ] || cat "$tmp/err"
nothing_applied() {
	[ "$(nft_json)" = "$before" ] && [ "$(attach_state)" = "$attach_before" ]
}
check "-f with a syntax error: ruleset and attachments unchanged" nothing_applied

# The same from stdin.
printf 'table ip viastdin {\n\tflowtable f3 {\n\t\thook early_ingress priority -5\n\t\tdevices = { veth2 }\n\t}\n}\n' |
	fb -f -
check "-f -: ip viastdin f3 attached" attached ip viastdin f3 -5 '["veth2"]'

# nft JSON, as `nft -j -f` takes it: the early_ingress flowtable is made at
# ingress and attached all the same.
cat >"$tmp/router.json" <<'JSON'
{"nftables": [
  {"add": {"table": {"family": "ip", "name": "viajson"}}},
  {"add": {"flowtable": {"family": "ip", "table": "viajson", "name": "f4",
                         "hook": "early_ingress", "prio": 7, "dev": ["veth2"]}}}
]}
JSON
fb -f "$tmp/router.json"
check "-f JSON: ip viajson f4 attached at priority 7" attached ip viajson f4 7 '["veth2"]'
json_at_ingress() {
	nft_json | jq -e '[.nftables[] | select(.flowtable) | .flowtable |
		select(.table == "viajson")] | length == 1 and .[0].hook == "ingress"' >/dev/null
}
check "-f JSON: the flowtable is at hook ingress" json_at_ingress

# One command: create at ingress and attach.
fb table add ip6 six
fb flowtable add ip6 six f6 hook early_ingress priority 20 devices veth3 counter
check "flowtable add hook early_ingress: attached" attached ip6 six f6 20 '["veth3"]'

# -c: the kernel checks the change and aborts it. veth3 is in six's f6
# already, which only the kernel knows to refuse (EEXIST): reported, and
# nothing changed; offload add's plan changes nothing either.
before=$(nft_json)
attach_before=$(attach_state)
check_refused() {
	! fb -c flowtable add ip6 six f7 hook early_ingress devices veth3 2>"$tmp/err" &&
		grep -q "cannot add flowtable ip6 six f7: .*File exists" "$tmp/err"
}
check "-c flowtable add on a device of another flowtable: the kernel's EEXIST" check_refused
check_plan() {
	fb -c offload add ip6 six f6 proto tcp >"$tmp/out" &&
		grep -qx "would create chain ip6 six forward { type filter hook forward priority 0; }" \
			"$tmp/out"
}
check "-c offload add: the plan" check_plan
check_changed_nothing() {
	[ "$(nft_json)" = "$before" ] && [ "$(attach_state)" = "$attach_before" ]
}
check "-c: ruleset and attachments unchanged" check_changed_nothing
echoes_handles() {
	fb -e offload add ip6 six f6 proto tcp >"$tmp/out" &&
		handle=$(ip netns exec "$ns" nft -j -a list chain ip6 six forward |
			jq -e '[.nftables[] | select(.rule) | .rule.handle] | .[0]') &&
		grep -qx "add rule ip6 six forward meta l4proto tcp flow add @f6 comment \"flowbulk\" # handle $handle" \
			"$tmp/out"
}
check "-e offload add: the rule with the handle the kernel gave it" echoes_handles

# -e on the module's writes: the attachment as the module lists it, before
# the detach and after the attach.
echoes_detach() {
	fb -e detach ip6 six f6 >"$tmp/out" &&
		grep -qx "detach flowtable ip6 six f6 # state attached, priority 20, devices veth3" \
			"$tmp/out"
}
check "-e detach: the attachment it removed, with its state" echoes_detach
detached() { ! attached ip6 six f6 20 '["veth3"]'; }
check "detach removes the attachment" detached
echoes_attach() {
	fb -j -e attach ip6 six f6 >"$tmp/out" &&
		jq -e '(.echo | length) == 1 and (.echo[0].attach.attachment |
			[.family, .table, .flowtable, .state, .priority, [.devices[].ifname]] ==
			["ip6", "six", "f6", "attached", 20, ["veth3"]])' "$tmp/out" >/dev/null
}
check "-e -j attach: the attachment it made, attached at priority 20 on veth3" echoes_attach
fb detach ip6 six f6

check "stats -j totals equal /proc/net/stat/nf_flow_bulk" nfb_stats_agree "$ns"

monitor_samples() {
	fb -j monitor interval 0.2 count 2 | jq -s -e 'length == 2 and
		all(.[]; .schema == 2 and .sample.interval == 0.2 and
			(.sample.packets_per_second | type) == "number")' >/dev/null
}
check "monitor -j: one JSON document per sample" monitor_samples

fb table delete inet fw
fb table delete ip viastdin
fb table delete ip viajson
fb table delete ip6 six
none_left() { [ "$(fb -j attach list | jq '.attachments | length')" = 0 ]; }
check "table delete detaches its flowtables" none_left

exit "$ret"
