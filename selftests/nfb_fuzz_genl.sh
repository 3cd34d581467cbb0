#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Fuzz the nf_flow_bulk generic netlink family (nfb_fuzz_genl.py):
#   - fixed malformed requests, each with the answer it must get: strict
#     validation on every command (genlmsghdr.reserved != 0 and unknown
#     attributes refused with EINVAL), bad families, lengths, strings,
#     nesting, framing, unknown commands, do vs dump flags;
#   - seeded random and mutated requests, bounded in count and time: each
#     one gets a clean answer (an ACK, a known error, a dump ending in
#     DONE) or, for what the netlink core ignores by design (a message
#     longer than its datagram, no NLM_F_REQUEST...), none, and the socket
#     still answers;
#   - callers without CAP_NET_ADMIN over the namespace (nobody, root without
#     the capability, root of a child user namespace): every request is
#     refused and nothing is carried out (statistics not reset);
#   - root of a user namespace with its own network namespace: the random
#     requests again, acting on that namespace only;
#   - a dump of an attachment too big for one dump message (112 devices,
#     255-character names) through a fresh socket: listed or an error,
#     never left out silently;
# and afterwards: nothing new in the kernel log but rate-limited netlink
# attribute warnings (counted), the module still loaded, the attachment
# that was there still there and nothing else attached, and an attach and
# a statistics dump still work.
#
# NFB_FUZZ_SEED (default 1) seeds the random requests; NFB_FUZZ_COUNT and
# NFB_FUZZ_TIME bound the main random run (20000 requests, 20 s).
# Long under TCG on a busy host (up to ~280 s seen):
# nfb-timeout: 600
set -eu
# shellcheck source=selftests/lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=tools/testing/lib/fastpath.sh
source "$NFB_LIB/fastpath.sh"

nfb_require_tool ip nft python3 setpriv unshare dmesg

seed=${NFB_FUZZ_SEED:-1}
count=${NFB_FUZZ_COUNT:-20000}
secs=${NFB_FUZZ_TIME:-20}
fuzz=("$NFB_REPO/selftests/nfb_fuzz_genl.py")

# shellcheck disable=SC2317 # called through the EXIT trap
cleanup() {
	cleanup_all_ns
	if nfb_module_loaded; then nfb_unload_module; fi
	fp_cleanup_tmp
	if [ "$ret" != 0 ]; then
		echo "INFO: seed $seed; reproduce with:" \
			"tools/vm/run --kernel $(uname -r) -- env NFB_FUZZ_SEED=$seed" \
			"NFB_FUZZ_COUNT=$count selftests/run_guest.sh nfb_fuzz_genl.sh"
	fi
}
trap cleanup EXIT
fp_tmpdir
# The fuzzer runs as nobody too: a copy it can open wherever the tree is.
fuzz=("$(fp_unpriv_copy "${fuzz[0]}" "${FP_GENL[0]}" "$FP_GENL_SPEC" "$NFB_LIB/nfb_test.py")")

echo "INFO: NFB_FUZZ_SEED=$seed NFB_FUZZ_COUNT=$count NFB_FUZZ_TIME=$secs"

# fuzz_in NS COUNT SECONDS SEED [WRAPPER...] -- MODE ARGS...: the fuzzer in
# namespace NS, under the wrapper words (setpriv, unshare) if any; its
# PASS/FAIL lines are the test's.
fuzz_in() {
	local ns=$1 n=$2 t=$3 s=$4 wrap=()
	shift 4
	while [ "$1" != -- ]; do
		wrap+=("$1")
		shift
	done
	shift
	if ! ip netns exec "$ns" env NFB_FUZZ_SEED="$s" NFB_FUZZ_COUNT="$n" \
		NFB_FUZZ_TIME="$t" NFB_FUZZ_AVOID=fz "${wrap[@]}" \
		python3 "${fuzz[@]}" "$@"; then
		# Its own FAIL lines say what went wrong, if it got that far.
		log_fail "fuzzer '$*' in $ns (wrapper: ${wrap[*]:-none}) exited with an error"
		ret=1
	fi
}

# declines NS: the total of the module's decline counters in NS.
declines() {
	fp_stat "$1" 'sum(t["decline"].values())'
}

stats_ok() {
	fp_genl "$1" stats >/dev/null
}

# attachments NS: "family table flowtable" per attachment, sorted.
attachments() {
	fp_genl "$1" list | python3 -c '
import json, sys
for a in sorted(json.load(sys.stdin), key=lambda a: a["table"]):
    print(a["family"], a["table"], a["flowtable"])'
}

start=$(date +%s)
# phase WHAT: seconds since the start, to see where the time goes.
phase() {
	echo "INFO: $(($(date +%s) - start)) s: $*"
}

