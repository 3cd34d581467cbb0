#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The Debian packages as a router gets them (make check-deb builds them on
# the host, then runs this in a guest):
#   - install: dpkg -i of nf-flow-bulk-dkms and flowbulk on the guest's
#     root, where neither is installed; DKMS builds the module for the
#     running kernel; flowbulk.service is enabled; nothing is loaded;
#   - boot: /etc/nftables.conf (a flowtable at "hook ingress" on the two
#     router links), /etc/flowbulk/attach.conf naming it and "systemctl
#     enable nftables", as the operator does; then systemd boots
#     (tools/testing/lib/boot.sh: the guest's init is busybox, and a reboot
#     would lose the installed root, so systemd starts as PID 1 of
#     namespaces of its own on this root, sysinit.target from the packages'
#     enable links) and nobody types a command: flowbulk.service is active,
#     started after nftables.service was, the flowtable attached and the
#     module takes its traffic; systemd-analyze verify on the unit;
#   - reload: nft -f by hand makes another flowtable: the attachment is
#     stale and the stock flowtable forwards (the module takes nothing);
#     then "systemctl reload nftables": attached again, traffic taken;
#   - a failed attach (a flowtable the ruleset lacks): "systemctl reload
#     flowbulk" fails, no rule changes, the other attachment stays;
#   - systemd halts (the units' ExecStop: detached, unloaded, the ruleset
#     flushed); the rest runs the units' commands as the packages' scripts
#     ask systemd for them: ExecStart of both units again;
#   - upgrade: dpkg -i of the next version's packages while attached:
#     the old module forwards on through the upgrade, and the unit's restart
#     (what the package's postinst asks systemd for) loads the new one;
#   - purge: the unit's ExecStop (the prerm's stop), then dpkg --purge: the
#     module it loaded is unloaded, no path of either package is left
#     (their contents checked against the filesystem), nothing else changed
#     under /etc, /usr, /lib/modules and /var/lib/dkms, no DKMS entry.
# The router is the guest's initial network namespace (the unit's), the
# client and the server are namespaces of their own. Run on the newest
# installed kernel: the packages' postinst builds for the running kernel
# and the newest one, so this way DKMS compiles once.
# NFB_DEB_DIR: the packages; NFB_DEB_DIR_NEW: the next version's;
# NFB_DEB_NEXT_DKMS: the next version's module prebuilt as a DKMS tarball
# (tools/check-deb), which the upgrade's postinst loads instead of
# compiling; empty: DKMS compiles the next version in the guest too.
# nfb-timeout: 3600
set -eu
# shellcheck source=selftests/lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=tools/testing/lib/boot.sh
source "$NFB_LIB/boot.sh"

nfb_require_tool dpkg dkms nft ip python3 systemd-analyze modinfo unshare nsenter
[ ! -e /run/systemd/system ] || nfb_cannot_run "systemd runs here already"

deb_dir=${NFB_DEB_DIR:-$NFB_REPO/build/deb}
new_dir=${NFB_DEB_DIR_NEW:-$NFB_REPO/build/deb-new}
next_dkms=${NFB_DEB_NEXT_DKMS:-}
ls "$deb_dir"/flowbulk_*.deb >/dev/null ||
	nfb_cannot_run "no packages in $deb_dir (make check-deb builds them)"
kver=$(uname -r)
[ -d "/lib/modules/$kver/build/include" ] || nfb_cannot_run "no headers for $kver"
tmp=$(mktemp -d /tmp/nfb-deb.XXXXXX)
unit=/lib/systemd/system/flowbulk.service
nft_unit=/lib/systemd/system/nftables.service
echo_pid=

