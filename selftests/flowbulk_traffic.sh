#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# A router programmed only with flowbulk forwards a TCP transfer intact, and
# the module takes its packets: nf_flow_bulk's counters move, and `stats -j`
# still agrees with /proc/net/stat/nf_flow_bulk afterwards.
#
#   client (10.0.1.2) c0 <-> r1 [router] r2 <-> s0 (10.0.2.2) server
set -eu
# shellcheck source=selftests/lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=tools/testing/lib/flowbulk.sh
source "$NFB_LIB/flowbulk.sh"

nfb_require_tool ip jq socat ss cmp

fb_start -t -u
nfb_install_module

client="" router="" server=""  # set by setup_ns
setup_ns client router server
ip link add c0 netns "$client" type veth peer name r1 netns "$router"
ip link add s0 netns "$server" type veth peer name r2 netns "$router"
ip -n "$client" addr add 10.0.1.2/24 dev c0
ip -n "$router" addr add 10.0.1.1/24 dev r1
ip -n "$router" addr add 10.0.2.1/24 dev r2
ip -n "$server" addr add 10.0.2.2/24 dev s0
for spec in "$client c0" "$router r1" "$router r2" "$server s0"; do
	read -r n dev <<<"$spec"
	ip -n "$n" link set "$dev" up
done
ip -n "$client" route add default via 10.0.1.1
ip -n "$server" route add default via 10.0.2.1
ip netns exec "$router" sysctl -qw net.ipv4.ip_forward=1

fb() { ip netns exec "$router" "$FLOWBULK" "$@"; }

fb table add inet fw
fb flowtable add inet fw ft hook early_ingress devices r1,r2
fb offload add inet fw ft proto tcp
fb stats reset

head -c 4000000 /dev/urandom >"$tmp/sent"
ip netns exec "$server" socat -u TCP-LISTEN:5001,reuseaddr OPEN:"$tmp/received",creat,trunc &
server_pid=$!
listening() { ip netns exec "$server" ss -ltn | grep -q ':5001 '; }
busywait 5000 listening || { log_fail "server did not listen"; exit "$ksft_fail"; }
timeout 120 ip netns exec "$client" socat -u OPEN:"$tmp/sent" TCP:10.0.2.2:5001
wait "$server_pid"

intact() { cmp -s "$tmp/sent" "$tmp/received"; }
check "4 MB TCP transfer through the flowbulk-programmed router is intact" intact

packets_taken() {
	local packets
	packets=$(fb -j stats | jq '.stats.total.packets')
	echo "nf_flow_bulk took $packets packets"
	[ "$packets" -gt 0 ]
}
check "nf_flow_bulk took the flow's packets" packets_taken

check "stats -j totals equal /proc/net/stat/nf_flow_bulk after traffic" nfb_stats_agree "$router"

fb -s stats
exit "$ret"
