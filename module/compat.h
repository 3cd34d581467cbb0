/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The one place where kernel version differences are handled. Fast-path
 * sources include no version checks; they use what this header defines.
 * Every shim names the upstream change behind it.
 */
#ifndef _NF_FLOW_BULK_COMPAT_H
#define _NF_FLOW_BULK_COMPAT_H

/*
 * The NFB_HAVE_* flags come from module/conftest.sh, which module/Kbuild runs
 * first: one small compile test per feature against the target kernel's
 * headers (distribution kernels backport, so versions would lie). It also
 * refuses kernels older than 6.1.
 */

#ifndef __ASSEMBLY__

#include "nfb_config.h"

#include <linux/kconfig.h>
#include <linux/netdevice.h>
#include <linux/slab.h>
#include <net/net_namespace.h>
#include <net/netfilter/nf_flow_table.h>
#include <net/sch_generic.h>

/*
 * d457a0e329b0 ("net: move gso declarations and functions to their own
 * files", 6.5) moved skb_gso_validate_network_len() to <net/gso.h>.
 */
#ifdef NFB_HAVE_NET_GSO_H
#include <net/gso.h>
#endif

/*
 * 8f84780b84d6 ("netfilter: flowtable: allow unidirectional rules", 6.3,
 * in 6.1.y stable too) added "force" to flow_offload_refresh(). Without
 * it, the refresh already behaves as force == false.
 */
#ifndef NFB_HAVE_FLOW_OFFLOAD_REFRESH_FORCE
static inline void __nfb_compat_flow_offload_refresh(struct nf_flowtable *ft,
						     struct flow_offload *flow,
						     bool force)
{
	flow_offload_refresh(ft, flow);
}

#define flow_offload_refresh __nfb_compat_flow_offload_refresh
#endif

#if !IS_ENABLED(CONFIG_NETFILTER_INGRESS)
#error "nf_flow_bulk needs CONFIG_NETFILTER_INGRESS"
#endif

/*
 * Dummy netdev for the NAPI instances. b26230a1a3fb ("net: create a dummy
 * net_device allocator", 6.10) added alloc_netdev_dummy(); before it, a
 * zeroed struct net_device was set up with init_dummy_netdev().
 */
#ifdef NFB_HAVE_ALLOC_NETDEV_DUMMY
static inline struct net_device *nfb_alloc_dummy_netdev(void)
{
	return alloc_netdev_dummy(0);
}

static inline void nfb_free_dummy_netdev(struct net_device *dev)
{
	free_netdev(dev);
}
#else
static inline struct net_device *nfb_alloc_dummy_netdev(void)
{
	struct net_device *dev = kzalloc(sizeof(*dev), GFP_KERNEL);

	if (dev)
		init_dummy_netdev(dev);
	return dev;
}

static inline void nfb_free_dummy_netdev(struct net_device *dev)
{
	kfree(dev);
}
#endif

/*
 * Egress hooks that dev_queue_xmit() runs and the list path would skip.
 * e420bed02507 ("bpf: Add fd-based tcx multi-prog infra with link
 * support", 6.6) replaced dev->miniq_egress by dev->tcx_egress;
 * nf_hooks_egress exists since 42df6e1d221d ("netfilter: Introduce egress
 * hook", 5.16).
 */
static inline bool nfb_dev_has_egress_hooks(const struct net_device *dev)
{
#ifdef NFB_HAVE_TCX_EGRESS
#if IS_ENABLED(CONFIG_NET_XGRESS)
	if (rcu_access_pointer(dev->tcx_egress))
		return true;
#endif
#elif IS_ENABLED(CONFIG_NET_CLS_ACT)
	if (rcu_access_pointer(dev->miniq_egress))
		return true;
#endif
#if IS_ENABLED(CONFIG_NETFILTER_EGRESS)
	if (rcu_access_pointer(dev->nf_hooks_egress))
		return true;
#endif
	return false;
}

/*
 * What __dev_queue_xmit() clears before the egress path; the list path
 * must too. e420bed02507 (6.6, above) moved tc_at_ingress from
 * CONFIG_NET_CLS_ACT to CONFIG_NET_XGRESS.
 */
static inline void nfb_skb_clear_tc_at_ingress(struct sk_buff *skb)
{
#ifdef NFB_HAVE_TCX_EGRESS
#if IS_ENABLED(CONFIG_NET_XGRESS)
	skb->tc_at_ingress = 0;
#endif
#elif IS_ENABLED(CONFIG_NET_CLS_ACT)
	skb->tc_at_ingress = 0;
#endif
}

/*
 * XPS reads the sending CPU from skb->sender_cpu, which shares its bytes
 * with the napi_id a received packet carries: netdev_core_pick_tx() resets
 * it when it is not a CPU, and so must we before netdev_pick_tx().
 */
static inline void nfb_skb_set_sender_cpu(struct sk_buff *skb)
{
#ifdef CONFIG_XPS
	/*
	 * netdev_core_pick_tx() compares with NR_CPUS; NAPI ids start above
	 * it (MIN_NAPI_ID), so for any value a received skb carries the two
	 * tests agree.
	 */
	if (skb->sender_cpu - 1 >= (u32)nr_cpu_ids)
		skb->sender_cpu = raw_smp_processor_id() + 1;
#endif
}

