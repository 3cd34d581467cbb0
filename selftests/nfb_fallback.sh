#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# TCP teardown and transmit fallbacks with the module attached:
#   - TCP FIN and RST: declined (counted), the flow is torn down;
#   - a qdisc and a tc egress hook on the output: every byte delivered,
#     the per-packet fallback counted.
set -eu
# shellcheck source=selftests/lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=selftests/lib_fastpath.sh
source "$(dirname "$0")/lib_fastpath.sh"

nfb_require_tool ip nft python3 socat tc conntrack cmp

ret=0
# shellcheck disable=SC2317 # called through the EXIT trap
cleanup() {
	cleanup_all_ns
	fp_cleanup_tmp
	if nfb_module_loaded; then nfb_unload_module; fi
}
trap cleanup EXIT

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

# No offloaded conntrack entry for TCP destination port $1 on the router.
# shellcheck disable=SC2317 # called through busywait
not_offloaded() {
	! ip netns exec "$R" conntrack -L -p tcp --dport "$1" 2>/dev/null |
		grep -q OFFLOAD
}

# decline / fallback counter of the module
dc() { fp_stat "$R" "t[\"decline\"][\"$1\"]"; }
fb() { fp_stat "$R" "t[\"fallback\"][\"$1\"]"; }

nfb_load_module
fp_topology
fp_tmpdir
fp_ruleset 0 0
fp_genl "$R" attach inet fp ft

# TCP: FIN tears the flow down (the stock hook does it once we decline).
fp_make_file "$FP_TMP/in" 1
d0=$(dc tcp_flags)
check "tcp transfer" fp_tcp_copy 10.0.2.1 "$FP_TMP/in" "$FP_TMP/out"
check "tcp data identical" cmp -s "$FP_TMP/in" "$FP_TMP/out"
check "tcp FIN declined (tcp_flags)" test "$(dc tcp_flags)" -gt "$d0"
check "tcp flow no longer offloaded after FIN" busywait 15000 not_offloaded 5201

# RST: an abortive close (SO_LINGER 0) on an offloaded connection.
ip netns exec "$S" socat -u TCP4-LISTEN:5203,reuseaddr /dev/null &
busywait 30000 fp_listening "$S" 5203
d0=$(dc tcp_flags)
ip netns exec "$C" python3 - <<-'EOF'
import socket, struct, time
s = socket.create_connection(("10.0.2.1", 5203))
for _ in range(50):
    s.send(b"y" * 1000)
    time.sleep(0.01)
s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
s.close()
EOF
check "tcp RST declined (tcp_flags)" \
	busywait 10000 eval "[ \"\$(dc tcp_flags)\" -gt $d0 ]"
check "tcp flow no longer offloaded after RST" busywait 15000 not_offloaded 5203

# A qdisc on the output: per-packet dev_queue_xmit, nothing lost.
ip netns exec "$R" tc qdisc replace dev r1 root pfifo
f0=$(fb qdisc)
check "tcp through a qdisc" fp_tcp_copy 10.0.2.1 "$FP_TMP/in" "$FP_TMP/out"
check "qdisc: data identical" cmp -s "$FP_TMP/in" "$FP_TMP/out"
check "qdisc: fallback counted ($(($(fb qdisc) - f0)))" test "$(fb qdisc)" -gt $((f0 + 50))
ip netns exec "$R" tc qdisc del dev r1 root

# A tc egress hook on the output (root stays noqueue).
ip netns exec "$R" tc qdisc add dev r1 clsact
ip netns exec "$R" tc filter add dev r1 egress matchall action ok
f0=$(fb egress_hook)
check "tcp through a tc egress hook" fp_tcp_copy 10.0.2.1 "$FP_TMP/in" "$FP_TMP/out"
check "egress hook: data identical" cmp -s "$FP_TMP/in" "$FP_TMP/out"
check "egress hook: fallback counted ($(($(fb egress_hook) - f0)))" \
	test "$(fb egress_hook)" -gt $((f0 + 50))
ip netns exec "$R" tc qdisc del dev r1 clsact

fp_genl "$R" detach inet fp ft
exit "$ret"
