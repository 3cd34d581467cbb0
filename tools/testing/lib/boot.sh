# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# What flowbulk_boot.sh (flowbulk.service's commands against the build
# tree) and nfb_deb.sh (the packages' whole life) share: the ruleset an
# operator's /etc/nftables.conf holds, the state of an attachment, a unit
# file's commands and the module's packet count. Sourced after lib.sh.
#
# BOOT_NETNS: the namespace these look at (default: the caller's);
# FLOWBULK: the tool (default: flowbulk in PATH).

# boot_in_ns COMMAND...: COMMAND in $BOOT_NETNS.
boot_in_ns() {
	if [ -n "${BOOT_NETNS:-}" ]; then
		ip netns exec "$BOOT_NETNS" "$@"
	else
		"$@"
	fi
}

# boot_ruleset FILE TABLE DEVICE...: a ruleset as nftables.service loads it
# (flush ruleset, then table inet TABLE with flowtable ft at "hook
# ingress" on the DEVICEs and the forward rule that offloads TCP and UDP).
boot_ruleset() {
	local file=$1 table=$2 devices
	shift 2
	devices=$(printf '%s, ' "$@")
	devices=${devices%, }
	cat >"$file" <<EOF
#!/usr/sbin/nft -f
flush ruleset
table inet $table {
	flowtable ft {
		hook ingress priority filter
		devices = { $devices }
	}
	chain forward {
		type filter hook forward priority filter; policy accept;
		meta l4proto { tcp, udp } flow add @ft
	}
}
EOF
}

# boot_state FAMILY TABLE FLOWTABLE: that attachment's state as "flowbulk
# attach list" shows it (attached, waiting, stale); "none" when there is no
# such attachment or the module is not loaded (asking would load it).
boot_state() {
	local state=
	if nfb_module_loaded; then
		state=$(boot_in_ns "${FLOWBULK:-flowbulk}" attach list |
			awk -v f="$1" -v t="$2" -v n="$3" 'NR > 1 && $1 == f && $2 == t && $3 == n { print $4 }')
	fi
	echo "${state:-none}"
}

# boot_state_is STATE FAMILY TABLE FLOWTABLE: for check; says what it is
# otherwise.
boot_state_is() {
	local want=$1 got
	shift
	got=$(boot_state "$@")
	[ "$got" = "$want" ] || { echo "# $*: $got, not $want"; return 1; }
}

# boot_unit_exec UNIT_FILE STEP: the unit's ExecSTEP (Start, Reload, Stop)
# run as systemd runs a one-line command without shell syntax: split at
# blanks, no shell.
boot_unit_exec() {
	local cmd
	cmd=$(sed -n "s/^Exec$2=//p" "$1")
	[ -n "$cmd" ] || { echo "no Exec$2 in $1" >&2; return 1; }
	echo "# $(basename "$1") Exec$2: $cmd"
	# shellcheck disable=SC2086 # a command line without quotes
	boot_in_ns $cmd
}

