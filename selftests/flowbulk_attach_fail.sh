#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# flowbulk -f with an early_ingress flowtable the module cannot attach (it
# has no device: ENOENT). Acceleration failing never touches the ruleset:
# it stays exactly as `nft -f` of the same file (early_ingress read as
# ingress) leaves it, flowbulk exits 3 ("loaded, not attached"), and the
# other flowtable of the file is attached all the same.
# - An /etc/nftables.conf-style file: `flush ruleset`, then the firewall
#   that was loaded before (an input chain with policy drop that accepts
#   loopback, replies and ssh). An undo of "what the load created" would
#   delete all three accept rules: a router locked out.
# - A file that appends: a rule added to the existing input chain and a new
#   table; another program's table (a stand-in for docker's) stays.
#
#   ns: veth0 <-> veth1 (veth0: the device of the flowtable that attaches)
set -eu
# shellcheck source=selftests/lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=tools/testing/lib/flowbulk.sh
source "$NFB_LIB/flowbulk.sh"

nfb_require_tool ip nft jq modprobe

fb_start -t -u -n
nfb_load_module
ip -n "$ns" link add veth0 type veth peer name veth1
ip -n "$ns" link set veth0 up

fb() { ip netns exec "$ns" timeout 120 "$FLOWBULK" "$@"; }
nft_ns() { ip netns exec "$ns" nft "$@"; }

# What was there before each load: the firewall, and another program's
# table.
cat >"$tmp/boot.nft" <<'EOF2'
table inet filter {
	chain input {
		type filter hook input priority filter; policy drop;
		iif "lo" accept
		ct state established,related accept
		tcp dport 22 accept
	}
}
table ip docker {
	chain forward {
		type filter hook forward priority filter; policy drop;
		ct state established accept
	}
}
EOF2
boot() { nft_ns flush ruleset && nft_ns -f "$tmp/boot.nft"; }

# The ruleset without handles (a table made again gets a new one) and
# without nft's metainfo.
ruleset() {
	nft_ns -j list ruleset | jq -S -c '[.nftables[] | select(.metainfo | not)] |
		walk(if type == "object" then del(.handle) else . end)'
}

# flowbulk -f FILE (its exit status, stdout and stderr kept), then the
# ruleset it left against the one nft -f of the same file with `ingress`
# leaves on the same start.
load_both() {
	local file=$1
	shift
	sed 's/early_ingress/ingress/' "$tmp/$file" >"$tmp/plain-$file"
	boot
	rc=0
	fb "$@" -f "$tmp/$file" >"$tmp/out" 2>"$tmp/err" || rc=$?
	ruleset >"$tmp/after-flowbulk"
	boot
	nft_ns -f "$tmp/plain-$file"
	ruleset >"$tmp/after-nft"
}
same_as_nft() {
	cmp -s "$tmp/after-flowbulk" "$tmp/after-nft" || {
		echo "flowbulk: $(cat "$tmp/after-flowbulk")"
		echo "nft:      $(cat "$tmp/after-nft")"
		return 1
	}
}
exit_3() {
	[ "$rc" = 3 ] || { echo "exit $rc: $(cat "$tmp/err")"; return 1; }
}
said() {
	grep -qF "$1" "$tmp/err" || { echo "stderr: $(cat "$tmp/err")"; return 1; }
}

cat >"$tmp/nftables.conf" <<'EOF2'
#!/usr/sbin/nft -f
flush ruleset

table inet filter {
	flowtable bad {
		hook early_ingress priority 0
	}
	flowtable ok {
		hook early_ingress priority 0
		devices = { veth0 }
	}
	chain input {
		type filter hook input priority filter; policy drop;
		iif "lo" accept
		ct state established,related accept
		tcp dport 22 accept
	}
	chain forward {
		type filter hook forward priority filter; policy drop;
		meta l4proto { tcp, udp } flow add @ok
		ct state established,related accept
	}
}
EOF2
load_both nftables.conf
check "flush ruleset file: exit 3 (loaded, not attached)" exit_3
stays_said() {
	said "; not attached: flowtable inet filter bad (" && said "the ruleset stays as loaded"
}
check "flush ruleset file: stderr names the flowtable and says the ruleset stays" stays_said
check "flush ruleset file: the ruleset equals what nft -f of the file gives" same_as_nft
input_kept() {
	jq -e '[.[] | select(.chain.name == "input")][0].chain.policy == "drop" and
		([.[] | select(.rule.chain == "input")] | length) == 3' "$tmp/after-flowbulk" >/dev/null
}
check "flush ruleset file: input chain: policy drop and its 3 accept rules" input_kept
only_ok_attached() {
	[ "$(fb -j attach list | jq -c '[.attachments[] | [.family, .table, .flowtable]]')" = \
		'[["inet","filter","ok"]]' ]
}
check "flush ruleset file: the flowtable after the failed one is attached" only_ok_attached

cat >"$tmp/append.nft" <<'EOF2'
add rule inet filter input tcp dport 80 accept
table inet fast {
	flowtable bad {
		hook early_ingress priority 0
	}
	chain forward {
		type filter hook forward priority filter; policy accept;
		meta l4proto tcp flow add @bad
	}
}
EOF2
load_both append.nft -j
check "appending file: exit 3 (loaded, not attached)" exit_3
check "appending file: the ruleset equals what nft -f of the file gives" same_as_nft
docker_kept() {
	jq -e '[.[] | select(.rule.table == "docker")] | length == 1' "$tmp/after-flowbulk" >/dev/null &&
		jq -e '[.[] | select(.rule.chain == "input")] | length == 4' "$tmp/after-flowbulk" >/dev/null
}
check "appending file: docker's table and the appended input rule are there" docker_kept
json_reported() {
	# jq -e on an empty stdout succeeds: a tool that printed nothing fails here.
	if [ ! -s "$tmp/out" ] || ! jq -e '.loaded == true and .attached == [] and
		.failed == [.failed[0]] and .failed[0].table == "fast" and
		.failed[0].flowtable == "bad" and .failed[0].errno > 0' "$tmp/out" >/dev/null; then
		echo "stdout: $(cat "$tmp/out")"
		return 1
	fi
}
check "appending file: -j says loaded, attached [], failed [inet fast bad]" json_reported

exit "$ret"
