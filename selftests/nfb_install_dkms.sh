#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Installation with DKMS, as an operator does it, for the running kernel:
#   - "make dkms" puts the sources in /usr/src, and dkms builds and installs
#     the module into /lib/modules/KVER/updates/dkms;
#   - modprobe loads that file: modinfo -n names it, and the loaded module's
#     GNU build id (/sys/module/nf_flow_bulk/notes) is the installed file's;
#   - selftests/nfb_forward.sh passes against it (NFB_MODULE_INSTALLED=1:
#     it loads the installed module and copies nothing);
#   - "make dkms-uninstall" (dkms remove --all) leaves nothing behind: the
#     same files under /lib/modules/KVER, /var/lib/dkms and /usr/src as
#     before, and no nf_flow_bulk in the modprobe database.
# The guest's root is an overlay thrown away at shutdown, so nothing of
# this reaches the host. The DKMS build compiles under TCG, over 9p: 22-33
# minutes on a loaded host, so tools/check runs it on its own.
# nfb-timeout: 3300
set -eu
# shellcheck source=selftests/lib.sh
source "$(dirname "$0")/lib.sh"

nfb_require_tool dkms make gcc modprobe modinfo depmod objcopy cmp

kver=$(uname -r)
mods=/lib/modules/$kver
[ -d "$mods/build/include" ] || nfb_cannot_run "no headers for $kver in $mods/build"
version=$(sed -n 's/^#define NFB_VERSION "\(.*\)"/\1/p' "$NFB_REPO/module/main.c")
tmp=$(mktemp -d /tmp/nfb-dkms.XXXXXX)

ret=0
# shellcheck disable=SC2317 # called through the EXIT trap
cleanup() {
	if nfb_module_loaded; then modprobe -r "$NFB_MODULE" || true; fi
	if [ -d "/var/lib/dkms/$NFB_MODULE" ]; then
		dkms remove -m "$NFB_MODULE" -v "$version" --all >/dev/null 2>&1 || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT

# The files an install may touch. depmod rewrites modules.* in place (the
# same names), so their contents are checked by grep below, not here.
# dkms keeps its own signing key in /var/lib/dkms (mok.key, mok.pub) once
# it has made one: that belongs to dkms, not to this package.
snapshot() {
	{
		find "$mods" /var/lib/dkms 2>/dev/null
		find /usr/src -maxdepth 1
	} | grep -vE '^/var/lib/dkms/mok\.(key|pub)$' | LC_ALL=C sort
}

# An earlier test in this guest may have copied the build tree's module
# into updates/ (selftests/lib.sh): start from the kernel's own state.
if [ -e "$mods/updates/$NFB_MODULE.ko" ]; then
	if nfb_module_loaded; then modprobe -r "$NFB_MODULE"; fi
	rm -f "$mods/updates/$NFB_MODULE.ko"
	depmod -a "$kver"
fi
snapshot >"$tmp/before"

start=$(date +%s)
if make -s -C "$NFB_REPO" --no-print-directory dkms KVER="$kver" >"$tmp/dkms.log" 2>&1; then
	log_pass "make dkms: built and installed for $kver in $(($(date +%s) - start)) s"
else
	sed 's/^/# /' "$tmp/dkms.log"
	find "/var/lib/dkms/$NFB_MODULE" -name make.log -exec sed 's/^/# make.log: /' {} \; 2>/dev/null
	log_fail "make dkms for $kver"
	exit "$ksft_fail"
fi
status=$(dkms status -m "$NFB_MODULE" -v "$version" -k "$kver")
case "$status" in
*installed*) log_pass "dkms status: $status" ;;
*) log_fail "dkms status: '$status', expected installed"; ret=1 ;;
esac

path=$(modinfo -n "$NFB_MODULE")
case "$path" in
"$mods/updates/dkms/$NFB_MODULE.ko"*) log_pass "modinfo -n: $path" ;;
*) log_fail "modinfo -n: $path, expected $mods/updates/dkms/$NFB_MODULE.ko*"; ret=1 ;;
esac

# The GNU build id of the installed file (decompressed if dkms compressed
# it as the kernel's own modules are) and of the loaded module.
build_id() {
	local ko=$1
	case "$ko" in
	*.xz) xz -dc "$ko" >"$tmp/m.ko" ;;
	*.zst) zstd -qdc "$ko" >"$tmp/m.ko" ;;
	*) cp "$ko" "$tmp/m.ko" ;;
	esac
	objcopy -O binary --only-section=.note.gnu.build-id "$tmp/m.ko" "$tmp/$2"
}
modprobe "$NFB_MODULE"
build_id "$path" installed.id
cp "/sys/module/$NFB_MODULE/notes/.note.gnu.build-id" "$tmp/loaded.id"
if [ -s "$tmp/loaded.id" ] && cmp -s "$tmp/installed.id" "$tmp/loaded.id"; then
	log_pass "the loaded module is the DKMS-installed file (GNU build id, srcversion $(cat "/sys/module/$NFB_MODULE/srcversion"))"
else
	log_fail "the loaded module's build id differs from $path"
	ret=1
fi
tree_ko=$NFB_REPO/build/kmod/$kver/module/$NFB_MODULE.ko
if [ -f "$tree_ko" ]; then
	build_id "$tree_ko" tree.id
	cmp -s "$tmp/tree.id" "$tmp/loaded.id" &&
		echo "INFO: the build tree's $NFB_MODULE.ko has the same build id (identical builds)"
fi
modprobe -r "$NFB_MODULE"

if NFB_MODULE_INSTALLED=1 "$(dirname "$0")/nfb_forward.sh" >"$tmp/forward.log" 2>&1; then
	grep -E '^(PASS|FAIL|SKIP):' "$tmp/forward.log" | sed 's/^/# nfb_forward: /'
	log_pass "nfb_forward.sh against the DKMS module"
else
	sed 's/^/# nfb_forward: /' "$tmp/forward.log"
	log_fail "nfb_forward.sh against the DKMS module"
	ret=1
fi
if nfb_module_loaded; then modprobe -r "$NFB_MODULE"; fi

if make -s -C "$NFB_REPO" --no-print-directory dkms-uninstall KVER="$kver" >"$tmp/remove.log" 2>&1; then
	log_pass "make dkms-uninstall"
else
	sed 's/^/# /' "$tmp/remove.log"
	log_fail "make dkms-uninstall"
	ret=1
fi
snapshot >"$tmp/after"
if diff -u "$tmp/before" "$tmp/after" >"$tmp/diff"; then
	log_pass "dkms remove left no file behind ($(wc -l <"$tmp/after") paths compared)"
else
	sed 's/^/# /' "$tmp/diff"
	log_fail "files differ after dkms remove"
	ret=1
fi
if grep -ls "$NFB_MODULE" "$mods"/modules.dep "$mods"/modules.alias "$mods"/modules.order; then
	log_fail "$NFB_MODULE still in the modprobe database"
	ret=1
elif modinfo -n "$NFB_MODULE" >/dev/null 2>&1; then
	log_fail "modinfo still finds $NFB_MODULE"
	ret=1
else
	log_pass "$NFB_MODULE gone from the modprobe database"
fi
exit "$ret"