/*
 * What __dev_queue_xmit() leaves in the qdisc's part of the control block
 * for a packet it hands to a qdisc, passed by or enqueued: its length and,
 * since b2a38f6df9da ("net_sched: make room for (struct
 * qdisc_skb_cb)->pkt_segs", 6.19), its segment count, which the qdisc's
 * statistics count packets by and cake splits GSO packets by. Unset, those
 * bytes hold what the receive path left there (GRO's). For a packet that
 * is not GSO: the list path leaves GSO packets to dev_queue_xmit().
 */
static inline void nfb_qdisc_pkt_len_init(struct sk_buff *skb)
{
	qdisc_skb_cb(skb)->pkt_len = skb->len;
#ifdef NFB_HAVE_QDISC_PKT_SEGS
	qdisc_skb_cb(skb)->pkt_segs = 1;
#endif
}

/*
 * bfa858f220ab ("sysctl: Add size to register_net_sysctl function", 6.6)
 * takes the table size; before it a sentinel ended the table. Our tables
 * keep the sentinel and pass the size without it.
 */
#ifdef NFB_HAVE_REGISTER_NET_SYSCTL_SZ
#define nfb_register_net_sysctl(net, path, table, size) \
	register_net_sysctl_sz(net, path, table, size)
#else
#define nfb_register_net_sysctl(net, path, table, size) \
	register_net_sysctl(net, path, table)
#endif

/*
 * Kernels whose stock hook pushes the egress VLAN / PPPoE encapsulation
 * itself, on the real device (6.19 on: probed through the tuple's ifidx,
 * which came with the transmit on the real device the push needs,
 * b5964aac51e0; the push itself, c653d5a78f34 and 18d27bed0880, changes
 * no header). There the module does the same: a NEIGH flow leaves on the
 * tuple's ifidx device, with the neighbour of its route's device, and
 * every flow gets the other direction's encap[] pushed per packet at
 * transmit (push.h, nfb_encap_push()). Elsewhere the route of a flow
 * leaving through a VLAN or PPP device points at that device, which
 * pushes; the module sends there and pushes nothing. The tunnel members
 * of the same release (ab427db17885) say nothing of the push: a kernel
 * may backport one without the other.
 */
#ifdef NFB_HAVE_FLOW_XMIT_REAL_DEV
static inline bool nfb_flowtable_pushes_encap(void)
{
	return true;
}

/*
 * nf_flow_queue_xmit4(): a NEIGH flow's device, NULL once it is gone. Most
 * often the route's own (no VLAN, PPPoE or tunnel in between), which the
 * route holds: then no lookup by index.
 */
static inline struct net_device *
nfb_neigh_out_dev(struct net *net, const struct flow_offload_tuple *tuple,
		  struct dst_entry *dst)
{
	if (likely(tuple->ifidx == dst->dev->ifindex &&
		   net_eq(dev_net(dst->dev), net)))
		return dst->dev;
	return dev_get_by_index_rcu(net, tuple->ifidx);
}

/*
 * The module stands in for a PPP device only where the stock hook leaves
 * the PPPoE header to it (standin.h, nfb_ppp_session()); the call changed in
 * 7.x (a context, references to release).
 */
static inline int nfb_fill_forward_path(const struct net_device *dev,
					struct net_device_path_stack *stack)
{
	return -EOPNOTSUPP;
}
#else
static inline bool nfb_flowtable_pushes_encap(void)
{
	return false;
}

static inline struct net_device *
nfb_neigh_out_dev(struct net *net, const struct flow_offload_tuple *tuple,
		  struct dst_entry *dst)
{
	return dst->dev;
}

static inline int nfb_fill_forward_path(const struct net_device *dev,
					struct net_device_path_stack *stack)
{
	static const u8 no_addr[ETH_ALEN];

	return dev_fill_forward_path(dev, no_addr, stack);
}
#endif

/*
 * Since NF_FLOW_CLOSING (after 6.12), a FIN or RST marks the flow closing
 * instead of tearing it down, and a SYN on a closing flow (a new
 * connection on the same addresses and ports) tears it down and takes the
 * slow path. The module declines FIN and RST on every kernel (the stock
 * hook then does what its kernel does) and, where flows can be closing, a
 * SYN on one, for the stock hook to tear it down: forwarded through the
 * old flow, the new connection would bypass conntrack.
 */
#ifdef NFB_HAVE_FLOW_CLOSING
static inline bool nfb_flow_closing(const struct flow_offload *flow)
{
	return test_bit(NF_FLOW_CLOSING, &flow->flags);
}
#else
static inline bool nfb_flow_closing(const struct flow_offload *flow)
{
	return false;
}
#endif

