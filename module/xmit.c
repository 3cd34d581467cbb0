// SPDX-License-Identifier: GPL-2.0
/*
 * nf_flow_bulk: bulk transmit.
 *
 * A bulk (bulk.h) is packets of one key that the drain (queue.c) grouped:
 * one output device, queue, next hop and encapsulation. Its transmit runs
 * in stages (__nfb_xmit_bulk()): link-layer addresses, header, queue,
 * frames, then the qdisc or the driver's list transmit, and what is left
 * over goes one packet at a time through the stack. Where the module
 * stands in for a VLAN or PPP device, standin.h says whether it can; the
 * headers it pushes are push.h's.
 */
#include <linux/etherdevice.h>
#include <linux/if_arp.h>
#include <linux/if_ether.h>
#include <linux/if_pppox.h>
#include <linux/if_vlan.h>
#include <linux/log2.h>
#include <linux/netdevice.h>
#include <linux/ppp_defs.h>
#include <net/arp.h>
#include <net/ipv6.h>
#include <net/ndisc.h>
#include <net/neighbour.h>
#include <net/sch_generic.h>

#include "nfb.h"
#include "bulk.h"
#include "txq.h"
#include "push.h"
#include "standin.h"

static struct neighbour *nfb_neigh(struct net_device *dev, __be16 proto,
				   const struct nfb_cb *cb)
{
	if (proto == htons(ETH_P_IP))
		return __ipv4_neigh_lookup_noref(dev, (__force u32)cb->nexthop.v4);
	return __ipv6_neigh_lookup_noref(dev, &cb->nexthop.v6);
}

/*
 * Slow neighbour: exactly what the stock flowtable of 6.1 and 6.12 does,
 * per packet, on the output device. Where the module stands in for the
 * route's device (cb.stand_in: the packet was to leave on the real device
 * behind it with the encapsulation pushed here), it goes through the
 * route's device (that VLAN device, say) instead, which gives it its own
 * encapsulation, the same. @r: why, for the counters.
 */
static void nfb_neigh_xmit(struct sk_buff *skb, struct nfb_net *nn,
			   __be16 proto, enum nfb_fallback_reason r)
{
	struct nfb_cb cb = *NFB_CB(skb);

	memset(skb->cb, 0, sizeof(skb->cb));
	if (cb.stand_in)
		skb->dev = skb_dst(skb)->dev;
	nfb_count_fallback(nn, r);
	if (proto == htons(ETH_P_IP))
		neigh_xmit(NEIGH_ARP_TABLE, skb->dev, &cb.nexthop.v4, skb);
	else
		neigh_xmit(NEIGH_ND_TABLE, skb->dev, &cb.nexthop.v6, skb);
}

/* One packet through the full stack: qdisc, egress hooks, busy txq. */
static int nfb_queue_xmit(struct sk_buff *skb, struct nfb_net *nn,
			  enum nfb_fallback_reason r)
{
	memset(skb->cb, 0, sizeof(skb->cb));
	nfb_count_fallback(nn, r);
	return dev_queue_xmit(skb);
}

/*
 * Whether the list path may pass by @q, as __dev_xmit_skb() lets a packet
 * pass by an empty work-conserving lockless qdisc (pfifo_fast, the default
 * of single-queue devices): same conditions, no size table to apply.
 */
static bool nfb_qdisc_bypassable(const struct Qdisc *q)
{
	const u32 need = TCQ_F_NOLOCK | TCQ_F_CAN_BYPASS;

	return (q->flags & need) == need && !rcu_access_pointer(q->stab);
}

/*
 * Put @skb (a list) back at the head of qdisc @q, as dev_requeue_skb() of
 * net/sched/sch_generic.c (static; the same in 6.1 and 6.12) does when
 * sch_direct_xmit() finds the driver busy: the qdisc sends it first when
 * it runs again (a lockless one: qdisc_run_end() sees MISSED; one with a
 * root lock: nfb_run_end() schedules it). qdisc_lock() is the root lock of
 * a qdisc that has one.
 */
static void nfb_requeue(struct sk_buff *skb, struct Qdisc *q)
{
	spinlock_t *lock = qdisc_lock(q);

	spin_lock(lock);
	while (skb) {
		struct sk_buff *next = skb->next;

		__skb_queue_tail(&q->gso_skb, skb);
		if (qdisc_is_percpu_stats(q)) {
			qdisc_qstats_cpu_requeues_inc(q);
			qdisc_qstats_cpu_backlog_inc(q, skb);
			qdisc_qstats_cpu_qlen_inc(q);
		} else {
			q->qstats.requeues++;
			qdisc_qstats_backlog_inc(q, skb);
			q->q.qlen++;
		}
		skb = next;
	}
	spin_unlock(lock);
	if (q->flags & TCQ_F_NOLOCK)
		set_bit(__QDISC_STATE_MISSED, &q->state);
}