# boot_taken: the packets the module has taken in $BOOT_NETNS, over every
# CPU (0 when it is not loaded).
boot_taken() {
	local sum=0 i k=-1 header row
	{
		if ! read -r -a header; then
			echo 0
			return
		fi
		for i in "${!header[@]}"; do
			[ "${header[$i]}" != packets ] || k=$i
		done
		while read -r -a row; do
			sum=$((sum + 16#${row[$k]}))
		done
	} < <(boot_in_ns cat /proc/net/stat/nf_flow_bulk 2>/dev/null)
	echo "$sum"
}

# systemd as the init of a boot: PID 1 of a PID, mount and cgroup namespace
# of its own (as systemd-nspawn starts it), in the caller's network
# namespace, on the guest's root and /run. The guest itself boots busybox
# (tools/vm/run), and a real reboot would lose the overlay the packages are
# installed in: this boots systemd on that root instead. It starts
# sysinit.target, where Debian's nftables.service and flowbulk.service are
# WantedBy, from the enable links of /etc/systemd/system (what "systemctl
# enable" and the packages made) and the unit files of UNITS_DIR alone (the
# ones under test, and an empty sysinit.target, so that nothing else of the
# host's boot runs). Its log goes to the kernel log. systemd refuses a
# client of another PID namespace (its credentials carry no PID): systemctl
# runs inside, through boot_systemctl.
BOOT_SYSTEMD_PID=
BOOT_SYSTEMD_PID1=

# boot_systemctl ARGS...: systemctl ARGS in the booted systemd's namespaces.
boot_systemctl() {
	timeout 120 nsenter -t "$BOOT_SYSTEMD_PID1" -p -m systemctl --no-pager "$@"
}

# boot_unit_becomes UNIT STATE: wait (up to 120 s) until systemd has no job
# left and UNIT's ActiveState is STATE: a job another unit's propagates (a
# reload, a stop) may run after the systemctl that caused it has returned.
boot_unit_becomes() {
	local end=$((SECONDS + 120)) state=
	while [ "$SECONDS" -lt "$end" ]; do
		if ! boot_systemctl list-jobs --no-legend 2>/dev/null | grep -q '^ *[0-9]'; then
			state=$(boot_systemctl show -P ActiveState "$1" 2>/dev/null || true)
			[ "$state" != "$2" ] || return 0
		fi
		sleep 0.1
	done
	echo "# $1: $state, not $2"
	return 1
}

# boot_systemd_start UNITS_DIR: boot, and wait until the boot's jobs are done.
boot_systemd_start() {
	local units=$1 end=$((SECONDS + 120))
	mkdir -p /sys/fs/cgroup/nfb-boot
	(
		echo "$BASHPID" >/sys/fs/cgroup/nfb-boot/cgroup.procs
		exec unshare --pid --fork --mount --cgroup --mount-proc --propagation private \
			env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin container=nfb-selftest \
			SYSTEMD_UNIT_PATH="$units:/etc/systemd/system" \
			sh -c 'umount -l /sys/fs/cgroup && mount -t cgroup2 cgroup2 /sys/fs/cgroup &&
				exec /lib/systemd/systemd --unit=sysinit.target --log-target=kmsg \
				--log-level=info --show-status=no'
	) &
	BOOT_SYSTEMD_PID=$!
	while :; do
		BOOT_SYSTEMD_PID1=$(pgrep -P "$BOOT_SYSTEMD_PID" -x systemd || true)
		[ -z "$BOOT_SYSTEMD_PID1" ] || [ ! -S /run/systemd/private ] || break
		if ! kill -0 "$BOOT_SYSTEMD_PID" 2>/dev/null; then
			echo "# systemd exited; the kernel log's last lines:"
			dmesg | tail -n 20 | sed 's/^/# /'
			return 1
		fi
		if [ "$SECONDS" -ge "$end" ]; then
			echo "# systemd's socket not there after 120 s"
			return 1
		fi
		sleep 0.1
	done
	timeout 300 nsenter -t "$BOOT_SYSTEMD_PID1" -p -m systemctl is-system-running --wait || {
		boot_systemctl --failed
		dmesg | grep -E 'systemd|flowbulk|nft' | tail -n 30 | sed 's/^/# /'
		return 1
	}
}

# boot_systemd_stop: halt it as a router halts (halt.target: the units'
# ExecStop run, then systemd-shutdown ends the PID namespace's init) and
# wait until it is gone; fails when it had to be killed. The time limit
# is a deadline, not a count of polls: under TCG a poll costs more than its
# sleep.
boot_systemd_stop() {
	local end=$((SECONDS + 120))
	[ -n "$BOOT_SYSTEMD_PID" ] || return 0
	if [ -n "$BOOT_SYSTEMD_PID1" ]; then
		timeout 30 nsenter -t "$BOOT_SYSTEMD_PID1" -p -m systemctl halt --no-block 2>&1 |
			sed 's/^/# systemctl halt: /' || true
	fi
	while kill -0 "$BOOT_SYSTEMD_PID" 2>/dev/null && [ "$SECONDS" -lt "$end" ]; do
		sleep 0.1
	done
	local halted=0
	if kill -0 "$BOOT_SYSTEMD_PID" 2>/dev/null; then
		# The namespace's PID 1 takes every process of it along.
		echo "# systemd still there after 120 s: killed"
		halted=1
		[ -z "$BOOT_SYSTEMD_PID1" ] || kill -KILL "$BOOT_SYSTEMD_PID1" 2>/dev/null || true
		kill -KILL "$BOOT_SYSTEMD_PID" 2>/dev/null || true
	fi
	wait "$BOOT_SYSTEMD_PID" 2>/dev/null || true
	BOOT_SYSTEMD_PID=
	BOOT_SYSTEMD_PID1=
	rm -rf /run/systemd
	rmdir /sys/fs/cgroup/nfb-boot 2>/dev/null || true
	return "$halted"
}

# boot_units_dir DIR UNIT_FILE...: DIR holds links to the UNIT_FILEs, an
# empty sysinit.target and the host's units of a halt (halt.target and
# what it pulls in: SYSTEMD_UNIT_PATH replaces systemd's search path, so
# without them "systemctl halt" finds no halt.target and nothing stops).
boot_units_dir() {
	local dir=$1 f
	shift
	mkdir -p "$dir"
	printf '[Unit]\nDescription=System Initialization (the units under test only)\n' \
		>"$dir/sysinit.target"
	for f in "$@" /lib/systemd/system/halt.target /lib/systemd/system/systemd-halt.service \
		/lib/systemd/system/shutdown.target /lib/systemd/system/umount.target \
		/lib/systemd/system/final.target; do
		ln -sf "$f" "$dir/"
	done
}

# boot_order_ok FIRST SECOND: SECOND's start began after FIRST was active.
boot_order_ok() {
	local a b
	a=$(boot_systemctl show -P ActiveEnterTimestampMonotonic "$1")
	b=$(boot_systemctl show -P InactiveExitTimestampMonotonic "$2")
	echo "# $1 active at ${a} us, $2 started at ${b} us"
	[ "${a:-0}" -gt 0 ] && [ "${b:-0}" -ge "$a" ]
}

# boot_check_started UNITS-DIR: boot systemd on UNITS-DIR (boot_units_dir)
# and check what every boot test asserts first: systemd reached
# sysinit.target, nftables.service and flowbulk.service are active, and
# flowbulk.service started after nftables.service was.
boot_check_started() {
	local start
	start=$(date +%s%N)
	check "boot: systemd booted sysinit.target" boot_systemd_start "$1"
	echo "# systemd's boot took $((($(date +%s%N) - start) / 1000000)) ms"
	check "boot: nftables.service active" boot_systemctl is-active nftables.service
	check "boot: flowbulk.service active" boot_systemctl is-active flowbulk.service
	check "boot: flowbulk.service started after nftables.service was active" \
		boot_order_ok nftables.service flowbulk.service
}
