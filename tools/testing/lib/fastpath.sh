#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Helpers for the datapath selftests (sourced after nfb.sh).
#
# Topology made by fp_topology:
#
#   $C (client)  c0 --- r0  $R (router, flowtable ft on r0 r1)  r1 --- s0  $S (server)
#   10.0.1.1/24            10.0.1.254         10.0.2.254              10.0.2.1/24
#   fd00:1::1/64           fd00:1::fe         fd00:2::fe              fd00:2::1/64

FP_DIR=$NFB_LIB
# shellcheck source=tools/testing/lib/proc.sh
source "$NFB_LIB/proc.sh"
FP_GENL=("$FP_DIR/nfb_genl.py")
# The netlink spec nfb_genl.py reads its numbers and names from.
# shellcheck disable=SC2034 # for the tests that copy nfb_genl.py
FP_GENL_SPEC=$FP_DIR/../../../Documentation/netlink/nf_flow_bulk.yaml
FP_TMP=

fp_tmpdir() {
	FP_TMP=$(mktemp -d /tmp/nfb-fp.XXXXXX)
}

fp_cleanup_tmp() {
	[ -z "$FP_TMP" ] || rm -rf "$FP_TMP"
}

# fp_unpriv_copy FILE [MODULE...]: print the path of a copy of FILE that
# any user can read, with copies of the Python MODULEs it imports (and of
# the netlink spec, FP_GENL_SPEC, which nfb_genl.py reads) beside it
# (after fp_tmpdir; they go with FP_TMP). The work tree may sit where
# other users cannot reach it (a clone under /root, or in a mktemp -d
# directory: mode 0700), and a script run as nobody would then fail on
# opening itself, not on the refusal the test looks for.
fp_unpriv_copy() {
	local d=$FP_TMP/unpriv
	mkdir -p "$d"
	chmod 0755 "$FP_TMP" "$d"
	install -m 0644 "$@" "$d/"
	echo "$d/${1##*/}"
}

# nfb_genl.py (this directory) in namespace $1. Without site (-S): it needs the standard
# library only, and site's path setup costs about 0.1 s per start under TCG.
fp_genl() {
	local ns=$1
	shift
	ip netns exec "$ns" python3 -S "${FP_GENL[@]}" "$@"
}

# fp_kernel_pushes_encap: true on kernels (6.19 on) whose stock hook pushes
# the egress VLAN / PPPoE header itself on the real device, and so does the
# module there (it probes this at build time, FLOW_XMIT_REAL_DEV in
# module/conftest.sh). Told from the kernel's version: a flow into a PPPoE
# session is DIRECT there, NEIGH before; and the unresolved neighbour
# (nfb_route.sh).
fp_kernel_pushes_encap() {
	local major rest minor
	major=$(uname -r | cut -d. -f1)
	rest=$(uname -r | cut -d. -f2)
	minor=${rest%%[!0-9]*}
	[ "$major" -gt 6 ] || { [ "$major" -eq 6 ] && [ "$minor" -ge 19 ]; }
}

# fp_kernel_flow_closing: true on kernels (7.x) whose flowtable marks a TCP
# flow closing on FIN or RST (NF_FLOW_CLOSING) instead of tearing it down,
# and tears it down on a SYN that comes while it is closing. Read from the
# kernel's own type information (the BTF of nf_flow_table, loaded by then),
# not from the module, which probes this at build time (FLOW_CLOSING in
# module/conftest.sh) and must agree.
fp_kernel_flow_closing() {
	grep -qa NF_FLOW_CLOSING /sys/kernel/btf/nf_flow_table
}

# fp_stream_recv NS ADDR PORT: nfb_encap.py's receiver of a numbered stream
# in NS, until its end marker; its verdict goes to $FP_TMP/verdict.PORT.
# It is ready when its socket is bound: it says so in a file (verdict.PORT.ready),
# which busywait polls without starting a process (an ss per poll slowed
# the Python start-up it waited for).
fp_stream_recv() {
	rm -f "$FP_TMP/verdict.$3" "$FP_TMP/verdict.$3.ready"
	ip netns exec "$1" python3 "$FP_DIR/nfb_encap.py" recv "$2" "$3" "$FP_TMP/verdict.$3" &
	busywait 30000 test -e "$FP_TMP/verdict.$3.ready"
}