# shellcheck disable=SC2317 # called through the EXIT trap
cleanup() {
	boot_systemd_stop || true
	systemctl disable nftables.service >/dev/null 2>&1 || true
	[ -z "$echo_pid" ] || kill "$echo_pid" 2>/dev/null || true
	cleanup_all_ns
	nft flush ruleset 2>/dev/null || true
	if dpkg-query -W flowbulk >/dev/null 2>&1; then
		dpkg --purge flowbulk nf-flow-bulk-dkms >/dev/null 2>&1 || true
	fi
	if nfb_module_loaded; then modprobe -r "$NFB_MODULE" || true; fi
	rm -rf "$tmp"
}
trap cleanup EXIT

installed() {
	dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q '^install ok installed$'
}
for p in flowbulk nf-flow-bulk-dkms; do
	! installed "$p" || nfb_cannot_run "$p is installed already"
done
# A module an earlier test copied into updates/ (selftests/lib.sh) is not
# the package's: out of the way.
if nfb_module_loaded; then modprobe -r "$NFB_MODULE"; fi
if [ -e "/lib/modules/$kver/updates/$NFB_MODULE.ko" ]; then
	rm -f "/lib/modules/$kver/updates/$NFB_MODULE.ko"
	depmod -a "$kver"
fi

# What a purge must leave as it was.
snapshot() {
	{
		find /etc /usr/src /usr/libexec /lib/systemd/system /var/lib/dkms \
			"/lib/modules/$kver" /usr/sbin /usr/share/man/man8 \
			/usr/share/bash-completion/completions \
			/var/lib/systemd/deb-systemd-helper-enabled 2>/dev/null
		find /usr/share/doc -maxdepth 1
		[ ! -e /run/flowbulk ] || echo /run/flowbulk
	} | grep -vE '^/var/lib/dkms/mok\.(key|pub)$|^/etc/ld\.so\.cache$' |
		LC_ALL=C sort
}
snapshot >"$tmp/before"
# Every path of both packages, both versions, and which of them exist now
# (directories such as /etc): after the purge no other may exist.
for d in "$deb_dir"/*.deb "$new_dir"/*.deb; do
	dpkg-deb -c "$d" | awk '{ print $6 }' | sed 's,^\./,/,; s,/$,,'
done | grep -v '^/\?$' | LC_ALL=C sort -u >"$tmp/paths"
while read -r p; do
	[ ! -e "$p" ] || echo "$p"
done <"$tmp/paths" >"$tmp/paths.before"

run_exec() { boot_unit_exec "$@"; }

# The topology: client C - router (initial namespace) - server S.
setup_ns C S
ip link add nfbdeb0 type veth peer name eth0 netns "$C"
ip link add nfbdeb1 type veth peer name eth0 netns "$S"
ip addr add 10.71.1.1/24 dev nfbdeb0
ip addr add 10.71.2.1/24 dev nfbdeb1
ip link set nfbdeb0 up
ip link set nfbdeb1 up
ip -n "$C" addr add 10.71.1.2/24 dev eth0
ip -n "$S" addr add 10.71.2.2/24 dev eth0
ip -n "$C" link set eth0 up
ip -n "$S" link set eth0 up
ip -n "$C" route add default via 10.71.1.1
ip -n "$S" route add default via 10.71.2.1
sysctl -qw net.ipv4.ip_forward=1

# A UDP echo server in S, for the whole test.
ip netns exec "$S" python3 -c '
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("0.0.0.0", 7000))
while True:
    d, peer = s.recvfrom(2048)
    s.sendto(d, peer)
' &
echo_pid=$!

# traffic WHAT [stock]: one UDP flow of 300 echoed datagrams through the
# router; every one comes back and the module takes at least 400 of the
# 600 packets the router forwards (the first ones set up the flow); with
# "stock", the module takes none (the stock flowtable forwards).
traffic() {
	local t0 t1 got
	t0=$(boot_taken)
	got=$(ip netns exec "$C" python3 -c '
import socket, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(1)
dst = ("10.71.2.2", 7000)
for _ in range(60):
    s.sendto(b"hello", dst)
    try:
        s.recv(64)
        break
    except socket.timeout:
        pass
time.sleep(0.2)
got = 0
for i in range(300):
    s.sendto(i.to_bytes(4, "big") * 64, dst)
    try:
        s.recv(2048)
        got += 1
    except socket.timeout:
        pass
print(got)
') || got=0
	t1=$(boot_taken)
	echo "# $1: $got of 300 echoed, module took $((t1 - t0)) packets"
	check "$1: every datagram forwarded ($got of 300)" [ "$got" = 300 ]
	if [ "${2:-}" = stock ]; then
		check "$1: the module took nothing ($((t1 - t0)) packets)" [ $((t1 - t0)) = 0 ]
	else
		check "$1: the module took the flow ($((t1 - t0)) packets, at least 400)" \
			[ $((t1 - t0)) -ge 400 ]
	fi
}

attached_ft() { boot_state_is attached inet router ft; }

# ---- install
start=$(date +%s)
if dpkg -i "$deb_dir"/nf-flow-bulk-dkms_*.deb "$deb_dir"/flowbulk_*.deb \
	</dev/null >"$tmp/install.log" 2>&1; then
	log_pass "install: dpkg -i of both packages ($(($(date +%s) - start)) s)"
else
	sed 's/^/# /' "$tmp/install.log"
	find /var/lib/dkms/"$NFB_MODULE" -name make.log -exec sed 's/^/# make.log: /' {} \; 2>/dev/null
	log_fail "install: dpkg -i of both packages"
	exit "$ksft_fail"
fi
version=$(dpkg-query -W -f='${Version}' flowbulk)
check "install: dkms built and installed $NFB_MODULE $version for $kver" \
	bash -c "dkms status -m $NFB_MODULE -v $version -k $kver | grep -q installed"
check "install: modinfo finds the DKMS module, version $version" \
	bash -c "modinfo -n $NFB_MODULE | grep -q /updates/dkms/ && [ \"\$(modinfo -F version $NFB_MODULE)\" = $version ]"
check "install: flowbulk -V is $version" bash -c "flowbulk -V | grep -qF 'flowbulk $version '"
check "install: flowbulk.service enabled (sysinit.target.wants)" \
	[ -L /etc/systemd/system/sysinit.target.wants/flowbulk.service ]
check "install: conffiles registered" \
	bash -c "dpkg-query -W -f='\${Conffiles}' flowbulk | grep -q /etc/flowbulk/attach.conf"
check "install: the module is not loaded" bash -c "! [ -d /sys/module/$NFB_MODULE ]"
verify() {
	if systemd-analyze verify "$unit" >"$tmp/verify.log" 2>&1 && ! grep -q . "$tmp/verify.log"; then
		return 0
	fi
	sed 's/^/# verify: /' "$tmp/verify.log"
	return 1
}
check "install: systemd-analyze verify flowbulk.service (no message)" verify
check "install: flowbulk.service runs after nftables.service, is part of it" \
	bash -c "grep -qx 'After=nftables.service.*' $unit && grep -qx 'PartOf=nftables.service' $unit &&
		grep -qx 'ReloadPropagatedFrom=nftables.service' $unit"

# ---- boot
[ ! -e /etc/nftables.conf ] || cp -a /etc/nftables.conf "$tmp/nftables.conf.orig"
boot_ruleset /etc/nftables.conf router nfbdeb0 nfbdeb1
echo 'inet router ft' >>/etc/flowbulk/attach.conf
systemctl enable nftables.service
boot_units_dir "$tmp/units" "$nft_unit" "$unit"
boot_check_started "$tmp/units"
check "boot: the module is loaded" nfb_module_loaded
check "boot: inet router ft attached, no command typed" attached_ft
traffic boot

# ---- reload
nft list ruleset >"$tmp/ruleset.0"
check "reload: nft -f /etc/nftables.conf by hand" nft -f /etc/nftables.conf
check "reload: by hand, inet router ft stale (nft made another flowtable)" \
	boot_state_is stale inet router ft
traffic "reload by hand" stock
check "reload: systemctl reload nftables" boot_systemctl reload nftables.service
check "reload: flowbulk.service reloaded too, active" boot_unit_becomes flowbulk.service active
check "reload: inet router ft attached" attached_ft
traffic "systemctl reload nftables"

# A flowtable the ruleset lacks: the reload fails, visibly, and changes
# neither the ruleset nor the attachment there is.
cp /etc/flowbulk/attach.conf "$tmp/attach.conf"
echo 'inet router missing' >>/etc/flowbulk/attach.conf
nft list ruleset >"$tmp/ruleset.1"
if boot_systemctl reload flowbulk.service >"$tmp/failed.log" 2>&1; then
	log_fail "failed attach: systemctl reload flowbulk succeeded"
	ret=1
else
	sed 's/^/# /' "$tmp/failed.log"
	log_pass "failed attach: systemctl reload flowbulk fails"
fi
nft list ruleset >"$tmp/ruleset.2"
check "failed attach: the ruleset is unchanged" cmp -s "$tmp/ruleset.1" "$tmp/ruleset.2"
check "failed attach: inet router ft still attached" attached_ft
cp "$tmp/attach.conf" /etc/flowbulk/attach.conf

# systemd halts: the units stop (flowbulk.service detaches and unloads
# the module it loaded, nftables.service flushes the ruleset).
check "halt: systemd halted (halt.target, not killed)" boot_systemd_stop
check "halt: detached, the module unloaded" bash -c "! [ -d /sys/module/$NFB_MODULE ]"
check "halt: the ruleset flushed" bash -c "[ -z \"\$(nft list ruleset)\" ]"
check "restart: nftables.service ExecStart" run_exec "$nft_unit" Start
check "restart: flowbulk.service ExecStart" run_exec "$unit" Start
check "restart: inet router ft attached" attached_ft

systemctl disable nftables.service

# ---- upgrade
old_srcversion=$(cat "/sys/module/$NFB_MODULE/srcversion")
old_version=$(cat "/sys/module/$NFB_MODULE/version")
if ! ls "$new_dir"/flowbulk_*.deb >/dev/null; then
	log_fail "upgrade: no packages of the next version in $new_dir"
	exit "$ksft_fail"
fi
# The next version's module, prebuilt: where dkms's common.postinst loads
# a package's prebuilt modules from, so that DKMS installs it instead of
# compiling. dh_dkms's postinst names that directory after the DKMS module,
# not the Debian package: /usr/share/NAME-dkms/NAME-VERSION.dkms.tar.gz
# (nf_flow_bulk-dkms, with underscores); anywhere else dkms compiles.
next_version=$(dpkg-deb -f "$new_dir"/nf-flow-bulk-dkms_*.deb Version)
share=/usr/share/$NFB_MODULE-dkms
prebuilt_sum=
if [ -n "$next_dkms" ]; then
	[ -d "$share" ] || created_share=1
	mkdir -p "$share"
	cp "$next_dkms" "$share/$NFB_MODULE-$next_version.dkms.tar.gz"
	mkdir "$tmp/next"
	tar -xzf "$next_dkms" -C "$tmp/next"
	ko=$(find "$tmp/next" -name "$NFB_MODULE.ko*" | head -n 1)
	# The file, not srcversion (the same sources give the same one): the
	# host's build carries the host's signing key, a build here the guest's.
	prebuilt_sum=$(sha256sum <"$ko")
	echo "# upgrade: the module $next_version prebuilt (${ko##*/})"
