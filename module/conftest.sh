#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Feature probes against the target kernel's headers, run by module/Kbuild:
#   conftest.sh OUTPUT CC CFLAGS...
# Each probe is a few lines of C compiled (-fsyntax-only) with the flags the
# kernel's own objects get; a probe that compiles defines NFB_HAVE_<NAME> in
# OUTPUT, which compat.h reads. Distribution kernels backport, so the probes
# look for what the code needs, never at version numbers. Every probe names
# the upstream commit that introduced what it looks for. The probes run in
# parallel: together they take about as long as compiling one source file.
set -eu

out=$1
cc=$2
shift 2

tmp=$(mktemp -d "${TMPDIR:-/tmp}/nfb-conftest.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# probe NAME CFLAGS...: the C of probe NAME is on stdin.
probe() {
	name=$1
	shift
	cat >"$tmp/$name.c"
	# $cc stays unquoted: it may be a command with arguments (ccache gcc).
	# shellcheck disable=SC2086
	if $cc "$@" -Werror=implicit-function-declaration \
		-Werror=incompatible-pointer-types -fsyntax-only \
		"$tmp/$name.c" >"$tmp/$name.log" 2>&1; then
		echo "#define NFB_HAVE_$name 1" >"$tmp/$name.h"
	else
		echo "/* #undef NFB_HAVE_$name */" >"$tmp/$name.h"
	fi
}

# 58caed3dacb4 ("netdev: reshuffle netif_napi_add() APIs to allow dropping
# weight", 6.1): the oldest interface the module uses. Required.
probe NAPI_ADD_WEIGHT "$@" <<'EOF' &
#include <linux/netdevice.h>
void *nfb_probe = netif_napi_add_weight;
EOF

# d457a0e329b0 ("net: move gso declarations and functions to their own
# files", 6.5)
probe NET_GSO_H "$@" <<'EOF' &
#include <net/gso.h>
EOF

# b26230a1a3fb ("net: create a dummy net_device allocator", 6.10)
probe ALLOC_NETDEV_DUMMY "$@" <<'EOF' &
#include <linux/netdevice.h>
void *nfb_probe = alloc_netdev_dummy;
EOF

# Not a feature: the kernels the module is proven on (compat.h,
# NFB_KERNEL_PROVEN): the whole selftest suite passes on 6.1, 6.12 and
# 7.2. Debian's 7.3 is a release candidate (Documentation/kernels.rst).
probe KERNEL_PROVEN "$@" <<'EOF' &
#include <linux/version.h>
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 13, 0) && \
	(LINUX_VERSION_CODE < KERNEL_VERSION(7, 2, 0) || \
	 LINUX_VERSION_CODE >= KERNEL_VERSION(7, 3, 0))
#error "not proven on this kernel"
#endif
EOF

# e420bed02507 ("bpf: Add fd-based tcx multi-prog infra with link support",
# 6.6): dev->tcx_egress replaces dev->miniq_egress.
probe TCX_EGRESS "$@" <<'EOF' &
#include <linux/netdevice.h>
int nfb_probe = sizeof(((struct net_device *)0)->tcx_egress);
EOF

# bfa858f220ab ("sysctl: Add size to register_net_sysctl function", 6.6)
probe REGISTER_NET_SYSCTL_SZ "$@" <<'EOF' &
#include <net/net_namespace.h>
void *nfb_probe = register_net_sysctl_sz;
EOF

# 8f84780b84d6 ("netfilter: flowtable: allow unidirectional rules", 6.3,
# backported to 6.1.y) gave flow_offload_refresh() its "force" argument.
probe FLOW_OFFLOAD_REFRESH_FORCE "$@" <<'EOF' &
#include <net/netfilter/nf_flow_table.h>
_Static_assert(__builtin_types_compatible_p(typeof(&flow_offload_refresh),
	void (*)(struct nf_flowtable *, struct flow_offload *, bool)), "");
EOF

