#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Control plane: the genl family autoloads the module, attach / list /
# detach work per namespace, every bad request is refused with the right
# errno and an extack message, unprivileged callers are refused, a
# namespace attaches at most max_attachments flowtables, sysctls reject bad
# values, /proc/net/stat/nf_flow_bulk has one row per CPU and
# statistics reset.
set -eu
# shellcheck source=selftests/lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=tools/testing/lib/fastpath.sh
source "$NFB_LIB/fastpath.sh"

nfb_require_tool ip nft python3 setpriv

# shellcheck disable=SC2317 # called through the EXIT trap
cleanup() {
	cleanup_all_ns
	if nfb_module_loaded; then nfb_unload_module; fi
	fp_cleanup_tmp
}
trap cleanup EXIT
fp_tmpdir

# expect_err ERRNO "extack substring" ARGS...: nfb_genl.py in $R must fail
# with ERRNO and print the kernel's message.
expect_err() {
	local want=$1 msg=$2 out
	shift 2
	if out=$(fp_genl "$R" "$@" 2>&1); then
		log_fail "'$*' succeeded, expected $want"
		ret=1
		return
	fi
	case "$out" in
	*"error: $want "*"$msg"*) log_pass "'$*' refused: $out" ;;
	*) log_fail "'$*': expected $want '$msg', got: $out"; ret=1 ;;
	esac
}

nfb_install_module
setup_ns R O
ip link add r0 netns "$R" type veth peer name o0 netns "$O"
ip link add r1 netns "$R" type veth peer name o1 netns "$O"
for d in r0 r1; do ip -n "$R" link set "$d" up; done
fp_ruleset -N -l none
fp_ruleset -T ip -t fp2 -F ft2 -p 10 -d r0 -N -l none

# The first request loads the module through its genl family alias.
check "empty list (module autoloaded)" \
	test "$(fp_genl "$R" list)" = "[]"
check "module loaded by family alias" nfb_module_loaded

# A sweep every 2 s in this test (sweep_interval, the host root's knob,
# 64 s by default): the nft update below waits for one.
set_sweep() {
	echo "$1" 2>/dev/null >"/sys/module/$NFB_MODULE/parameters/sweep_interval"
}
check "sweep_interval=0 refused" eval '! set_sweep 0'
check "sweep_interval=3601 refused" eval '! set_sweep 3601'
check "sweep_interval=2 accepted" set_sweep 2

expect_err ENOENT "no such flowtable" attach inet fp nope
expect_err ENOENT "no such flowtable" attach ip fp ft
expect_err EINVAL "family must be" attach 7 fp ft
expect_err EINVAL "empty table name" attach inet "" ft
# Missing attribute, reply-only attribute, unknown attribute (strict policy).
expect_err EINVAL "are required" raw 1 1:u32:1 2:str:fp
expect_err EINVAL "" raw 1 1:u32:1 2:str:fp 3:str:ft 4:u32:5
expect_err EINVAL "" raw 1 1:u32:1 2:str:fp 3:str:ft 99:u32:5
# A table name longer than nft allows.
expect_err ERANGE "" raw 1 1:u32:1 2:str:"$(printf 'x%.0s' $(seq 300))" 3:str:ft

check "attach inet fp ft" fp_genl "$R" attach inet fp ft
expect_err EEXIST "already attached" attach inet fp ft
check "attach ip fp2 ft2 (second flowtable on r0)" fp_genl "$R" attach ip fp2 ft2

list=$(fp_genl "$R" list)
check "list shows both attachments with devices and priorities" python3 -c '
import json, sys
a = {x["table"]: x for x in json.loads(sys.argv[1])}
assert sorted(a["fp"]["devices"]) == ["r0", "r1"], a
assert a["fp"]["priority"] == 0 and "hook_priority" not in a["fp"], a
assert a["fp2"]["devices"] == ["r0"] and a["fp2"]["family"] == 2, a
assert a["fp2"]["priority"] == 10, a
' "$list"

# Another namespace sees neither the flowtables nor the attachments.
check "other netns: empty list" test "$(fp_genl "$O" list)" = "[]"
if out=$(fp_genl "$O" attach inet fp ft 2>&1); then
	log_fail "attach from another netns succeeded"
	ret=1
else
	log_pass "attach from another netns refused: $out"
fi