/* Count @skb in the statistics of @q, as __dev_xmit_skb() on a bypass. */
static void nfb_qdisc_bstats(struct Qdisc *q, const struct sk_buff *skb)
{
	if (qdisc_is_percpu_stats(q))
		qdisc_bstats_cpu_update(q, skb);
	else
		qdisc_bstats_update(q, skb);
}

/*
 * End this CPU's run of @q, and schedule the qdisc when packets wait in
 * it: those another CPU queued while this one held the run (that CPU
 * could not run it), or those put back. A qdisc with a root lock changes
 * its run state under that lock only, and the queue is looked at under it
 * too, so that a packet queued meanwhile is either seen here or finds the
 * run free.
 */
static void nfb_run_end(struct Qdisc *q)
{
	spinlock_t *root_lock = qdisc_lock(q);

	if (q->flags & TCQ_F_NOLOCK) {
		qdisc_run_end(q);
		if (!nolock_qdisc_is_empty(q))
			__netif_schedule(q);
		return;
	}
	spin_lock(root_lock);
	qdisc_run_end(q);
	if (qdisc_qlen(q))
		__netif_schedule(q);
	spin_unlock(root_lock);
}

/* Why nfb_start_xmit_list() stopped before the end of its list. */
enum nfb_stop {
	NFB_STOP_NONE,
	NFB_STOP_DRIVER,	/* refused, or the queue stopped or froze */
	NFB_STOP_QDISC,		/* another CPU queued on the bypassed qdisc */
};

/*
 * Hand a validated list to the driver under one txq lock, xmit_more on all
 * but the last, taps as dev_hard_start_xmit() feeds them. Behind qdisc
 * @bypass, each packet is sent only while the qdisc is still empty, as
 * __dev_xmit_skb() decides per packet, and counted in its statistics the
 * same way. *@rest gets what the driver did not take. Caller holds the txq
 * lock. @vc: the VLAN devices to count what the driver took for (a packet
 * past a qdisc counts as __dev_xmit_skb() returns it: taken), or NULL.
 */
static enum nfb_stop nfb_start_xmit_list(struct sk_buff *skb,
					 struct net_device *dev,
					 struct netdev_queue *txq,
					 struct Qdisc *bypass,
					 struct sk_buff **rest,
					 struct nfb_vlan_chain *vc)
{
	bool nit = dev_nit_active(dev);

	while (skb) {
		struct sk_buff *next = skb->next;
		unsigned int len = 0;
		netdev_tx_t rc;

		if (bypass) {
			if (unlikely(!qdisc_is_empty(bypass))) {
				*rest = skb;
				return NFB_STOP_QDISC;
			}
			nfb_qdisc_bstats(bypass, skb);
		}
		skb_mark_not_on_list(skb);
		if (nit)
			dev_queue_xmit_nit(skb, dev);
		if (unlikely(vc))
			len = nfb_vlan_len(skb);
		rc = netdev_start_xmit(skb, dev, txq, next);
		if (unlikely(!dev_xmit_complete(rc))) {
			skb->next = next;
			*rest = skb;
			return NFB_STOP_DRIVER;
		}
		nfb_vlan_tally(vc, len, bypass ? NET_XMIT_SUCCESS : rc);
		skb = next;
		if (skb && (bypass ? netif_xmit_frozen_or_stopped(txq) :
				     netif_xmit_stopped(txq))) {
			/* __dev_xmit_skb() counts it, then finds the queue stopped. */
			if (bypass)
				nfb_qdisc_bstats(bypass, skb);
			*rest = skb;
			return NFB_STOP_DRIVER;
		}
	}
	*rest = NULL;
	return NFB_STOP_NONE;
}

/*
 * validate_xmit_skb() changes nothing for a linear, non-GSO skb without
 * CHECKSUM_PARTIAL, socket or secpath, and with no VLAN tag or one the
 * device inserts (validate_xmit_vlan(): netif_skb_features() keeps the
 * device's tag offloads for a tagged packet): it then only costs the
 * netif_skb_features() walk. Forwarded small packets are mostly such,
 * those the module tags itself (a VLAN output) included.
 */
static bool nfb_needs_validate(const struct sk_buff *skb,
			       const struct net_device *dev)
{
	return skb_is_gso(skb) || skb->ip_summed == CHECKSUM_PARTIAL ||
	       (skb_vlan_tag_present(skb) &&
		!vlan_hw_offload_capable(dev->features, skb->vlan_proto)) ||
	       skb_is_nonlinear(skb) || skb->sk || skb_sec_path(skb);
}