# NF_FLOW_CLOSING (after 6.12; e622d94ec73f by git blame): a FIN or RST no
# longer tears the flow down, it marks it closing, and a SYN on a closing
# flow tears it down and goes to the slow path (nf_flow_state_check()).
probe FLOW_CLOSING "$@" <<'EOF' &
#include <net/netfilter/nf_flow_table.h>
int nfb_probe = NF_FLOW_CLOSING;
EOF

# ab427db17885 / d30301ba4b07 ("netfilter: flowtable: Add IPIP rx / tx sw
# acceleration", 6.19): a flow that entered or leaves through an IPIP
# tunnel has its tunnel in the tuple (tun_num), and the stock hook pops or
# pushes the outer header itself, which the module does not (compat.h).
probe FLOW_TUPLE_TUN "$@" <<'EOF' &
#include <net/netfilter/nf_flow_table.h>
int nfb_probe = sizeof(((struct flow_offload_tuple *)0)->tun);
EOF

# The outer header's protocol field of a tunnelled tuple (IPPROTO_IPIP,
# IPPROTO_IPV6) is flow_offload_tunnel.l3_proto in 6.19 to 7.2 and
# inner_proto from 7.3 on: the same values under another name (read in
# Debian's 7.2.13 source, nf_flow_table_ip.c, and 7.3~rc7's headers).
probe FLOW_TUN_INNER_PROTO "$@" <<'EOF' &
#include <net/netfilter/nf_flow_table.h>
int nfb_probe = sizeof(((struct flow_offload_tuple *)0)->tun.inner_proto);
EOF

# b5964aac51e0 ("netfilter: flowtable: consolidate xmit path", 6.19): the
# stock hook transmits a NEIGH flow on the real device behind its VLAN /
# PPPoE device (flow_offload_tuple.ifidx), and the next two commits of the
# series (c653d5a78f34, 18d27bed0880) push the flow's VLAN / PPPoE header
# there, inline; the module then does the same (compat.h). The push itself
# is in nf_flow_table_ip.c, out of a probe's reach; this member is the
# header change it cannot come without.
probe FLOW_XMIT_REAL_DEV "$@" <<'EOF' &
#include <net/netfilter/nf_flow_table.h>
int nfb_probe = sizeof(((struct flow_offload_tuple *)0)->ifidx);
EOF

# b2a38f6df9da ("net_sched: make room for (struct qdisc_skb_cb)->pkt_segs",
# 6.19): the qdisc's part of the control block carries the packet's
# segment count next to its length (bytes 4..5), which bstats_update() and
# cake read instead of skb_shinfo(); __dev_queue_xmit() sets both
# (qdisc_pkt_len_segs_init(), 874c1928d372).
probe QDISC_PKT_SEGS "$@" <<'EOF' &
#include <net/sch_generic.h>
int nfb_probe = sizeof(((struct qdisc_skb_cb *)0)->pkt_segs);
EOF

# The full polled grace-period state (get_state_synchronize_rcu_full(),
# 6.2; in Debian's 6.1 too) is struct rcu_gp_oldstate up to 6.x and
# struct rcu_gp_seq in the 7.3 headers (flowcache.c reads it per lookup).
probe RCU_GP_SEQ "$@" <<'EOF' &
#include <linux/rcupdate.h>
void nfb_probe(struct rcu_gp_seq *s)
{
	get_state_synchronize_rcu_full(s);
}
EOF

wait

{
	echo "/* Generated by module/conftest.sh; do not edit. */"
	for f in "$tmp"/*.h; do
		cat "$f"
	done
} >"$out.tmp"

# A kernel without the required interface fails here, with the reason,
# rather than with a compiler error in the middle of the module.
if ! grep -q '^#define NFB_HAVE_NAPI_ADD_WEIGHT' "$out.tmp"; then
	echo "nf_flow_bulk needs Linux 6.1 or later (no netif_napi_add_weight):" >&2
	sed 's/^/  /' "$tmp/NAPI_ADD_WEIGHT.log" >&2
	rm -f "$out.tmp"
	exit 1
fi
mv "$out.tmp" "$out"