# Unprivileged callers are refused on every command.
genl_unpriv=$(fp_unpriv_copy "${FP_GENL[0]}" "$FP_GENL_SPEC")
for cmd in list stats reset "attach inet fp ft" "detach inet fp ft"; do
	# shellcheck disable=SC2086 # word splitting of $cmd is intended
	if out=$(ip netns exec "$R" setpriv --reuid=65534 --regid=65534 \
		--clear-groups --inh-caps=-all python3 "$genl_unpriv" $cmd 2>&1); then
		log_fail "unprivileged '$cmd' succeeded"
		ret=1
	else
		case "$out" in
		*EPERM*) log_pass "unprivileged '$cmd' refused with EPERM" ;;
		*) log_fail "unprivileged '$cmd': $out"; ret=1 ;;
		esac
	fi
done

check "detach ip fp2 ft2" fp_genl "$R" detach ip fp2 ft2
expect_err ENOENT "not attached" detach ip fp2 ft2

# A flowtable of 300 devices: nf_tables takes at most 256 per request, so
# it is created with 255 and grows by an update. Every device gets the
# module's hook (an earlier module stopped at 256, silently).
for i in $(seq 0 299); do echo "link add d$i type dummy"; done >"$FP_TMP/big.ip"
ip -n "$R" -b "$FP_TMP/big.ip"
big_devs() { seq -f "d%g" "$1" "$2" | paste -sd, -; }
ip netns exec "$R" nft "add table inet big"
ip netns exec "$R" nft "add flowtable inet big ft { hook ingress priority 5; devices = { $(big_devs 0 254) }; }"
ip netns exec "$R" nft "add flowtable inet big ft { hook ingress priority 5; devices = { $(big_devs 255 299) }; }"
check "300-device flowtable: nft lists 300 devices" test "$(ip netns exec "$R" nft -j list flowtable inet big ft |
	python3 -c 'import json,sys; print(len(json.load(sys.stdin)["nftables"][1]["flowtable"]["dev"]))')" = 300
check "attach inet big ft (300 devices)" fp_genl "$R" attach inet big ft
check "300-device flowtable: hooked on every device" python3 -c '
import json, sys
a = [x for x in json.loads(sys.argv[1]) if x["table"] == "big"]
assert len(a) == 1, a
devs = a[0]["devices"]
assert sorted(devs) == sorted("d%d" % i for i in range(300)), (len(devs), devs[-3:])
' "$(fp_genl "$R" list)"
check "detach inet big ft" fp_genl "$R" detach inet big ft
ip netns exec "$R" nft delete table inet big

# A device added to an attached flowtable by an nft update changes no hook
# list the module's hooks are on, so no packet asks for a rescan: the
# sweep (every 64 s by default, every 2 s here) walks every attachment and
# finds it. Within 20 s: a sweep_interval not applied fails.
ip netns exec "$R" nft "add table inet grow; add flowtable inet grow ft { hook ingress priority 7; devices = { d0 }; }"
check "attach inet grow ft (d0)" fp_genl "$R" attach inet grow ft
ip netns exec "$R" nft "add flowtable inet grow ft { hook ingress priority 7; devices = { d1 }; }"
grown() {
	fp_genl "$R" list | python3 -c 'import json, sys
a = [x for x in json.load(sys.stdin) if x["table"] == "grow"]
sys.exit(0 if sorted(a[0]["devices"]) == ["d0", "d1"] else 1)'
}
check "device added by an nft update: hooked within a sweep" busywait 20000 grown
check "detach inet grow ft" fp_genl "$R" detach inet grow ft
ip netns exec "$R" nft delete table inet grow

# A namespace attaches at most max_attachments flowtables (each one costs
# every rescan a walk under RTNL): the host sets it, range-checked.
param=/sys/module/nf_flow_bulk/parameters/max_attachments
check "max_attachments defaults to 64" test "$(cat "$param")" = 64
for bad in 0 4097 -1 x; do
	check "max_attachments=$bad refused" eval "! echo $bad >$param 2>/dev/null"
done
# inet fp ft is attached: two more fit under 3.
check "max_attachments=3 accepted" eval "echo 3 >$param"
# A device sits in one flowtable per table: a table each.
for i in 1 2 3; do
	echo "add table ip cap$i"
	echo "add flowtable ip cap$i c { hook ingress priority 0; devices = { r1 }; }"