/*
 * validate_xmit_skb_list() one packet at a time, so that a packet it drops
 * is counted here (it frees the packet and counts it at the device); GSO
 * packets come back as lists of segments.
 */
static struct sk_buff *nfb_validate_list(struct sk_buff *list,
					 struct net_device *dev,
					 struct nfb_net *nn,
					 struct nfb_vlan_chain *vc)
{
	struct sk_buff *skb, *next, *segs, *head = NULL, **tail = &head;
	bool again = false;
	unsigned int len;

	for (skb = list; skb; skb = next) {
		next = skb->next;
		skb_mark_not_on_list(skb);
		len = nfb_vlan_len(skb);
		segs = validate_xmit_skb_list(skb, dev, &again);
		if (unlikely(!segs)) {
			nfb_count_drop(nn, NFB_DROP_VALIDATE);
			nfb_vlan_tally(vc, len, NET_XMIT_DROP);
			continue;
		}
		*tail = segs;
		while (segs->next)
			segs = segs->next;
		tail = &segs->next;
	}
	return head;
}

static unsigned int nfb_hist_bucket(unsigned int n)
{
	return min_t(unsigned int, ilog2(n), NFB_HIST_BUCKETS - 1);
}

/* Drop the list @skb, each packet counted as @reason. */
static void nfb_drop_list(struct sk_buff *skb, struct nfb_net *nn,
			  enum nfb_drop_reason reason)
{
	struct sk_buff *next;

	for (; skb; skb = next) {
		next = skb->next;
		skb_mark_not_on_list(skb);
		nfb_count_drop(nn, reason);
		kfree_skb(skb);
	}
}

/* The bulk's packets, from @skb on, each to @q as dev_qdisc_enqueue(). */
static void nfb_enqueue_qdisc(struct sk_buff *skb, struct Qdisc *q,
			      struct nfb_net *nn, struct nfb_vlan_chain *vc)
{
	spinlock_t *root_lock = NULL;
	struct sk_buff *next, *to_free = NULL;
	unsigned int len;
	int rc;

	if (!(q->flags & TCQ_F_NOLOCK)) {
		root_lock = qdisc_lock(q);
		spin_lock(root_lock);
	}
	for (; skb; skb = next) {
		next = skb->next;
		skb_mark_not_on_list(skb);
		nfb_count_fallback(nn, NFB_FALLBACK_QDISC);
		len = nfb_vlan_len(skb);
		rc = q->enqueue(skb, q, &to_free) & NET_XMIT_MASK;
		nfb_vlan_tally(vc, len, rc);
	}
	if (root_lock)
		spin_unlock(root_lock);
	if (unlikely(to_free))
		kfree_skb_list(to_free);
}

/*
 * Whether the bulk may go into @q under one hold of its lock: a qdisc with
 * a root lock (fq_codel, Debian's default where there is a queue; mq's
 * children; htb) and no size table, whose lengths need not be computed
 * here.
 */
static bool nfb_qdisc_lockable(const struct Qdisc *q)
{
	return !(q->flags & TCQ_F_NOLOCK) && !rcu_access_pointer(q->stab);
}

/*
 * The bulk into @q, a qdisc with a root lock that cannot be passed by (not
 * empty, or a shaper such as htb), under one hold of that lock, which the
 * caller holds and this releases: each packet as __dev_xmit_skb() enqueues
 * one; then the qdisc runs in this CPU's NET_TX softirq, right after this
 * one (__netif_schedule(): __qdisc_run() is not exported). A run on
 * another CPU that holds the qdisc sends them already: the packets are in
 * the queue before the lock is released, and a run ends only once it
 * finds the queue empty under the lock. What the qdisc drops over its
 * limit, it counts, as for dev_queue_xmit(). Per-flow order holds: a
 * packet the stack sends later (a declined one) is queued behind these.
 * The caller set each packet's qdisc length.
 */
static void nfb_enqueue_bulk(struct sk_buff *skb, struct Qdisc *q, u16 txq,
			     struct nfb_net *nn, struct nfb_vlan_chain *vc)
{
	spinlock_t *root_lock = qdisc_lock(q);
	struct sk_buff *next, *to_free = NULL;
	unsigned int len;
	int rc;

	if (unlikely(test_bit(__QDISC_STATE_DEACTIVATED, &q->state))) {
		spin_unlock(root_lock);
		for (next = skb; next; next = next->next)
			nfb_vlan_tally(vc, 0, NET_XMIT_DROP);
		nfb_drop_list(skb, nn, NFB_DROP_DEV_DOWN);
		return;
	}
	for (; skb; skb = next) {
		next = skb->next;
		skb_mark_not_on_list(skb);
		skb_set_queue_mapping(skb, txq);
		len = nfb_vlan_len(skb);
		rc = q->enqueue(skb, q, &to_free) & NET_XMIT_MASK;
		nfb_vlan_tally(vc, len, rc);
	}
	spin_unlock(root_lock);
	if (unlikely(to_free))
		kfree_skb_list(to_free);
	__netif_schedule(q);
}

