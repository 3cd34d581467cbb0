#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# flowbulk.service's commands (packaging/systemd/flowbulk-attach-list, which
# the flowbulk package installs) against the build tree's tool and module,
# in a namespace of their own:
#   - an empty list: start attaches nothing and loads nothing;
#   - a malformed line: start fails and attaches nothing;
#   - start attaches the listed flowtable, loading the module; again, it
#     is already attached and start succeeds;
#   - nft -f of the ruleset (flush ruleset, the flowtable made again): the
#     attachment is stale (nft made another flowtable); reload, as
#     "systemctl reload nftables" runs it after nft -f, attaches it again;
#   - a listed flowtable the ruleset lacks: reload fails, the ruleset is
#     unchanged, the other flowtable stays attached;
#   - the flowtable taken out of the list: reload detaches it, and unloads
#     the module start loaded;
#   - stop detaches what start attached and unloads the module start
#     loaded; a module loaded before start stays loaded.
# The packages' whole life (install, boot, upgrade, purge) with traffic is
# selftests/nfb_deb.sh (make check-deb).
set -eu
# shellcheck source=selftests/lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=tools/testing/lib/boot.sh
source "$NFB_LIB/boot.sh"

nfb_require_tool ip nft

export FLOWBULK=$NFB_REPO/build/userspace/flowbulk
[ -x "$FLOWBULK" ] || { log_fail "$FLOWBULK missing (make userspace)"; exit "$ksft_fail"; }
unitcmd=$NFB_REPO/packaging/systemd/flowbulk-attach-list
tmp=$(mktemp -d /tmp/nfb-boot.XXXXXX)
export FLOWBULK_ATTACH_CONF=$tmp/attach.conf FLOWBULK_RUN_DIR=$tmp/run

# shellcheck disable=SC2317 # called through the EXIT trap
cleanup() {
	cleanup_all_ns
	if nfb_module_loaded; then nfb_unload_module; fi
	rm -rf "$tmp"
}
trap cleanup EXIT

nfb_install_module
if nfb_module_loaded; then nfb_unload_module; fi

router=""
setup_ns router
BOOT_NETNS=$router
ip -n "$router" link add a0 type veth peer name a1
ip -n "$router" link set a0 up
ip -n "$router" link set a1 up
boot_ruleset "$tmp/ruleset.nft" fw a0 a1
ip netns exec "$router" nft -f "$tmp/ruleset.nft"

unit() { ip netns exec "$router" "$unitcmd" "$@"; }
attachments() {
	nfb_module_loaded || return 0
	ip netns exec "$router" "$FLOWBULK" attach list | awk 'NR > 1 { print $1, $2, $3 }'
}
attached() { boot_state_is attached inet fw ft; }
not_attached() { boot_state_is none inet fw ft; }
not_loaded() { ! nfb_module_loaded; }
fails() { ! "$@"; }

printf '# the flowtables to attach\n\n' >"$FLOWBULK_ATTACH_CONF"
check "empty list: start succeeds" unit start
check "empty list: the module is not loaded" not_loaded

printf 'inet fw ft\ninet fw\n' >"$FLOWBULK_ATTACH_CONF"
check "malformed line: start fails" fails unit start
check "malformed line: the module is not loaded, nothing attached" not_loaded

printf '# the flowtables to attach\ninet fw ft   # the router'"'"'s\n' >"$FLOWBULK_ATTACH_CONF"
check "start: succeeds" unit start
check "start: inet fw ft attached" attached
check "start: again, succeeds (already attached)" unit start
check "start: again, attached once" [ "$(attachments | wc -l)" = 1 ]

check "nft -f of the ruleset: loaded" ip netns exec "$router" nft -f "$tmp/ruleset.nft"
check "nft -f of the ruleset: inet fw ft stale (nft made another flowtable)" \
	boot_state_is stale inet fw ft
check "nft -f of the ruleset: reload succeeds" unit reload
check "nft -f of the ruleset: reload attached the new inet fw ft" attached
check "nft -f of the ruleset: attached once" [ "$(attachments | wc -l)" = 1 ]

ip netns exec "$router" nft list ruleset >"$tmp/ruleset.0"
echo 'inet fw missing' >>"$FLOWBULK_ATTACH_CONF"
check "missing flowtable: reload fails" fails unit reload
ip netns exec "$router" nft list ruleset >"$tmp/ruleset.1"
check "missing flowtable: the ruleset is unchanged" cmp -s "$tmp/ruleset.0" "$tmp/ruleset.1"
check "missing flowtable: inet fw ft still attached" attached

printf '#inet fw ft\n' >"$FLOWBULK_ATTACH_CONF"
check "taken out of the list: reload succeeds" unit reload
check "taken out of the list: inet fw ft detached, the module unloaded" not_loaded

echo 'inet fw ft' >"$FLOWBULK_ATTACH_CONF"
check "start again: succeeds" unit start
check "start again: attached" attached
check "stop: succeeds" unit stop
check "stop: the module start loaded is unloaded" not_loaded

modprobe "$NFB_MODULE"
check "module loaded before: start succeeds" unit start
check "module loaded before: attached" attached
check "module loaded before: stop succeeds" unit stop
check "module loaded before: detached" not_attached
check "module loaded before: still loaded after stop" nfb_module_loaded
check "stop: no state left" [ ! -e "$FLOWBULK_RUN_DIR/attached" ]
exit "$ret"