# fp_stream_verdict PORT EXPECTED: the receiver on PORT got EXPECTED
# datagrams, unique, in order, intact (the verdict is printed). Read by
# bash, not by a JSON parser: a Python start-up per stream was a tenth of
# the stream tests' time under TCG. nfb_encap.py writes the verdict on one
# line, its keys in this order.
fp_stream_verdict() {
	local f=$FP_TMP/verdict.$1 v
	busywait 30000 test -s "$f" || { echo "no verdict on port $1"; return 1; }
	read -r v <"$f" || true
	echo "INFO: $v"
	[[ "$v" == "{\"got\": $2, \"in_order\": true, \"unique\": true, \"intact\": true, "* ]]
}

# fp_stream NAME NS SRC DST PORT N: nfb_encap.py's sender in NS sends N
# numbered datagrams from SRC to DST:PORT, on CPU 0 (one CPU of the router
# receives them, so the flow has an order to keep: veth hands a packet to
# the backlog of the CPU that sends it), then the check that the receiver
# (fp_stream_recv) got them all, intact, in order. Fails, reported, when
# the sender got no echo from the receiver.
fp_stream() {
	local name=$1 ns=$2 src=$3 dst=$4 port=$5 n=$6
	if ! ip netns exec "$ns" taskset -c 0 python3 "$FP_DIR/nfb_encap.py" send "$src" "$dst" "$port" "$n"; then
		log_fail "$name: no echo from the receiver"
		# shellcheck disable=SC2034 # nfb.sh's test status
		ret=1
		return 1
	fi
	check "$name: $n datagrams arrived complete, intact, in order" fp_stream_verdict "$port" "$n"
}

# fp_stat NS EXPR: one number from 'nfb_genl.py stats' (a python expression
# over t = the totals), e.g. fp_stat "$R" 't["packets"]'.
fp_stat() {
	ip netns exec "$1" python3 -S -c "
import sys
sys.dont_write_bytecode = True
sys.path.insert(0, '$FP_DIR')
import nfb_genl
t = nfb_genl.stats(nfb_genl.Genl())['total']
print($2)"
}

fp_topology() {
	setup_ns C R S
	ip link add c0 netns "$C" type veth peer name r0 netns "$R"
	ip link add s0 netns "$S" type veth peer name r1 netns "$R"
	fp_addresses
}

# fp_topology_virtio: the same with the virtio-net NIC pairs of
# tools/vm/run --nics 2 (pair 0: c0 - r0, pair 1: r1 - s0).
# fp_virtio_release puts the NICs back, under their own names: a deleted
# namespace returns a physical device to the initial one under the name it
# had there (r0, s0...), where it would clash with the next test's veths.
FP_VIRTIO_MOVED=()
fp_topology_virtio() {
	local nic=$NFB_REPO/tools/vm/nic dev pair end ns name
	setup_ns C R S
	for pair in "0 1 $C c0" "0 2 $R r0" "1 1 $R r1" "1 2 $S s0"; do
		read -r pair end ns name <<<"$pair"
		dev=$("$nic" "$pair" "$end")
		ip link set "$dev" netns "$ns"
		ip -n "$ns" link set "$dev" name "$name"
		FP_VIRTIO_MOVED+=("$ns $name $dev")
	done
	fp_addresses
}

fp_virtio_release() {
	local moved ns name dev
	for moved in "${FP_VIRTIO_MOVED[@]}"; do
		read -r ns name dev <<<"$moved"
		if ip -n "$ns" link set "$name" down 2>/dev/null &&
			ip -n "$ns" link set "$name" netns 1; then
			ip link set "$name" name "$dev" 2>/dev/null || true
		fi
	done
	FP_VIRTIO_MOVED=()
}