fi
start=$(date +%s)
if dpkg -i "$new_dir"/nf-flow-bulk-dkms_*.deb "$new_dir"/flowbulk_*.deb \
	</dev/null >"$tmp/upgrade.log" 2>&1; then
	log_pass "upgrade: dpkg -i of the next version ($(($(date +%s) - start)) s)"
else
	sed 's/^/# /' "$tmp/upgrade.log"
	log_fail "upgrade: dpkg -i of the next version"
	exit "$ksft_fail"
fi
new_version=$(dpkg-query -W -f='${Version}' flowbulk)
check "upgrade: $version -> $new_version" [ "$new_version" != "$version" ]
if [ -n "$next_dkms" ]; then
	check "upgrade: DKMS installed the prebuilt module" \
		[ "$(sha256sum <"$(modinfo -n "$NFB_MODULE")")" = "$prebuilt_sum" ]
	rm -f "$share/$NFB_MODULE-$next_version.dkms.tar.gz"
	[ -z "${created_share:-}" ] || rmdir "$share"
fi
check "upgrade: dkms built $new_version for $kver, $version is gone" \
	bash -c "dkms status -m $NFB_MODULE -v $new_version -k $kver | grep -q installed &&
		! dkms status -m $NFB_MODULE -v $version | grep -q ."
