#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# flowbulk -f with early_ingress flowtables, when an attach fails after the
# load: the rollback deletes, by handle and in one transaction, only what
# the load created; nothing stays attached.
# - Alone: the load is the only commit since flowbulk's listing (the ruleset
#   generation moved by one), so every table, chain and rule the load
#   created goes, and what was there before stays as it was.
# - With another writer committing all along: tables that writer adds
#   survive, and so does the table that was there before. A table or chain
#   the load echoes may then be one the writer created and the load only
#   updated, so flowbulk keeps those and names them; the load's rules go.
# (The old rollback ran `flush ruleset` and reloaded an earlier listing:
# the other writer's new tables were lost.)
#
#   ns: veth0 <-> veth1 (veth0: the device of the flowtable that attaches)
set -eu
# shellcheck source=selftests/lib.sh
source "$(dirname "$0")/lib.sh"

nfb_require_tool ip nft jq modprobe

FLOWBULK=${FLOWBULK:-$NFB_REPO/build/userspace/flowbulk}
[ -x "$FLOWBULK" ] || { log_fail "$FLOWBULK missing (make userspace)"; exit "$ksft_fail"; }

tmp=$(mktemp -d)
writer=
cleanup() {
	[ -z "$writer" ] || kill "$writer" 2>/dev/null || true
	cleanup_all_ns
	rm -rf "$tmp"
	if nfb_module_loaded; then nfb_unload_module; fi
}
trap cleanup EXIT

nfb_load_module
setup_ns ns
ip -n "$ns" link add veth0 type veth peer name veth1
ip -n "$ns" link set veth0 up

fb() { ip netns exec "$ns" timeout 120 "$FLOWBULK" "$@"; }
nft_ns() { ip netns exec "$ns" nft "$@"; }

nft_ns -f - <<'EOF2'
table inet keep {
	chain forward {
		type filter hook forward priority filter; policy drop;
		ct state established accept
	}
}
EOF2
keep_before=$(nft_ns -j list table inet keep | jq -c '[.nftables[] | select(.chain or .rule)]')

# The second flowtable cannot be attached: it has no device, so the module
# finds no hook of it (ENOENT). The first one is attached by then and must
# be detached again.
cat >"$tmp/ruleset.nft" <<'EOF2'
table inet rb {
	flowtable ok {
		hook early_ingress priority 0
		devices = { veth0 }
	}
	flowtable bad {
		hook early_ingress priority 0
	}
}
add chain inet keep extra
add rule inet keep forward counter
EOF2

keep_kept() {
	local now
	now=$(nft_ns -j list table inet keep | jq -c '[.nftables[] | select(.chain or .rule)]')
	[ "$now" = "$keep_before" ] || { echo "before: $keep_before"; echo "after: $now"; return 1; }
}
rb_gone() { ! nft_ns list table inet rb >/dev/null 2>&1; }
none_attached() {
	[ "$(fb -j attach list | jq '.attachments | length')" = 0 ]
}

rc=0
fb -f "$tmp/ruleset.nft" 2>"$tmp/err" || rc=$?
alone_reported() {
	if [ "$rc" != 1 ] || grep -q "may be theirs" "$tmp/err" ||
		! grep -q "cannot attach flowtable inet rb bad; removed the 3 objects it created" \
			"$tmp/err"; then
		echo "exit $rc: $(cat "$tmp/err")"
		return 1
	fi
}
check "alone: exit 1, 'removed the 3 objects it created' (a rule, a chain, a table)" \
	alone_reported
check "alone: table inet keep: its chain, policy and rule as before; no chain or rule left" \
	keep_kept
check "alone: table inet rb, which the load created, is gone" rb_gone
check "alone: nothing stays attached" none_attached

# Another writer, running all along: one new table after the other, each
# recorded once nft said it was made.
: >"$tmp/written"
(
	i=0
	while [ ! -e "$tmp/stop" ]; do
		if nft_ns add table ip other$i 2>/dev/null; then
			echo "other$i" >>"$tmp/written"
		fi
		i=$((i + 1))
	done
) &
writer=$!
busywait 10000 test -s "$tmp/written"

failed_each_time=1
for run in 1 2 3; do
	rc=0
	fb -f "$tmp/ruleset.nft" 2>"$tmp/err" || rc=$?
	if [ "$rc" != 1 ] || ! grep -q "cannot attach flowtable inet rb bad; removed the" "$tmp/err"
	then
		echo "run $run: exit $rc: $(cat "$tmp/err")"
		failed_each_time=0
	fi
done
touch "$tmp/stop"
wait "$writer" || true
writer=

reported() { [ "$failed_each_time" = 1 ]; }
check "with a writer: exit 1, 'removed the N objects it created' (3 runs)" reported

writers_tables_kept() {
	local name missing=0
	while read -r name; do
		nft_ns list table ip "$name" >/dev/null 2>&1 || { echo "lost: ip $name"; missing=1; }
	done <"$tmp/written"
	[ "$missing" = 0 ] && [ -s "$tmp/written" ]
}
check "with a writer: every table it made during the runs is still there ($(wc -l <"$tmp/written"))" \
	writers_tables_kept

# The forward chain of inet keep was there before every run: its policy and
# rule are as they were, and the load's counter rule is gone (the chain
# `extra` may be kept, named as perhaps the writer's).
keep_forward_kept() {
	local before now
	before=$(jq -c '[.[] | select(.chain.name == "forward" or .rule.chain == "forward")]' \
		<<<"$keep_before")
	now=$(nft_ns -j list table inet keep | jq -c '[.nftables[] |
		select(.chain.name == "forward" or .rule.chain == "forward")]')
	[ "$now" = "$before" ] || { echo "before: $before"; echo "after: $now"; return 1; }
}
check "with a writer: inet keep's forward chain: policy and rule as before, no rule added" \
	keep_forward_kept
check "with a writer: nothing stays attached" none_attached

exit "$ret"