/*
 * Whether the bulk can go on the list path to queue @qi of @dev, as far as
 * that queue is concerned (the device's egress hooks are the caller's);
 * __NFB_FALLBACK_MAX if it can, else why not. *@txqp, *@qp: the queue and
 * its qdisc.
 */
static enum nfb_fallback_reason nfb_txq_verdict(struct net_device *dev, u16 qi,
						int cpu,
						struct netdev_queue **txqp,
						struct Qdisc **qp)
{
	struct netdev_queue *txq = netdev_get_tx_queue(dev, qi);
	struct Qdisc *q = rcu_dereference_bh(txq->qdisc);

	*txqp = txq;
	*qp = q;
	if (q->enqueue && !nfb_qdisc_bypassable(q) && !nfb_qdisc_lockable(q))
		return NFB_FALLBACK_QDISC;
	if (READ_ONCE(txq->xmit_lock_owner) == cpu || dev_xmit_recursion())
		return NFB_FALLBACK_BUSY;
	return __NFB_FALLBACK_MAX;
}

/*
 * How the packets a stage of __nfb_xmit_bulk() does not send as a list
 * leave, each on its own (nfb_tx_left()).
 */
enum nfb_left {
	NFB_LEFT_NONE,
	NFB_LEFT_NEIGH,		/* neigh_xmit(), or dropped: NFB_STAND_IN_DOWN */
	NFB_LEFT_QUEUE,		/* dev_queue_xmit(): the qdisc is busy */
	NFB_LEFT_REFUSED,	/* dropped: a noqueue device refused them */
};

/*
 * A bulk's link-layer addresses and header, which go by address to
 * helpers out of line: apart from struct nfb_tx, which stays in registers.
 */
struct nfb_l2 {
	u8			ha[MAX_ADDR_LEN];
	u8			sa[ETH_ALEN] __aligned(2);
	struct ethhdr		eth;
};

/*
 * A bulk on its way out: what the stages of __nfb_xmit_bulk() decide, in
 * the order they run. All of it comes from the bulk's first packet and
 * its output device, once per bulk. Its address is never passed to a
 * function out of line, so that the compiler keeps it in registers.
 */
struct nfb_tx {
	struct net_device	*dev;
	struct nfb_net		*nn;
	__be16			proto;
	/* Link-layer header: nfb_tx_l2(), nfb_tx_header(). */
	bool			encap;		/* nfb_pushes_encap() */
	bool			vlan_push;	/* a VLAN device stood in for */
	struct nfb_l2		*l2;
	const u8		*sap;		/* NULL: the device's address */
	struct ethhdr		*ethp;		/* NULL: dev_hard_header() */
	unsigned int		hh_len;
	struct net_device	*ppp;		/* the PPP device stood in for */
	struct nfb_vlan_chain	*vc;		/* VLAN devices to count for */
	/* Queue: nfb_tx_queue(), nfb_tx_pick(). */
	int			cpu;
	bool			late;		/* NFB_TXQ_LATE */
	bool			drop_dst;	/* IFF_XMIT_DST_RELEASE */
	u16			qi;
	enum nfb_fallback_reason r;	/* __NFB_FALLBACK_MAX: list path */
	struct netdev_queue	*txq;
	struct Qdisc		*q;
	struct Qdisc		*bypass;	/* passed by, its run held */
	/* The list for the driver: nfb_tx_frames(). */
	struct sk_buff		*list;
	unsigned int		n;
	bool			validate;
	bool			gso;
	/* What is left for nfb_tx_left(), and why. */
	struct sk_buff		*left;
	enum nfb_left		how;
	enum nfb_fallback_reason vr;
};

/* Leave @skb (a list) to nfb_tx_left(). Returns false: the list path ends. */
static bool nfb_tx_stop(struct nfb_tx *t, struct sk_buff *skb,
			enum nfb_left how, enum nfb_fallback_reason vr)
{
	t->left = skb;
	t->how = how;
	t->vr = vr;
	return false;
}

/*
 * Stage 1, the link-layer addresses: the flow's own for
 * FLOW_OFFLOAD_XMIT_DIRECT (as nf_flow_queue_xmit() passes them to
 * dev_hard_header(); no neighbour, no route), a PPPoE session's peer, or
 * the neighbour's. Returns false when the bulk goes packet by packet.
 *
 * As neigh_resolve_output(): a connected entry is used as is; a valid but
 * unconfirmed one (stale, delay, probe) is used too, once
 * neigh_event_send() has run its state machine (stale -> delay); anything
 * else takes the per-packet neigh_xmit() path, which queues the packet
 * while the address is resolved and, with the route still attached,
 * sends ICMP host unreachable when resolution fails. The neighbour is the
 * route's device's, which is not t->dev where the module stands in for it
 * (a VLAN device, say); a route's device that is down has none.
 */
