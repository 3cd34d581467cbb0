#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# flowbulk -f with early_ingress flowtables, when an attach fails after the
# load: the rollback deletes, by handle and in one transaction, only what
# the load created. Tables another writer adds while the command runs, and
# the rules of a table that was there before, survive; nothing stays
# attached. (The old rollback ran `flush ruleset` and reloaded an earlier
# listing: the other writer's new tables were lost.)
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
check "-f with a failing attach: exit 1, 'removed the N objects it created' (3 runs)" reported

writers_tables_kept() {
	local name missing=0
	while read -r name; do
		nft_ns list table ip "$name" >/dev/null 2>&1 || { echo "lost: ip $name"; missing=1; }
	done <"$tmp/written"
	[ "$missing" = 0 ] && [ -s "$tmp/written" ]
}
check "every table the other writer made during the runs is still there ($(wc -l <"$tmp/written"))" \
	writers_tables_kept

keep_kept() {
	local now
	now=$(nft_ns -j list table inet keep | jq -c '[.nftables[] | select(.chain or .rule)]')
	[ "$now" = "$keep_before" ] || { echo "before: $keep_before"; echo "after: $now"; return 1; }
}
check "table inet keep: its chain, policy and rule as before; no chain or rule left" keep_kept

rb_gone() { ! nft_ns list table inet rb >/dev/null 2>&1; }
check "table inet rb, which the load created, is gone" rb_gone

none_attached() {
	[ "$(fb -j attach list | jq '.attachments | length')" = 0 ]
}
check "nothing stays attached" none_attached

exit "$ret"