fp_addresses() {
	ip -n "$C" addr add 10.0.1.1/24 dev c0
	ip -n "$C" addr add fd00:1::1/64 dev c0 nodad
	ip -n "$R" addr add 10.0.1.254/24 dev r0
	ip -n "$R" addr add fd00:1::fe/64 dev r0 nodad
	ip -n "$R" addr add 10.0.2.254/24 dev r1
	ip -n "$R" addr add fd00:2::fe/64 dev r1 nodad
	ip -n "$S" addr add 10.0.2.1/24 dev s0
	ip -n "$S" addr add fd00:2::1/64 dev s0 nodad
	ip -n "$C" link set c0 up
	ip -n "$R" link set r0 up
	ip -n "$R" link set r1 up
	ip -n "$S" link set s0 up
	ip -n "$C" route add default via 10.0.1.254
	ip -n "$C" -6 route add default via fd00:1::fe
	ip -n "$S" route add default via 10.0.2.254
	ip -n "$S" -6 route add default via fd00:2::fe
	ip netns exec "$R" sysctl -qw net.ipv4.ip_forward=1
	ip netns exec "$R" sysctl -qw net.ipv6.conf.all.forwarding=1
	busywait 30000 ip netns exec "$C" ping -c1 -W1 -q 10.0.2.1 >/dev/null ||
		{ log_fail "topology: no IPv4 connectivity"; return 1; }
	busywait 30000 ip netns exec "$C" ping -6 -c1 -W1 -q fd00:2::1 >/dev/null ||
		{ log_fail "topology: no IPv6 connectivity"; return 1; }
}

# fp_ruleset [OPTION...] [PRIORITY [MASQ]]: in $R, table inet "fp" with
# flowtable "ft" (hook ingress, priority PRIORITY, default 0) on r0 r1 with
# counter, and a forward chain "fwdchain" that offloads TCP and UDP and
# counts what it sees; MASQ=1 adds masquerade on r1 (IPv4 and IPv6). Every
# test's flowtable ruleset is made here; the options say how it differs:
#   -n NS        the namespace (default $R)
#   -T FAMILY    the table's family (inet)
#   -t TABLE     the table's name (fp)
#   -F NAME      the flowtable's name (ft)
#   -H HOOK      the flowtable's hook (ingress; early_ingress only with -o,
#                for flowbulk -f: stock nft rejects it)
#   -p PRIO      the flowtable's priority (as PRIORITY)
#   -d "DEV..."  the flowtable's devices (r0 r1)
#   -N           no counter on the flowtable
#   -l L4        what fwdchain offloads: "{ tcp, udp }" (default), "udp"...;
#                none: no fwdchain
#   -K           no counter rule in fwdchain
#   -s TEXT      more of the table (a chain of its own), repeatable
#   -f           flush the namespace's ruleset first, in the same transaction
#   -w FILE      write the ruleset to FILE too, and load it from there
#   -o FILE      write the ruleset to FILE only, load nothing
fp_ruleset() {
	local ns=${R:-} family=inet table=fp ft=ft hook=ingress prio=0 devs="r0 r1"
	local ftcounter=" counter;" l4="{ tcp, udp }" fwdcounter=counter flush=''
	local write='' only='' opt text extra=() OPTIND=1
	while getopts "n:T:t:F:H:p:d:Nl:Ks:fw:o:" opt; do
		case "$opt" in
		n) ns=$OPTARG ;;
		T) family=$OPTARG ;;
		t) table=$OPTARG ;;
		F) ft=$OPTARG ;;
		H) hook=$OPTARG ;;
		p) prio=$OPTARG ;;
		d) devs=$OPTARG ;;
		N) ftcounter= ;;
		l) l4=$OPTARG ;;
		K) fwdcounter= ;;
		s) extra+=("$OPTARG") ;;
		f) flush="flush ruleset" ;;
		w) write=$OPTARG ;;
		o) only=$OPTARG ;;
		*) echo "fp_ruleset: bad option" >&2; return 1 ;;
		esac
	done
	shift $((OPTIND - 1))
	prio=${1:-$prio}
	if [ "${2:-0}" = 1 ]; then
		extra+=("chain post { type nat hook postrouting priority srcnat; oifname r1 masquerade; }")
	fi
	text="$flush