static bool nfb_tx_l2(struct nfb_tx *t, struct sk_buff *skb,
		      struct nfb_vlan_chain *chain)
{
	const struct nfb_cb *cb = NFB_CB(skb);
	struct net_device *dev = t->dev;
	enum nfb_fallback_reason vr;
	struct neighbour *neigh;

	if (cb->xmit == NFB_XMIT_DIRECT) {
		ether_addr_copy(t->l2->ha, cb->nexthop.mac.h_dest);
		ether_addr_copy(t->l2->sa, cb->nexthop.mac.h_source);
		t->sap = t->l2->sa;
		return true;
	}
	t->sap = NULL;
	if (unlikely(cb->stand_in && !netif_running(skb_dst(skb)->dev)))
		return nfb_tx_stop(t, skb, NFB_LEFT_NEIGH, NFB_STAND_IN_DOWN);
	if (t->vlan_push && skb_dst(skb)->dev->type == ARPHRD_PPP) {
		/* A PPPoE session: no neighbour, the session's peer. */
		vr = nfb_ppp_session(skb_dst(skb)->dev, dev, cb, t->l2->ha);
		if (unlikely(vr != __NFB_FALLBACK_MAX))
			return nfb_tx_stop(t, skb, NFB_LEFT_NEIGH, vr);
		ether_addr_copy(t->l2->sa, dev->dev_addr);
		t->vlan_push = false;
		t->ppp = skb_dst(skb)->dev;
		return true;
	}
	neigh = nfb_neigh(cb->stand_in ? skb_dst(skb)->dev : dev, t->proto, cb);
	/*
	 * The header takes @dev's address length from the neighbour, which
	 * neigh_ha_snapshot() copies for its own device's. A neighbour of
	 * another length is one of a device the module stands in for and
	 * cannot write the link header of: a PPP device's, of none (6.19 to
	 * 7.2 make a PPPoE flow NEIGH, on the Ethernet device behind the PPP
	 * device). Its packets go through the route's device instead.
	 */
	if (!neigh || (!(READ_ONCE(neigh->nud_state) & NUD_CONNECTED) &&
		       (!(READ_ONCE(neigh->nud_state) & NUD_VALID) ||
			neigh_event_send(neigh, NULL))) ||
	    unlikely(neigh->dev->addr_len != dev->addr_len))
		return nfb_tx_stop(t, skb, NFB_LEFT_NEIGH, NFB_FALLBACK_NEIGH);
	neigh_ha_snapshot(t->l2->ha, neigh, neigh->dev);
	ether_addr_copy(t->l2->sa, dev->dev_addr);
	if (t->vlan_push) {
		vr = nfb_vlan_chain(neigh->dev, dev, chain);
		if (unlikely(vr != __NFB_FALLBACK_MAX))
			return nfb_tx_stop(t, skb, NFB_LEFT_NEIGH, vr);
		t->vc = chain;
		/* As vlan_dev_hard_header(): the VLAN device's address. */
		ether_addr_copy(t->l2->sa, neigh->dev->dev_addr);
	}
	return true;
}

/*
 * Stage 2, the link-layer header: built once for the bulk where the
 * device's is Ethernet's. Headroom for what is pushed here, no more: as
 * neigh_hh_output() and neigh_resolve_output() of the stock path, which
 * leave the device's needed_headroom (a VLAN device's tag, say) to the
 * device that pushes it; asking for LL_RESERVED_SPACE() would reallocate
 * every packet with less room than that (most, on a 6.1 VLAN device).
 */
static void nfb_tx_header(struct nfb_tx *t, const struct nfb_cb *cb)
{
	const struct net_device *dev = t->dev;

	t->hh_len = dev->header_ops ? READ_ONCE(dev->hard_header_len) : 0;
	if (dev->header_ops && dev->header_ops->create == eth_header) {
		ether_addr_copy(t->l2->eth.h_dest, t->l2->ha);
		ether_addr_copy(t->l2->eth.h_source, t->l2->sa);
		/* A VLAN stand-in's tags go in after it (nfb_vlan_frame()). */
		if (t->encap || t->ppp)
			t->l2->eth.h_proto = nfb_encap_ethertype(cb, t->proto);
		else
			t->l2->eth.h_proto = t->proto;
		t->ethp = &t->l2->eth;
		t->hh_len = ETH_HLEN;
	}
}

