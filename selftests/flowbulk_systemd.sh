#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# flowbulk.service under systemd, as make install puts it (make
# install-service, the build tree's tool and module), in the guest's
# initial network namespace:
#   - boot: systemctl enable of nftables.service and flowbulk.service, then
#     systemd boots (tools/testing/lib/boot.sh: PID 1 of namespaces of its own,
#     sysinit.target, where both are WantedBy) and nobody types a command:
#     flowbulk.service is active, started after nftables.service was, and
#     the flowtable /etc/flowbulk/attach.conf lists is attached;
#   - nft -f /etc/nftables.conf by hand leaves the attachment stale, and
#     "systemctl reload nftables" (ReloadPropagatedFrom) attaches it again;
#   - "systemctl stop nftables" stops flowbulk.service too (PartOf): the
#     flowtable is detached and the module the unit loaded unloaded;
#   - "systemctl start nftables flowbulk" attaches it again, and systemd's
#     halt (halt.target: the units' ExecStop) detaches it and unloads the
#     module; systemd halts, it is not killed.
# The packages' whole life, booted the same way, is selftests/nfb_deb.sh.
# nfb-timeout: 600
set -eu
# shellcheck source=selftests/lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=tools/testing/lib/boot.sh
source "$NFB_LIB/boot.sh"

nfb_require_tool ip nft unshare systemctl make

tool=$NFB_REPO/build/userspace/flowbulk
[ -x "$tool" ] || { log_fail "$tool missing (make userspace)"; exit "$ksft_fail"; }
[ ! -e /usr/sbin/flowbulk ] || nfb_cannot_run "flowbulk is installed in /usr/sbin already"
[ ! -e /run/systemd/system ] || nfb_cannot_run "systemd runs here already"
tmp=$(mktemp -d /tmp/nfb-systemd.XXXXXX)

# shellcheck disable=SC2317 # called through the EXIT trap
cleanup() {
	boot_systemd_stop || true
	systemctl disable nftables.service flowbulk.service >/dev/null 2>&1 || true
	make --no-print-directory -C "$NFB_REPO" uninstall-service PREFIX=/usr >/dev/null 2>&1 || true
	rm -f /etc/flowbulk/attach.conf /usr/sbin/flowbulk
	rmdir /etc/flowbulk 2>/dev/null || true
	rm -f /etc/nftables.conf
	[ ! -e "$tmp/nftables.conf.orig" ] || cp -a "$tmp/nftables.conf.orig" /etc/nftables.conf
	nft flush ruleset 2>/dev/null || true
	ip link del sdb0 2>/dev/null || true
	if nfb_module_loaded; then nfb_unload_module; fi
	rm -rf "$tmp"
}
trap cleanup EXIT

nfb_install_module
if nfb_module_loaded; then nfb_unload_module; fi
install -m 0755 "$tool" /usr/sbin/flowbulk
make --no-print-directory -C "$NFB_REPO" install-service PREFIX=/usr >/dev/null

ip link add sdb0 type veth peer name sdb1
ip link set sdb0 up
ip link set sdb1 up
[ ! -e /etc/nftables.conf ] || cp -a /etc/nftables.conf "$tmp/nftables.conf.orig"
boot_ruleset /etc/nftables.conf router sdb0 sdb1
echo 'inet router ft' >>/etc/flowbulk/attach.conf
systemctl enable nftables.service flowbulk.service
boot_units_dir "$tmp/units" /lib/systemd/system/nftables.service \
	/usr/lib/systemd/system/flowbulk.service

# ---- boot
boot_check_started "$tmp/units"
check "boot: inet router ft attached, no command typed" boot_state_is attached inet router ft

# ---- reload
check "nft -f by hand" nft -f /etc/nftables.conf
check "nft -f by hand: inet router ft stale" boot_state_is stale inet router ft
check "systemctl reload nftables" boot_systemctl reload nftables.service
check "systemctl reload nftables: flowbulk.service reloaded, active" \
	boot_unit_becomes flowbulk.service active
check "systemctl reload nftables: inet router ft attached again" \
	boot_state_is attached inet router ft

# ---- stop
check "systemctl stop nftables" boot_systemctl stop nftables.service
check "systemctl stop nftables: flowbulk.service stopped too" \
	boot_unit_becomes flowbulk.service inactive
check "systemctl stop nftables: detached, the module the unit loaded unloaded" \
	bash -c "! [ -d /sys/module/$NFB_MODULE ]"

# ---- halt (both units started again: flowbulk.service's ExecStop at the halt)
check "systemctl start nftables flowbulk" \
	boot_systemctl start nftables.service flowbulk.service
check "systemctl start nftables flowbulk: inet router ft attached" \
	boot_state_is attached inet router ft
check "halt: systemd halted (halt.target, not killed)" boot_systemd_stop
check "halt: detached, the module the unit loaded unloaded" bash -c "! [ -d /sys/module/$NFB_MODULE ]"
exit "$ret"
