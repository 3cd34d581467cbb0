#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Programs of the unstable chroot that tools/newkernel makes (xdp-tools'
# xdp-forward, whose flowtable mode bookworm's 1.3 lacks), run on a host or
# guest whose root is bookworm's: the chroot's programs need its own
# libraries. Sourced by tools/bench/icount/guest.sh and tools/bench/four-hosts/node.sh.

sid_root=${NFB_NEWKERNEL_ROOT:-/var/lib/nf-flow-bulk}/sid

# sid_exec NS COMMAND...: COMMAND of the chroot, in network namespace NS
# (ip netns; - for the caller's), with NS's sysfs, the caller's /proc and
# /dev, and the caller's bpffs: libxdp attaches a dispatcher and the
# program to it by a link pinned there, which lasts only as long as the
# pin, so the bpffs must outlive the command (one of its own would go with
# the command's mount namespace, and the dispatcher would pass every
# packet).
# shellcheck disable=SC2016 # the inner script expands its own arguments
sid_exec() {
	local ns=$1 enter=()
	shift
	mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf
	[ "$ns" = - ] || enter=(nsenter --net="/run/netns/$ns")
	"${enter[@]}" unshare -m --propagation private -- bash -c '
		set -eu
		r=$1
		shift
		mount --rbind /proc "$r/proc"
		mount -t sysfs sysfs "$r/sys"
		mount --bind /sys/fs/bpf "$r/sys/fs/bpf"
		mount --rbind /dev "$r/dev"
		exec chroot "$r" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin "$@"
	' sid_exec "$sid_root" "$@"
}