done | ip netns exec "$R" nft -f -
check "attach ip cap1 c (two of three)" fp_genl "$R" attach ip cap1 c
check "attach ip cap2 c (three of three)" fp_genl "$R" attach ip cap2 c
expect_err ENOSPC "too many flowtables attached in this namespace" attach ip cap3 c
ip netns exec "$O" nft "add table ip capo; add flowtable ip capo c { hook ingress priority 0; devices = { o1 }; }"
check "another namespace attaches while this one is at its cap" fp_genl "$O" attach ip capo c
fp_genl "$O" detach ip capo c >/dev/null
ip netns exec "$O" nft delete table ip capo
check "detach ip cap1 c" fp_genl "$R" detach ip cap1 c
check "attach ip cap3 c once one went" fp_genl "$R" attach ip cap3 c
check "max_attachments=64 again" eval "echo 64 >$param"
for i in 2 3; do fp_genl "$R" detach ip cap$i c >/dev/null; done
ip netns exec "$R" nft "delete table ip cap1; delete table ip cap2; delete table ip cap3"

# Sysctls: per netns, range-checked.
sc() { ip netns exec "$R" sysctl -qw "net.netfilter.$1" 2>/dev/null; }
check "nf_flow_bulk_enable=0 accepted" sc nf_flow_bulk_enable=0
check "nf_flow_bulk_enable=1 accepted" sc nf_flow_bulk_enable=1
check "nf_flow_bulk_enable=2 refused" eval '! sc nf_flow_bulk_enable=2'
check "nf_flow_bulk_max=0 refused" eval '! sc nf_flow_bulk_max=0'
check "nf_flow_bulk_max=257 refused" eval '! sc nf_flow_bulk_max=257'
check "nf_flow_bulk_max=-1 refused" eval '! sc nf_flow_bulk_max=-1'
check "nf_flow_bulk_max=32 accepted" sc nf_flow_bulk_max=32
check "nf_flow_bulk_max reads back 32" \
	test "$(ip netns exec "$R" sysctl -n net.netfilter.nf_flow_bulk_max)" = 32
check "other netns keeps its default" \
	test "$(ip netns exec "$O" sysctl -n net.netfilter.nf_flow_bulk_max)" = 64

# /proc/net/stat/nf_flow_bulk: a header and one row per possible CPU.
possible=$(python3 -c '
s = open("/sys/devices/system/cpu/possible").read().strip()
n = 0
for part in s.split(","):
    a, _, b = part.partition("-")
    n += int(b or a) - int(a) + 1
print(n)')
rows=$(ip netns exec "$R" cat /proc/net/stat/nf_flow_bulk | wc -l)
check "/proc/net/stat/nf_flow_bulk: header + $possible rows" \
	test "$rows" -eq $((possible + 1))
check "/proc header names packets first" eval \
	"ip netns exec '$R' head -n1 /proc/net/stat/nf_flow_bulk | grep -q '^packets  bulks '"
cpus=$(fp_genl "$R" stats | python3 -c \
	'import json,sys; print(len(json.load(sys.stdin)["cpus"]))')
check "GET_STATS dumps one message per possible CPU ($cpus)" \
	test "$cpus" -eq "$possible"

# Packets on an attached device with the module disabled are counted as
# declined, then a reset zeroes the counters.
sc nf_flow_bulk_enable=0
ip -n "$O" link set o0 up
ip -n "$O" addr add 192.0.2.2/24 dev o0
ip -n "$R" addr add 192.0.2.1/24 dev r0
busywait 30000 ip netns exec "$O" ping -c1 -W1 -q 192.0.2.1 >/dev/null
check "disabled: packets counted as declined" \
	test "$(fp_stat "$R" 't["decline"]["disabled"]')" -gt 0
ip -n "$O" link set o0 down
check "reset stats" fp_genl "$R" reset
check "counters zero after reset" \
	test "$(fp_stat "$R" 'sum(t["decline"].values()) + t["packets"]')" -eq 0
sc nf_flow_bulk_enable=1

check "detach inet fp ft" fp_genl "$R" detach inet fp ft
check "list empty after detach" test "$(fp_genl "$R" list)" = "[]"

# Attachments go away with their namespace.
check "re-attach before namespace deletion" fp_genl "$R" attach inet fp ft
cleanup_all_ns
nfb_unload_module
check "module unloads" eval '! nfb_module_loaded'
exit "$ret"
