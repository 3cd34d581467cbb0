#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The test library's core: kselftest exit codes, result lines, waits, the
# module's installation in the guest, namespaces. Sourced (through
# selftests/lib.sh) by every selftests/*.sh test, which runs as root inside
# the guest started by tools/vm/run, and by the benchmark's guest scripts.
# Everything the selftests and tools/bench share lives in this directory
# (tools/testing/lib); nothing here sources selftests/ or tools/bench/.
#
# Exit codes follow kselftest: 0 pass, 1 fail, 4 skip. Under CI=true a test
# that cannot run (missing tool, missing kernel feature) fails instead of
# skipping: CI must never go green by running nothing.

# shellcheck disable=SC2034 # the ksft_* codes are for the tests that source us
ksft_pass=0
ksft_fail=1
ksft_skip=4

NFB_LIB=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
NFB_REPO=$(cd "$NFB_LIB/../../.." && pwd)
NFB_MODULE=nf_flow_bulk
NS_LIST=()

# Print a result line in the format netdev CI and our runner read.
log_pass() { printf 'PASS: %s\n' "$*"; }
log_fail() { printf 'FAIL: %s\n' "$*" >&2; }

# The test cannot run here: skip, or fail under CI.
nfb_cannot_run() {
	if [ "${CI:-}" = true ]; then
		printf 'FAIL: cannot run under CI: %s\n' "$*" >&2
		exit "$ksft_fail"
	fi
	printf 'SKIP: %s\n' "$*"
	exit "$ksft_skip"
}

nfb_require_tool() {
	local tool
	for tool in "$@"; do
		command -v "$tool" >/dev/null 2>&1 ||
			nfb_cannot_run "$tool is not installed (tools/setup installs it)"
	done
}

# Run "$@" every 50 ms until it succeeds or TIMEOUT_MS pass. The clock is
# bash's own $EPOCHREALTIME (microseconds once the point is taken out), not
# a date process: under TCG each process costs about 0.15 s, on every poll
# of every wait.
busywait() {
	local timeout_ms=$1
	shift
	local start now
	start=${EPOCHREALTIME/[.,]/}
	while true; do
		"$@" && return 0
		now=${EPOCHREALTIME/[.,]/}
		[ $(((now - start) / 1000)) -lt "$timeout_ms" ] || return 1
		sleep 0.05
	done
}

# nfb_file_has FILE STRING: FILE has a line that contains STRING; plain
# bash, no process, for the polls of busywait (tcpdump's "listening on").
nfb_file_has() {
	local line
	[ -r "$1" ] || return 1
	while IFS= read -r line || [ -n "$line" ]; do
		[[ "$line" != *"$2"* ]] || return 0
	done <"$1"
	return 1
}

# Make the module we built for the running kernel loadable with modprobe
# (and by genl family alias): copy it and the modprobe database made on the
# host by tools/vm/mkmoddb into the guest's overlay /lib/modules.
# NFB_KMOD_DIR overrides where the build for this kernel is (an experiment's
# build tree, say); it holds module/nf_flow_bulk.ko and moddb/.
# NFB_MODULE_INSTALLED=1: the module is installed already (DKMS or make
# install, selftests/nfb_install_dkms.sh): load that one, copy nothing.
# NFB_UNPROVEN_KERNEL=1 loads the module on a kernel it is not proven on:
# its unproven_kernel parameter, in a modprobe.d file, so that every load
# gets it, the kernel's on demand (the genl family alias, nft's hook
# early_ingress) as the tests' own. tools/check runs the kernel's own
# nft_flowtable.sh so on the newest kernel's guest, after
# nfb_kernel_gate.sh (which takes the file away) has seen a plain load
# refuse. In the VM /etc is on the guest's tmpfs overlay.
NFB_UNPROVEN_CONF=/etc/modprobe.d/nf-flow-bulk-unproven.conf
nfb_install_module() {
	local kver build
	if [ "${NFB_UNPROVEN_KERNEL:-0}" = 1 ]; then
		echo "options $NFB_MODULE unproven_kernel=1" >"$NFB_UNPROVEN_CONF"
	fi
	[ "${NFB_MODULE_INSTALLED:-}" != 1 ] || return 0
	kver=$(uname -r)
	build=${NFB_KMOD_DIR:-$NFB_REPO/build/kmod/$kver}
	[ -f "$build/module/$NFB_MODULE.ko" ] ||
		{ log_fail "module not built for $kver (make module KVER=$kver)"; exit "$ksft_fail"; }
	mkdir -p "/lib/modules/$kver/updates"
	cp "$build/module/$NFB_MODULE.ko" "/lib/modules/$kver/updates/"
	cp "$build"/moddb/modules.* "/lib/modules/$kver/"
}

nfb_load_module() {
	nfb_install_module
	modprobe "$NFB_MODULE" "$@"
}

nfb_unload_module() {
	modprobe -r "$NFB_MODULE"
}

nfb_module_loaded() {
	[ -d "/sys/module/$NFB_MODULE" ]
}

# setup_ns VAR... creates one network namespace per VAR with a unique name,
# stores the name in VAR and brings its loopback up.
setup_ns() {
	local var name
	for var in "$@"; do
		name="$var-$(mktemp -u XXXXXX)"
		ip netns add "$name" || return 1
		ip -n "$name" link set lo up || return 1
		ip netns exec "$name" sysctl -qw net.ipv4.conf.all.rp_filter=0
		ip netns exec "$name" sysctl -qw net.ipv4.conf.default.rp_filter=0
		NS_LIST+=("$name")
		printf -v "$var" '%s' "$name"
	done
}

cleanup_all_ns() {
	local ns
	for ns in "${NS_LIST[@]}"; do
		ip netns pids "$ns" 2>/dev/null | xargs -r kill 2>/dev/null
		ip netns del "$ns" 2>/dev/null
	done
	NS_LIST=()
}

# check WHAT COMMAND...: one assertion. A failure is reported and recorded
# in ret (the test's exit status: exit "$ret" at the end); the test goes on.
ret=0
check() {
	local what=$1
	shift
	if "$@"; then
		log_pass "$what"
	else
		log_fail "$what"
		ret=1
	fi
}