/*
 * IPIP / IP6IP6 flows (6.19 on, ab427db17885 and d30301ba4b07): a packet
 * that comes in through the tunnel arrives on the real device with the
 * outer header, which the lookup matches (tuple.tun: the outer source and
 * destination, the inner protocol) and the stock hook pops; a flow that
 * leaves through the tunnel has its tunnel in the other direction's tuple
 * (tun_num; the route is the tunnel's underlay route), and the stock hook
 * pushes an outer header (nf_flow_tunnel_v4_push()). The module does both
 * the same way (fastpath.c). Before 6.19 there is no tunnel in a tuple:
 * nfb_tunnels() is a constant false and these accessors are never called.
 */
#ifdef NFB_HAVE_FLOW_TUPLE_TUN
/*
 * The outer header's protocol of a tunnelled tuple: tun.l3_proto up to
 * 7.2, tun.inner_proto from 7.3 (renamed, same values; conftest.sh).
 */
#ifdef NFB_HAVE_FLOW_TUN_INNER_PROTO
#define NFB_TUN_PROTO(t)	((t)->tun.inner_proto)
#else
#define NFB_TUN_PROTO(t)	((t)->tun.l3_proto)
#endif

static inline bool nfb_tunnels(void)
{
	return true;
}

static inline bool nfb_tuple_tunnelled(const struct flow_offload_tuple *t)
{
	return t->tun_num;
}

static inline void nfb_tuple_set_tun4(struct flow_offload_tuple *t,
				      __be32 saddr, __be32 daddr)
{
	t->tun.src_v4.s_addr = saddr;
	t->tun.dst_v4.s_addr = daddr;
	NFB_TUN_PROTO(t) = IPPROTO_IPIP;
}

static inline void nfb_tuple_set_tun6(struct flow_offload_tuple *t,
				      const struct in6_addr *saddr,
				      const struct in6_addr *daddr)
{
	t->tun.src_v6 = *saddr;
	t->tun.dst_v6 = *daddr;
	NFB_TUN_PROTO(t) = IPPROTO_IPV6;
}

/* The outer addresses of a push: to the tunnel's far end, from ours. */
static inline __be32 nfb_tuple_tun_far4(const struct flow_offload_tuple *t)
{
	return t->tun.src_v4.s_addr;
}

static inline __be32 nfb_tuple_tun_near4(const struct flow_offload_tuple *t)
{
	return t->tun.dst_v4.s_addr;
}

static inline const struct in6_addr *
nfb_tuple_tun_far6(const struct flow_offload_tuple *t)
{
	return &t->tun.src_v6;
}

static inline const struct in6_addr *
nfb_tuple_tun_near6(const struct flow_offload_tuple *t)
{
	return &t->tun.dst_v6;
}
#else
static inline bool nfb_tunnels(void)
{
	return false;
}

static inline bool nfb_tuple_tunnelled(const struct flow_offload_tuple *t)
{
	return false;
}

static inline void nfb_tuple_set_tun4(struct flow_offload_tuple *t,
				      __be32 saddr, __be32 daddr)
{
}

static inline void nfb_tuple_set_tun6(struct flow_offload_tuple *t,
				      const struct in6_addr *saddr,
				      const struct in6_addr *daddr)
{
}

static inline __be32 nfb_tuple_tun_far4(const struct flow_offload_tuple *t)
{
	return 0;
}

static inline __be32 nfb_tuple_tun_near4(const struct flow_offload_tuple *t)
{
	return 0;
}

static inline const struct in6_addr *
nfb_tuple_tun_far6(const struct flow_offload_tuple *t)
{
	return NULL;
}

static inline const struct in6_addr *
nfb_tuple_tun_near6(const struct flow_offload_tuple *t)
{
	return NULL;
}
#endif

/* RCU's full grace-period state, as get_state_synchronize_rcu_full() takes it. */
struct nfb_rcu_state {
#ifdef NFB_HAVE_RCU_GP_SEQ
	struct rcu_gp_seq	s;
#else
	struct rcu_gp_oldstate	s;
#endif
};

static inline void nfb_rcu_state_get(struct nfb_rcu_state *st)
{
	get_state_synchronize_rcu_full(&st->s);
}

static inline bool nfb_rcu_state_same(struct nfb_rcu_state *a,
				      struct nfb_rcu_state *b)
{
	return same_state_synchronize_rcu_full(&a->s, &b->s);
}

/*
 * The kernels the module is proven on, which no feature probe can tell:
 * the whole selftest suite passes there, the kernel's own flowtable
 * selftest (nft_flowtable.sh, alike with the stock flowtable alone and
 * with the module attached) among it. On 6.1, 6.12 and 7.2 it does.
 * Debian's 7.3 is a release candidate. Elsewhere
 * the module refuses to load unless asked to with unproven_kernel=1
 * (main.c). The list is in conftest.sh (KERNEL_PROVEN).
 */
#ifdef NFB_HAVE_KERNEL_PROVEN
#define NFB_KERNEL_PROVEN	1
#else
#define NFB_KERNEL_PROVEN	0
#endif

#endif /* __ASSEMBLY__ */

#endif /* _NF_FLOW_BULK_COMPAT_H */