/*
 * Stage 3, the queue: the bulk's, and whether the list path may use it
 * (t->r); an NFB_TXQ_LATE bulk's is the first packet's, once its frame is
 * built (nfb_tx_pick()).
 */
static void nfb_tx_queue(struct nfb_tx *t, u16 qi)
{
	struct netdev_queue *txq = NULL;
	struct net_device *dev = t->dev;
	struct Qdisc *q = NULL;

	t->cpu = smp_processor_id();
	t->late = qi == NFB_TXQ_LATE;
	t->qi = qi;
	if (nfb_dev_has_egress_hooks(dev))
		t->r = NFB_FALLBACK_EGRESS_HOOK;
	else if (unlikely(t->late))
		t->r = __NFB_FALLBACK_MAX;
	else
		t->r = nfb_txq_verdict(dev, qi, t->cpu, &txq, &q);
	t->txq = txq;
	t->q = q;
	/* What __dev_queue_xmit() does with the route before the qdisc. */
	t->drop_dst = dev->priv_flags & IFF_XMIT_DST_RELEASE;
}

/* As __dev_queue_xmit() has a packet before it picks the queue. */
static __always_inline void nfb_tx_clear(struct sk_buff *skb, bool drop_dst)
{
	nfb_cb_clear(skb);
	nfb_skb_clear_tc_at_ingress(skb);
	if (drop_dst)
		skb_dst_drop(skb);
}

/*
 * The queue of a packet of an NFB_TXQ_LATE bulk, its frame built: the
 * first one's is the bulk's; a packet the device puts on another queue
 * goes on its own.
 */
static enum nfb_fallback_reason nfb_tx_pick(struct nfb_tx *t,
					    struct sk_buff *skb)
{
	struct netdev_queue *txq;
	struct Qdisc *q;
	u16 p;

	nfb_tx_clear(skb, t->drop_dst);
	p = nfb_pick_frame(t->dev, skb);
	if (!t->txq) {
		t->qi = p;
		t->r = nfb_txq_verdict(t->dev, p, t->cpu, &txq, &q);
		t->txq = txq;
		t->q = q;
		return t->r;
	}
	return p == t->qi ? __NFB_FALLBACK_MAX : NFB_FALLBACK_TXQ;
}

/*
 * Stage 4, the frames: each packet's link-layer header (and what the
 * module stands in for) pushed, then onto the list for the driver, or,
 * where the queue does not allow the list path, through dev_queue_xmit().
 */
static void nfb_tx_frames(struct nfb_tx *t, struct sk_buff *skb)
{
	struct sk_buff *next, *list = NULL, **tail = &list;
	struct net_device *dev = t->dev;
	enum nfb_fallback_reason pr;
	enum nfb_drop_reason err;
	unsigned int len;
	int rc;

	if (unlikely(t->encap || t->ppp)) {
		skb = nfb_push_list(skb, t->nn,
				    t->ppp && dev_nit_active(t->ppp) ? t->ppp : NULL,
				    t->hh_len);
		if (t->ppp)
			nfb_ppp_count(t->ppp, skb);
	}
	for (; skb; skb = next) {
		next = skb->next;
		skb_mark_not_on_list(skb);
		if (unlikely(t->vc))
			err = nfb_vlan_frame(skb, t->vc, t->ethp, dev);
		else
			err = nfb_push_l2(skb, dev, t->l2->ha, t->sap, t->ethp,
					  t->hh_len);
		if (unlikely(err != NFB_DROP_NONE)) {
			nfb_count_drop(t->nn, err);
			kfree_skb(skb);
			continue;
		}
		pr = t->r;
		if (unlikely(t->late) && t->r == __NFB_FALLBACK_MAX)
			pr = nfb_tx_pick(t, skb);
		if (pr != __NFB_FALLBACK_MAX) {
			len = nfb_vlan_len(skb);
			rc = nfb_queue_xmit(skb, t->nn, pr);
			nfb_vlan_tally(t->vc, len, rc);
			continue;
		}
		if (likely(!t->late))
			nfb_tx_clear(skb, t->drop_dst);
		if (!t->drop_dst)
			skb_dst_force(skb);
		t->validate |= nfb_needs_validate(skb, dev);
		t->gso |= skb_is_gso(skb);
		*tail = skb;
		tail = &skb->next;
		t->n++;
	}
	t->list = list;
}

/* Stage 6, accounting: one bulk of t->n packets. */
static __always_inline void nfb_tx_account(const struct nfb_tx *t)
{
	this_cpu_inc(t->nn->stats->bulks);
	this_cpu_inc(t->nn->stats->hist[nfb_hist_bucket(t->n)]);
}