table $family $table {
	flowtable $ft { hook $hook priority $prio; devices = { ${devs// /, } };$ftcounter }"
	if [ "$l4" != none ]; then
		text+="
	chain fwdchain {
		type filter hook forward priority filter; policy accept;
		meta l4proto $l4 flow add @$ft
		$fwdcounter
	}"
	fi
	for opt in "${extra[@]}"; do
		text+="
	$opt"
	done
	text+="
}"
	if [ -n "$only" ]; then
		echo "$text" >"$only"
	elif [ -n "$write" ]; then
		echo "$text" >"$write"
		ip netns exec "$ns" nft -f "$write"
	else
		ip netns exec "$ns" nft -f - <<<"$text"
	fi
}

# Packets that went through the forward chain (the slow path).
fp_fwd_packets() {
	fp_nft_counters "$R" chain inet fp fwdchain
}

# fp_nft_counters NS OBJECT...: packets of every counter in 'nft list
# OBJECT' ("counter packets N bytes M"), read with awk: a poll of busywait
# does not start Python (about half a second under TCG).
fp_nft_counters() {
	local ns=$1
	shift
	ip netns exec "$ns" nft list "$@" | awk '
		{ for (i = 1; i + 2 <= NF; i++) if ($i == "counter" && $(i + 1) == "packets") n += $(i + 2) }
		END { print n + 0 }'
}

# Packets received by the router on r0 and r1.
fp_rx_packets() {
	local a b
	a=$(ip netns exec "$R" cat /sys/class/net/r0/statistics/rx_packets)
	b=$(ip netns exec "$R" cat /sys/class/net/r1/statistics/rx_packets)
	echo $((a + b))
}

# fp_snapshot: one line "rx fwd taken nonflow csum" in a single python run
# (python start-up is slow under TCG): router rx packets on r0+r1, packets
# through the forward chain, packets the module took, packets it declined
# as not TCP/UDP (ARP, ND, ICMP), checksum errors counted by C and S.
fp_snapshot() {
	ip netns exec "$R" python3 - "$FP_DIR" "$C" "$S" <<-'EOF'
	import json, subprocess, sys
	sys.dont_write_bytecode = True
	sys.path.insert(0, sys.argv[1])
	import nfb_genl
	rx = sum(int(open("/sys/class/net/%s/statistics/rx_packets" % d).read())
	         for d in ("r0", "r1"))
	fwd = 0
	try:
	    j = json.loads(subprocess.check_output(
	        ["nft", "-j", "list", "chain", "inet", "fp", "fwdchain"]))
	    for o in j["nftables"]:
	        for e in o.get("rule", {}).get("expr", []):
	            if "counter" in e:
	                fwd += e["counter"]["packets"]
	except subprocess.CalledProcessError:
	    pass
	t = nfb_genl.stats(nfb_genl.Genl())["total"]
	nonflow = t["decline"]["not_ip"] + t["decline"]["l4proto"]
	cs = 0
	for ns in sys.argv[2:]:
	    out = subprocess.check_output(["ip", "netns", "exec", ns, "nstat", "-saz"])
	    for line in out.decode().splitlines():
	        f = line.split()
	        if f and "InCsumErrors" in f[0]:
	            cs += int(f[1])
	print(rx, fwd, t["packets"], nonflow, cs)
	EOF
}

# Checksum errors seen by the server's and client's stacks.
fp_csum_errors() {
	local ns n=0 v
	for ns in "$C" "$S"; do
		v=$(ip netns exec "$ns" nstat -saz 2>/dev/null |
			awk '/InCsumErrors/ { s += $2 } END { print s + 0 }')
		n=$((n + v))
	done
	echo "$n"
}

# fp_make_file PATH MB: random content.
fp_make_file() {
	head -c "$(($2 * 1024 * 1024))" /dev/urandom >"$1"
}

# fp_tcp_copy DSTADDR FILE OUT: send FILE from the client to the server over
# TCP (socat), the server writes OUT; waits for the transfer to finish.
fp_tcp_copy() {
	local addr=$1 in=$2 out=$3 port=5201 pid lsn=TCP4-LISTEN
	case "$addr" in
	*:*) lsn=TCP6-LISTEN ;;
	esac
	ip netns exec "$S" socat -u "$lsn:$port,reuseaddr" \
		"OPEN:$out,creat,trunc" &
	pid=$!
	busywait 30000 fp_listening "$S" "$port" || return 1
	case "$addr" in
	*:*) addr="[$addr]" ;;
	esac
	timeout 120 ip netns exec "$C" socat -u "OPEN:$in" "TCP:$addr:$port" ||
		return 1
	timeout 60 tail --pid="$pid" -f /dev/null || return 1
	wait "$pid"
}