check "upgrade: the old module ($old_version) still loaded and attached" \
	bash -c "[ \"\$(cat /sys/module/$NFB_MODULE/version)\" = $old_version ]"
check "upgrade: inet router ft still attached" attached_ft
traffic "during the upgrade"
# systemd restarts the unit from the postinst (deb-systemd-invoke restart):
# stop, then start.
check "upgrade: flowbulk.service ExecStop (restart)" run_exec "$unit" Stop
check "upgrade: flowbulk.service ExecStart (restart)" run_exec "$unit" Start
check "upgrade: the new module ($new_version) is loaded" \
	bash -c "[ \"\$(cat /sys/module/$NFB_MODULE/version)\" = $new_version ] &&
		[ \"\$(cat /sys/module/$NFB_MODULE/srcversion)\" != $old_srcversion ]"
check "upgrade: inet router ft attached" attached_ft
traffic "after the upgrade"

# ---- purge
check "purge: flowbulk.service ExecStop (prerm)" run_exec "$unit" Stop
check "purge: stop detached and unloaded the module it loaded" \
	bash -c "! [ -d /sys/module/$NFB_MODULE ]"
if dpkg --purge flowbulk nf-flow-bulk-dkms </dev/null >"$tmp/purge.log" 2>&1; then
	log_pass "purge: dpkg --purge of both packages"
else
	sed 's/^/# /' "$tmp/purge.log"
	log_fail "purge: dpkg --purge of both packages"
	ret=1
fi
# The test's /etc/nftables.conf goes back as it was, to compare with the
# start.
rm -f /etc/nftables.conf
[ ! -e "$tmp/nftables.conf.orig" ] || cp -a "$tmp/nftables.conf.orig" /etc/nftables.conf
snapshot >"$tmp/after"
while read -r p; do
	[ ! -e "$p" ] || echo "$p"
done <"$tmp/paths" >"$tmp/paths.after"
if diff -u "$tmp/paths.before" "$tmp/paths.after" >"$tmp/paths.diff"; then
	log_pass "purge: no path of the packages left ($(wc -l <"$tmp/paths") paths, $(wc -l <"$tmp/paths.before") there before)"
else
	sed 's/^/# /' "$tmp/paths.diff"
	log_fail "purge: paths of the packages left behind"
	ret=1
fi
if diff -u "$tmp/before" "$tmp/after" >"$tmp/diff"; then
	log_pass "purge: no file left behind ($(wc -l <"$tmp/after") paths compared)"
else
	sed 's/^/# /' "$tmp/diff"
	log_fail "purge: files differ from before the install"
	ret=1
fi
check "purge: no DKMS entry" bash -c "! dkms status -m $NFB_MODULE | grep -q ."
check "purge: $NFB_MODULE gone from the modprobe database" \
	bash -c "! modinfo -n $NFB_MODULE >/dev/null 2>&1"
check "purge: no attached flowtable, the module not loaded" bash -c "! [ -d /sys/module/$NFB_MODULE ]"
exit "$ret"