/*
 * Stage 5a, the qdisc: behind one, the list goes to the driver only while
 * the qdisc is empty and this CPU holds its run, as __dev_xmit_skb() sends
 * a packet directly (t->bypass); a qdisc with a root lock that cannot be
 * passed by gets the bulk queued under one hold of that lock. GSO packets
 * would need the qdisc's per-segment length: they take the qdisc's own
 * path. Returns true when the list goes to the driver.
 */
static bool nfb_tx_qdisc(struct nfb_tx *t)
{
	struct Qdisc *q = t->q;
	spinlock_t *root_lock = qdisc_lock(q);
	struct sk_buff *skb;

	if (!q->enqueue) {
		nfb_tx_account(t);
		return true;
	}
	if (t->gso)
		return nfb_tx_stop(t, t->list, NFB_LEFT_QUEUE, NFB_FALLBACK_QDISC);
	if (nfb_qdisc_bypassable(q)) {
		if (!nolock_qdisc_is_empty(q) || !qdisc_run_begin(q))
			return nfb_tx_stop(t, t->list, NFB_LEFT_QUEUE,
					   NFB_FALLBACK_QDISC);
		/* Recheck under the run lock: a requeue may have raced us. */
		if (unlikely(!nolock_qdisc_is_empty(q))) {
			qdisc_run_end(q);
			return nfb_tx_stop(t, t->list, NFB_LEFT_QUEUE,
					   NFB_FALLBACK_QDISC);
		}
		t->bypass = q;
	}
	for (skb = t->list; skb; skb = skb->next)
		nfb_qdisc_pkt_len_init(skb);
	nfb_tx_account(t);
	if (t->bypass)
		return true;

	/*
	 * Under the root lock, as __dev_xmit_skb(): an empty qdisc that
	 * allows it (fq_codel, pfifo, sfq) is passed by while this CPU holds
	 * its run; anything else gets the bulk queued.
	 */
	spin_lock(root_lock);
	if (!(q->flags & TCQ_F_CAN_BYPASS) || qdisc_qlen(q) ||
	    test_bit(__QDISC_STATE_DEACTIVATED, &q->state) ||
	    !qdisc_run_begin(q)) {
		nfb_enqueue_bulk(t->list, q, t->qi, t->nn, t->vc);
		return false;
	}
	spin_unlock(root_lock);
	t->bypass = q;
	return true;
}

/*
 * After the driver, behind a passed-by qdisc, as sch_direct_xmit(): what
 * the driver refused goes back to the head of the qdisc (counted once, as
 * __dev_xmit_skb() counts a packet before trying the driver); once another
 * CPU has queued behind us, the rest queues behind it. Then the run ends.
 */
static void nfb_tx_unbypass(struct nfb_tx *t, struct sk_buff *rest,
			    enum nfb_stop stop)
{
	struct Qdisc *q = t->bypass;
	struct sk_buff *skb;

	if (stop == NFB_STOP_DRIVER) {
		nfb_count_fallback(t->nn, NFB_FALLBACK_BUSY);
		nfb_vlan_tally(t->vc, nfb_vlan_len(rest), NET_XMIT_SUCCESS);
		for (skb = rest->next; skb; skb = skb->next) {
			nfb_count_fallback(t->nn, NFB_FALLBACK_BUSY);
			nfb_qdisc_bstats(q, skb);
			nfb_vlan_tally(t->vc, nfb_vlan_len(skb),
				       NET_XMIT_SUCCESS);
		}
		nfb_requeue(rest, q);
	} else if (stop == NFB_STOP_QDISC) {
		nfb_enqueue_qdisc(rest, q, t->nn, t->vc);
	}
	nfb_run_end(q);
}

/*
 * Stage 5b, the list to the driver under one txq lock. What a noqueue
 * device refuses is left to nfb_tx_left(), which drops it as
 * __dev_queue_xmit() does.
 */