fp_listening() {
	ip netns exec "$1" ss -ltnH "sport = :$2" | grep -q .
}

fp_udp_listening() {
	ip netns exec "$1" ss -lunH "sport = :$2" | grep -q .
}

# fp_udp_copy DSTADDR FILE OUT: send FILE as numbered UDP datagrams of 1200
# bytes, paced, the server writes the payloads it received in sequence order
# to OUT. Prints "sent received".
fp_udp_copy() {
	local addr=$1 in=$2 out=$3 port=5202 pid
	ip netns exec "$S" python3 - "$addr" "$port" "$out" <<-'EOF' &
	import socket, struct, sys
	fam = socket.AF_INET6 if ":" in sys.argv[1] else socket.AF_INET
	s = socket.socket(fam, socket.SOCK_DGRAM)
	s.setsockopt(socket.SOL_SOCKET, 33, 8 << 20)  # SO_RCVBUFFORCE
	s.bind(("::" if fam == socket.AF_INET6 else "0.0.0.0", int(sys.argv[2])))
	s.settimeout(60)
	got = {}
	while True:
	    d, peer = s.recvfrom(2048)
	    seq, = struct.unpack("!I", d[:4])
	    if seq == 0xffffffff:
	        break
	    if seq == 0xfffffffe:
	        s.sendto(d, peer)
	        continue
	    got[seq] = d[4:]
	with open(sys.argv[3], "wb") as f:
	    for k in sorted(got):
	        f.write(got[k])
	EOF
	pid=$!
	busywait 30000 fp_udp_listening "$S" "$port" || return 1
	ip netns exec "$C" python3 - "$addr" "$port" "$in" <<-'EOF'
	import socket, struct, sys, time
	fam = socket.AF_INET6 if ":" in sys.argv[1] else socket.AF_INET
	s = socket.socket(fam, socket.SOCK_DGRAM)
	data = open(sys.argv[3], "rb").read()
	dst = (sys.argv[1], int(sys.argv[2]))
	s.settimeout(0.5)
	for _ in range(120):
	    s.sendto(struct.pack("!I", 0xfffffffe), dst)
	    try:
	        s.recv(64)
	        break
	    except socket.timeout:
	        pass
	n = 0
	for off in range(0, len(data), 1200):
	    s.sendto(struct.pack("!I", n) + data[off:off + 1200],
	             (sys.argv[1], int(sys.argv[2])))
	    n += 1
	    if n % 16 == 0:
	        time.sleep(0.001)
	time.sleep(0.5)
	for _ in range(3):
	    s.sendto(struct.pack("!I", 0xffffffff), (sys.argv[1], int(sys.argv[2])))
	EOF
	wait "$pid"
}

# fp_echo_start PORT: UDP echo server in $S on IPv4 and IPv6 (background).
fp_echo_start() {
	ip netns exec "$S" python3 - "$1" <<-'EOF' &
	import select, socket, sys
	port = int(sys.argv[1])
	s4 = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
	s4.bind(("0.0.0.0", port))
	s6 = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
	s6.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
	s6.bind(("::", port))
	while True:
	    for s in select.select([s4, s6], [], [])[0]:
	        try:
	            d, peer = s.recvfrom(65535)
	            s.sendto(d, peer)
	        except OSError:
	            pass
	EOF
	busywait 30000 fp_udp_listening "$S" "$1"
}

