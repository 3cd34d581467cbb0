#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Transmit queue choice as the stack's. The router's output device has four
# transmit queues under mq (a pfifo_fast per queue, which the module's list
# path passes by while empty and counts in) and XPS maps CPU 0 to queue 2
# and CPU 1 to queue 3. Flows forwarded on CPU 0 must leave on queue 2,
# with the stock flowtable (dev_queue_xmit()) and with the module alike.
set -eu
# shellcheck source=selftests/lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=selftests/lib_fastpath.sh
source "$(dirname "$0")/lib_fastpath.sh"

nfb_require_tool ip nft tc python3 taskset

# shellcheck disable=SC2317 # called through the EXIT trap
cleanup() {
	cleanup_all_ns
	if nfb_module_loaded; then nfb_unload_module; fi
}
trap cleanup EXIT

[ "$(nproc)" -ge 2 ] || nfb_cannot_run "needs two CPUs"

nfb_load_module
setup_ns C R S
ip link add c0 netns "$C" type veth peer name r0 netns "$R"
ip link add s0 netns "$S" numtxqueues 4 numrxqueues 4 type veth \
	peer name r1 netns "$R" numtxqueues 4 numrxqueues 4
fp_addresses
ip netns exec "$R" tc qdisc replace dev r1 root handle 1: mq
ip netns exec "$R" sh -c 'echo 1 >/sys/class/net/r1/queues/tx-2/xps_cpus &&
	echo 2 >/sys/class/net/r1/queues/tx-3/xps_cpus &&
	echo 0 >/sys/class/net/r1/queues/tx-0/xps_cpus &&
	echo 0 >/sys/class/net/r1/queues/tx-1/xps_cpus'
fp_ruleset 0 0
fp_echo_start 7000

# Packets sent on each of r1's transmit queues: "q0 q1 q2 q3".
txq_packets() {
	ip netns exec "$R" tc -s -j qdisc show dev r1 | python3 -c '
import json, sys
n = [0] * 4
for q in json.load(sys.stdin):
    p = q.get("parent", "")
    if q["kind"] != "mq" and p.startswith("1:"):
        n[int(p[2:], 16) - 1] = q["packets"]
print(*n)'
}

# flows_on_cpu0 COUNT: COUNT UDP flows (source ports 42000...), 20 echoed
# datagrams each, sent from CPU 0 so the router forwards them on CPU 0.
flows_on_cpu0() {
	ip netns exec "$C" taskset -c 0 python3 - "$1" <<-'EOF'
	import socket, sys
	for i in range(int(sys.argv[1])):
	    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
	    s.bind(("0.0.0.0", 42000 + i))
	    s.settimeout(0.5)
	    for _ in range(20):
	        s.sendto(b"q" * 100, ("10.0.2.1", 7000))
	        try:
	            s.recv(2048)
	        except OSError:
	            pass
	EOF
}

for who in stock module; do
	[ "$who" = module ] && fp_genl "$R" attach inet fp ft
	# Offload the flows first, then count what the offloaded packets do.
	flows_on_cpu0 8
	read -r a0 a1 a2 a3 <<<"$(txq_packets)"
	t0=$(fp_stat "$R" 't["packets"]')
	flows_on_cpu0 8
	read -r b0 b1 b2 b3 <<<"$(txq_packets)"
	t1=$(fp_stat "$R" 't["packets"]')
	q2=$((b2 - a2))
	other=$((b0 - a0 + b1 - a1 + b3 - a3))
	check "$who: offloaded flows leave on CPU 0's XPS queue ($q2 on tx-2, $other elsewhere)" \
		test "$q2" -ge 150 -a "$other" -le 2
	if [ "$who" = module ]; then
		check "module: it took them ($((t1 - t0)))" test $((t1 - t0)) -ge 150
	fi
done

fp_genl "$R" detach inet fp ft
exit "$ret"