nfb_load_module
dmesg_before=$(dmesg | wc -l)

setup_ns F B
ip -n "$F" link add a0 type veth peer name a1
ip -n "$F" link set a0 up
ip -n "$F" link set a1 up
fp_ruleset -n "$F" -t fz -F fz -d "a0 a1" -N -l none
fp_ruleset -n "$F" -T ip -t fz2 -F fz2 -p 10 -d a0 -N -l none
fp_genl "$F" attach inet fz fz
want_attach=$(attachments "$F")

phase "set up, fixed cases next"
fuzz_in "$F" 0 0 "$seed" -- cases fz fz
phase "random requests next"
fuzz_in "$F" "$count" "$secs" "$seed" -- random

# Counters that an unprivileged reset_stats would zero: frames of an
# unknown ethertype from a1 reach a0's ingress and are declined (not IP).
ip netns exec "$F" python3 - <<-'EOF'
import socket
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind(("a1", 0))
for _ in range(20):
    s.send(b"\xff" * 6 + b"\x02\0\0\0\0\x01" + b"\x88\xb5" + b"x" * 50)
EOF
busywait 10000 test "$(declines "$F")" -ge 20 ||
	{ log_fail "frames on a1 were not counted at a0"; ret=1; }
dc_before=$(declines "$F")
phase "unprivileged callers next"

fuzz_in "$F" 1000 3 "$seed" setpriv --reuid=65534 --regid=65534 \
	--clear-groups --inh-caps=-all --bounding-set=-all -- unpriv
fuzz_in "$F" 1000 3 "$seed" setpriv --inh-caps=-net_admin \
	--bounding-set=-net_admin -- unpriv
# Root of a child user namespace, in a network namespace the initial user
# namespace owns: GENL_UNS_ADMIN_PERM refuses it.
fuzz_in "$F" 1000 3 "$seed" unshare -U -r -- unpriv
dc_after=$(declines "$F")
check "no unprivileged request reset the statistics ($dc_before -> $dc_after declines)" \
	test "$dc_after" -ge "$dc_before"

phase "user namespace next"
# Root of a user namespace with its own network namespace may use the
# family there: the random requests once more, from an unprivileged owner.
fuzz_in "$F" 5000 6 $((seed + 1)) unshare -U -r -n -- random

phase "big dump next"
# An attachment too big for a default-sized dump message.
long_t=$(printf 't%.0s' $(seq 255))
long_f=$(printf 'f%.0s' $(seq 255))
{
	for i in $(seq -w 0 55); do
		echo "link add fzbigdump${i}a type veth peer name fzbigdump${i}b"
	done
} | ip -n "$B" -b -
devs=$(ip -n "$B" -o link show | sed -n 's/^[0-9]*: \(fzbigdump[0-9ab]*\)@.*/\1/p' | paste -sd,)
fp_ruleset -n "$B" -t "$long_t" -F "$long_f" -d "${devs//,/ }" -N -l none
check "attach a flowtable with 112 devices and 255-character names" \
	fp_genl "$B" attach inet "$long_t" "$long_f"
fuzz_in "$B" 0 0 "$seed" -- bigdump "$long_t" "$long_f"

phase "checks after the fuzzing next"
# The module afterwards.
check "module still loaded" nfb_module_loaded
got_attach=$(attachments "$F")
check "attachments unchanged by the fuzzing ('$got_attach')" \
	test "$got_attach" = "$want_attach"
check "attach ip fz2 fz2 still works" fp_genl "$F" attach ip fz2 fz2
check "statistics dump still works" stats_ok "$F"
check "detach ip fz2 fz2 still works" fp_genl "$F" detach ip fz2 fz2

new_log=$(dmesg | tail -n +"$((dmesg_before + 1))")
trouble=$(printf '%s\n' "$new_log" | grep -E 'BUG:|WARNING:|Oops|KASAN|refcount_t:|general protection|ubsan' || true)
check "no kernel trouble in the log${trouble:+: $trouble}" test -z "$trouble"
nattr=$(printf '%s\n' "$new_log" | grep -c -E "netlink: .*attribute type [0-9]+ has an invalid length" || true)
nleft=$(printf '%s\n' "$new_log" | grep -c -E "netlink: [0-9]+ bytes leftover after parsing attributes" || true)
echo "INFO: kernel log: $nattr 'attribute type has an invalid length' and $nleft 'bytes leftover' netlink warnings (rate-limited)"
other=$(printf '%s\n' "$new_log" | grep -v -E "netlink: |^$" || true)
[ -z "$other" ] || printf 'INFO: kernel: %s\n' "$other" | head -n 20

exit "$ret"