# fp_udpc ADDR PORT STEP...: UDP client in $C from source port 40000, so
# that every call uses the same flow. Steps: "send N" (N echoed datagrams
# of 100 bytes), "ttl N" (TTL / hop limit of what follows), "size N",
# "df" (don't fragment). Prints the number of echoes received.
fp_udpc() {
	ip netns exec "$C" python3 - "$@" <<-'EOF'
	import socket, sys, time
	addr, port = sys.argv[1], int(sys.argv[2])
	v6 = ":" in addr
	s = socket.socket(socket.AF_INET6 if v6 else socket.AF_INET,
	                  socket.SOCK_DGRAM)
	s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
	s.bind(("::" if v6 else "0.0.0.0", 40000))
	s.settimeout(0.3)
	size, got = 100, 0
	for step in sys.argv[3:]:
	    op, _, arg = step.partition(" ")
	    if op == "ttl":
	        if v6:
	            s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_UNICAST_HOPS, int(arg))
	        else:
	            s.setsockopt(socket.IPPROTO_IP, socket.IP_TTL, int(arg))
	    elif op == "size":
	        size = int(arg)
	    elif op == "df":
	        if v6:
	            s.setsockopt(socket.IPPROTO_IPV6, 62, 1)  # IPV6_DONTFRAG
	        else:
	            s.setsockopt(socket.IPPROTO_IP, 10, 2)  # IP_PMTUDISC_DO
	    elif op == "send":
	        for _ in range(int(arg)):
	            try:
	                s.sendto(b"x" * size, (addr, port))
	            except OSError:
	                pass
	            try:
	                while True:
	                    s.recv(65535)
	                    got += 1
	                    s.settimeout(0.05)
	            except (socket.timeout, OSError):
	                pass
	            s.settimeout(0.3)
	print(got)
	EOF
}

# fp_nstat NS COUNTER: absolute value of one nstat counter.
fp_nstat() {
	ip netns exec "$1" nstat -saz "$2" | awk -v c="$2" '$1 == c { print $2 }'
}

# fp_flood_start ADDR PORT: background UDP sender in $C (source port 40001),
# about 1000 datagrams a second, until killed (cleanup_all_ns kills it).
fp_flood_start() {
	ip netns exec "$C" python3 - "$1" "$2" <<-'EOF' &
	import socket, sys, time
	addr, port = sys.argv[1], int(sys.argv[2])
	v6 = ":" in addr
	s = socket.socket(socket.AF_INET6 if v6 else socket.AF_INET,
	                  socket.SOCK_DGRAM)
	s.bind(("::" if v6 else "0.0.0.0", 40001))
	s.setblocking(False)
	while True:
	    for _ in range(10):
	        try:
	            s.sendto(b"z" * 200, (addr, port))
	        except OSError:
	            pass
	    try:
	        while True:
	            s.recv(2048)
	    except OSError:
	        pass
	    time.sleep(0.01)
	EOF
	FP_FLOOD_PID=$!
}

fp_flood_stop() {
	[ -z "${FP_FLOOD_PID:-}" ] || kill "$FP_FLOOD_PID" 2>/dev/null || true
	FP_FLOOD_PID=
}

# fp_proc NS COLUMN: counter COLUMN of /proc/net/stat/nf_flow_bulk in
# namespace NS ("packets", "decline_miss", "fallback_neigh", "drop_xmit"...),
# summed over its CPU rows (proc.sh). The same counts as fp_stat's, without
# a Python start (about half a second under TCG), for the polls of busywait.
fp_proc() {
	nfb_proc_get "$1" "$2"
}

# fp_taken NS: packets the module took in namespace NS.
fp_taken() {
	fp_proc "$1" packets
}

# fp_taken_grows N: the module takes at least N more packets within 30 s.
fp_taken_grows() {
	local base
	base=$(fp_taken "$R")
	busywait 30000 fp_taken_above $((base + $1))
}

fp_taken_above() {
	[ "$(fp_taken "$R")" -ge "$1" ]
}