static void nfb_tx_list(struct nfb_tx *t)
{
	struct Qdisc *bypass = t->bypass;
	struct netdev_queue *txq = t->txq;
	struct net_device *dev = t->dev;
	enum nfb_stop stop = NFB_STOP_DRIVER;
	struct sk_buff *skb, *rest;

	skb = t->validate ? nfb_validate_list(t->list, dev, t->nn, t->vc) :
			    t->list;
	if (unlikely(!skb)) {
		if (bypass)
			nfb_run_end(bypass);
		return;
	}
	/*
	 * The queue is chosen: now the driver, and the qdisc should any of
	 * them end up there, may read it (segments inherit it).
	 */
	for (rest = skb; rest; rest = rest->next)
		skb_set_queue_mapping(rest, t->qi);

	rest = skb;
	HARD_TX_LOCK(dev, txq, t->cpu);
	if (bypass ? !netif_xmit_frozen_or_stopped(txq) :
		     !netif_xmit_stopped(txq)) {
		dev_xmit_recursion_inc();
		stop = nfb_start_xmit_list(skb, dev, txq, bypass, &rest, t->vc);
		dev_xmit_recursion_dec();
	} else if (bypass) {
		/*
		 * __dev_xmit_skb() counts a packet before sch_direct_xmit()
		 * finds the queue stopped; nfb_start_xmit_list() counts the
		 * first one of @rest, which nfb_tx_unbypass() then leaves out.
		 */
		nfb_qdisc_bstats(bypass, skb);
	}
	HARD_TX_UNLOCK(dev, txq);

	if (bypass)
		nfb_tx_unbypass(t, rest, stop);
	else
		nfb_tx_stop(t, rest, NFB_LEFT_REFUSED, __NFB_FALLBACK_MAX);
}

/* The one exit: what a stage left, each packet on its own. */
static void nfb_tx_left(struct nfb_tx *t)
{
	struct sk_buff *skb, *next;
	unsigned int len;
	int rc;

	if (!t->left)
		return;
	if (unlikely(t->vr == NFB_STAND_IN_DOWN)) {
		nfb_drop_list(t->left, t->nn, NFB_DROP_DEV_DOWN);
		return;
	}
	for (skb = t->left; skb; skb = next) {
		next = skb->next;
		skb_mark_not_on_list(skb);
		switch (t->how) {
		case NFB_LEFT_NEIGH:
			nfb_neigh_xmit(skb, t->nn, t->proto, t->vr);
			break;
		case NFB_LEFT_QUEUE:
			nfb_count_fallback(t->nn, NFB_FALLBACK_QDISC);
			len = nfb_vlan_len(skb);
			rc = dev_queue_xmit(skb);
			nfb_vlan_tally(t->vc, len, rc);
			break;
		default:
			nfb_count_drop(t->nn, NFB_DROP_XMIT);
			nfb_vlan_tally(t->vc, 0, NET_XMIT_DROP);
			dev_core_stats_tx_dropped_inc(t->dev);
			kfree_skb(skb);
		}
	}
}

/*
 * Transmit one bulk, in stages: link-layer addresses, header, queue,
 * frames, qdisc or driver, and what is left over one packet at a time.
 * The caller holds one reference on b->dev for the whole call (the other
 * packets' references are already released) and the bulk's packets are
 * counted in flight until it returns.
 */
static void __nfb_xmit_bulk(struct nfb_bulk *b, struct nfb_vlan_chain *chain)
{
	struct sk_buff *skb = b->head;
	const struct nfb_cb *cb = NFB_CB(skb);
	struct nfb_l2 l2 __uninitialized;
	struct nfb_tx t __uninitialized;

	b->tail->next = NULL;
	t.l2 = &l2;
	t.dev = b->dev;
	t.nn = b->nn;
	t.proto = b->proto;
	t.left = NULL;
	if (unlikely(!netif_running(t.dev))) {
		nfb_drop_list(skb, t.nn, NFB_DROP_DEV_DOWN);
		return;
	}
	t.encap = nfb_pushes_encap(cb);
	/* 6.1 / 6.12: standing in for VLAN devices (fastpath.c, nfb_vlan_out()). */
	t.vlan_push = !nfb_flowtable_pushes_encap() && cb->stand_in;
	t.ethp = NULL;
	t.ppp = NULL;
	t.vc = NULL;
	t.bypass = NULL;
	t.n = 0;
	t.validate = false;
	t.gso = false;
	if (nfb_tx_l2(&t, skb, chain)) {
		nfb_tx_header(&t, cb);
		nfb_tx_queue(&t, b->txq);
		nfb_tx_frames(&t, skb);
		if (t.n && nfb_tx_qdisc(&t))
			nfb_tx_list(&t);
	}
	nfb_tx_left(&t);
}

/*
 * The bulk keeps its first packet's reference on the output device while
 * it is sent; the references of the others are dropped first. The
 * in-flight count, which keeps b->nn alive, drops last.
 */
void nfb_xmit_bulk(struct nfb_bulk *b)
{
	struct net_device *dev = b->dev;
	struct nfb_net *nn = b->nn;
	unsigned int i, n = b->count;
	struct nfb_vlan_chain chain __uninitialized;

	for (i = 1; i < n; i++)
		dev_put(dev);

	chain.sent = 0;
	chain.bytes = 0;
	chain.dropped = 0;
	__nfb_xmit_bulk(b, &chain);
	if (unlikely(chain.sent || chain.dropped))
		nfb_vlan_chain_count(&chain);

	dev_put(dev);
	this_cpu_sub(nn->stats->inflight, n);
}

