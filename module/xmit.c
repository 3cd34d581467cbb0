// SPDX-License-Identifier: GPL-2.0
/*
 * nf_flow_bulk: bulk transmit.
 *
 * A bulk (bulk.h) is packets of one key that the drain (queue.c) grouped:
 * one output device, queue, next hop and encapsulation. Its transmit runs
 * in stages (__nfb_xmit_bulk()): link-layer addresses, header, queue,
 * frames, then the qdisc or the driver's list transmit, and what is left
 * over goes one packet at a time through the stack. Where the module
 * stands in for a VLAN or PPP device, standin.c says whether it can.
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

static struct neighbour *nfb_neigh(struct net_device *dev, __be16 proto,
				   const struct nfb_cb *cb)
{
	if (proto == htons(ETH_P_IP))
		return __ipv4_neigh_lookup_noref(dev, (__force u32)cb->nexthop.v4);
	return __ipv6_neigh_lookup_noref(dev, &cb->nexthop.v6);
}

/*
 * What the helpers that build a packet's headers return when it can go on:
 * not a counter (NFB_DROP_DEV_DOWN is 0), one past the uAPI's drop reasons.
 */
#define NFB_DROP_NONE	__NFB_DROP_MAX

/*
 * Push the L2 header; the skb's data starts at its network header. @eth is
 * the bulk's Ethernet header, built once, or NULL for other link types,
 * whose header goes from @ha to @sa (NULL: the device's address).
 */
static enum nfb_drop_reason nfb_push_l2(struct sk_buff *skb,
					struct net_device *dev, const u8 *ha,
					const u8 *sa, const struct ethhdr *eth,
					unsigned int hh_len)
{
	__skb_pull(skb, skb_network_offset(skb));
	if (unlikely(skb_headroom(skb) < hh_len) && skb_cow_head(skb, hh_len))
		return NFB_DROP_NOMEM;
	if (eth)
		memcpy(__skb_push(skb, ETH_HLEN), eth, ETH_HLEN);
	else if (dev_hard_header(skb, dev, ntohs(skb->protocol), ha, sa,
				 skb->len) < 0)
		return NFB_DROP_HEADER;
	skb_reset_mac_header(skb);
	return NFB_DROP_NONE;
}

/*
 * 6.19 on (nfb_flowtable_pushes_encap()): the flow's transmit
 * encapsulation, the other direction's encap[] (outermost first, as it
 * arrives), pushed innermost first as nf_flow_encap_push() does: a PPPoE
 * session header into the packet (nf_flow_pppoe_push()), a tag into
 * skb->vlan_tci, the one already there moved into the packet first
 * (nf_flow_vlan_push()). The skb's data is at its network header, and the
 * network header ends up at the outermost header pushed into the packet,
 * where nfb_push_l2() puts the link-layer header. @hh_len: the headroom
 * that header needs.
 */
static enum nfb_drop_reason nfb_vlan_push(struct sk_buff *skb, __be16 proto,
					  u16 tci, unsigned int hh_len)
{
	struct vlan_hdr *vhdr;

	if (skb_vlan_tag_present(skb)) {
		if (skb_cow_head(skb, hh_len + VLAN_HLEN))
			return NFB_DROP_NOMEM;
		vhdr = skb_push(skb, VLAN_HLEN);
		skb_reset_network_header(skb);
		vhdr->h_vlan_TCI = htons(skb_vlan_tag_get(skb));
		vhdr->h_vlan_encapsulated_proto = skb->protocol;
		skb->protocol = skb->vlan_proto;
		skb_postpush_rcsum(skb, vhdr, VLAN_HLEN);
	}
	__vlan_hwaccel_put_tag(skb, proto, tci);
	return NFB_DROP_NONE;
}

static enum nfb_drop_reason nfb_encap_push(struct sk_buff *skb,
					   const struct nfb_cb *cb,
					   unsigned int hh_len)
{
	enum nfb_drop_reason err;
	struct pppoe_hdr *ph;
	__be16 ppp_proto;
	int i;

	__skb_pull(skb, skb_network_offset(skb));
	for (i = NF_FLOW_TABLE_ENCAP_MAX - 1; i >= 0; i--) {
		switch (cb->encap[i].proto) {
		case htons(ETH_P_8021Q):
		case htons(ETH_P_8021AD):
			err = nfb_vlan_push(skb, cb->encap[i].proto,
					    cb->encap[i].id, hh_len);
			if (err != NFB_DROP_NONE)
				return err;
			break;
		case htons(ETH_P_PPP_SES):
			switch (skb->protocol) {
			case htons(ETH_P_IP):
				ppp_proto = htons(PPP_IP);
				break;
			case htons(ETH_P_IPV6):
				ppp_proto = htons(PPP_IPV6);
				break;
			default:	/* inside a tag: no path builds that */
				return NFB_DROP_HEADER;
			}
			if (skb_cow_head(skb, hh_len + PPPOE_SES_HLEN))
				return NFB_DROP_NOMEM;
			ph = skb_push(skb, PPPOE_SES_HLEN);
			skb_reset_network_header(skb);
			ph->ver = 1;
			ph->type = 1;
			ph->code = 0;
			ph->sid = htons(cb->encap[i].id);
			/* The PPP protocol field counts, the header does not. */
			ph->length = htons(skb->len - sizeof(*ph));
			*(__be16 *)(ph + 1) = ppp_proto;
			skb->protocol = htons(ETH_P_PPP_SES);
			break;
		}
	}
	return NFB_DROP_NONE;
}

/*
 * The link-layer protocol of a packet once nfb_encap_push() has pushed
 * @cb's encapsulation on it: the same for a whole bulk, whose packets share
 * their encapsulation and their network protocol @proto.
 */
static __be16 nfb_encap_ethertype(const struct nfb_cb *cb, __be16 proto)
{
	__be16 tag = 0;
	int i;

	for (i = NF_FLOW_TABLE_ENCAP_MAX - 1; i >= 0; i--) {
		switch (cb->encap[i].proto) {
		case htons(ETH_P_8021Q):
		case htons(ETH_P_8021AD):
			if (tag)
				proto = tag;
			tag = cb->encap[i].proto;
			break;
		case htons(ETH_P_PPP_SES):
			proto = htons(ETH_P_PPP_SES);
			break;
		}
	}
	return proto;
}

/*
 * Whether the flow's encapsulation is pushed here: where the stock hook
 * pushes it, on a DIRECT flow, or a NEIGH flow the module stands in for
 * the route's device on. The probe behind nfb_flowtable_pushes_encap()
 * goes by a member of the tuple (compat.h): a kernel that backports that
 * without the push may still send a NEIGH flow on the route's device (the
 * tuple's ifidx), the VLAN device say, which then pushes its own tag;
 * pushing here too would tag the packets twice.
 */
static bool nfb_pushes_encap(const struct nfb_cb *cb)
{
	return nfb_flowtable_pushes_encap() && cb->encap[0].proto &&
	       (cb->stand_in || cb->xmit == NFB_XMIT_DIRECT);
}

/*
 * 6.1 / 6.12 (fastpath.c, nfb_vlan_out()): the VLAN devices a bulk stands
 * in for, from the route's device (innermost tag) down to the real device
 * the bulk goes to. Each must be up, with no qdisc and no egress hook:
 * otherwise the packets go through them (the reason is returned), or are
 * dropped where one is down (NFB_STAND_IN_DOWN). @nit: bit i set while
 * dev[i] has taps, which the module feeds (nfb_vlan_frame()). @sent,
 * @bytes, @dropped: what the devices count once the bulk is handed on
 * (nfb_vlan_tally()).
 */
struct nfb_vlan_chain {
	struct net_device	*dev[NF_FLOW_TABLE_ENCAP_MAX];
	int			n;
	unsigned int		nit;
	unsigned int		sent;
	unsigned int		bytes;
	unsigned int		dropped;
};

/*
 * Not a fallback: a device the module stands in for is down. Its packets
 * are dropped and counted as dev_down, as for a bulk's own device: through
 * it they would only meet dev_queue_xmit()'s drop on a device that is not
 * up, and, on the way there, a neighbour being resolved (its neighbours
 * went down with it), which is not why they do not leave.
 */
#define NFB_STAND_IN_DOWN	((enum nfb_fallback_reason)(__NFB_FALLBACK_MAX + 1))

/*
 * Whether the module can stand in for @d, a device it does not transmit
 * on: up, no egress hook, one queue and no qdisc. __NFB_FALLBACK_MAX if
 * it can, else why not (NFB_STAND_IN_DOWN: down). Taps on @d do not keep
 * it from standing in: the module feeds them as @d's transmit would
 * (nfb_vlan_frame(), and nfb_push_list() for a PPP device).
 */
static enum nfb_fallback_reason nfb_stand_in_ok(struct net_device *d)
{
	struct Qdisc *q;

	if (!netif_running(d))
		return NFB_STAND_IN_DOWN;
	if (nfb_dev_has_egress_hooks(d))
		return NFB_FALLBACK_EGRESS_HOOK;
	q = rcu_dereference_bh(netdev_get_tx_queue(d, 0)->qdisc);
	if (d->real_num_tx_queues != 1 || q->enqueue)
		return NFB_FALLBACK_QDISC;
	return __NFB_FALLBACK_MAX;
}

/*
 * Also a VLAN device without reorder_hdr is gone through: its header
 * (vlan_dev_hard_header()) carries the tag in the frame its taps see.
 */
static enum nfb_fallback_reason nfb_vlan_chain(struct net_device *top,
					       struct net_device *real,
					       struct nfb_vlan_chain *c)
{
#if IS_ENABLED(CONFIG_VLAN_8021Q)
	struct net_device *d = top;
	enum nfb_fallback_reason r;

	c->nit = 0;
	for (c->n = 0; is_vlan_dev(d); d = vlan_dev_priv(d)->real_dev) {
		if (c->n == NF_FLOW_TABLE_ENCAP_MAX ||
		    !(vlan_dev_priv(d)->flags & VLAN_FLAG_REORDER_HDR))
			return NFB_FALLBACK_NEIGH;
		r = nfb_stand_in_ok(d);
		if (r != __NFB_FALLBACK_MAX)
			return r;
		if (dev_nit_active(d))
			c->nit |= BIT(c->n);
		c->dev[c->n++] = d;
	}
	if (d == real && c->n)
		return __NFB_FALLBACK_MAX;
#endif
	return NFB_FALLBACK_NEIGH;
}

/*
 * The frame a packet of a VLAN stand-in bulk leaves with, built as the
 * stock path builds it on its way through the VLAN devices of @c, whose
 * taps each see it as that device's transmit (xmit_one()) shows it to
 * them: first the Ethernet header @eth, the top device's address and the
 * network protocol (vlan_dev_hard_header() with reorder_hdr); then for
 * each device, innermost first, the tag the device above left in vlan_tci
 * moved into the frame (validate_xmit_vlan(): a VLAN device offloads no
 * tag), the device's taps, with skb->dev that device, and its own tag with
 * the priority bits of its egress map into vlan_tci
 * (vlan_dev_hard_start_xmit()). A tap keeps a clone that shares the data:
 * a tag moved into the frame after it copies the header first
 * (skb_cow_head() in __vlan_insert_tag()), as in the stack. The skb's data
 * starts at its network header; skb->dev is @real again at the end.
 */
static enum nfb_drop_reason
nfb_vlan_frame(struct sk_buff *skb, const struct nfb_vlan_chain *c,
	       const struct ethhdr *eth, struct net_device *real)
{
#if IS_ENABLED(CONFIG_VLAN_8021Q)
	const struct vlan_dev_priv *v;
	unsigned int hh_len = ETH_HLEN + (c->n - 1) * VLAN_HLEN;
	int i;
	u16 tci;

	__skb_pull(skb, skb_network_offset(skb));
	if (unlikely(skb_headroom(skb) < hh_len) && skb_cow_head(skb, hh_len))
		return NFB_DROP_NOMEM;
	memcpy(__skb_push(skb, ETH_HLEN), eth, ETH_HLEN);
	skb_reset_mac_header(skb);
	for (i = 0; i < c->n; i++) {
		if (i) {
			if (__vlan_insert_tag(skb, skb->vlan_proto,
					      skb_vlan_tag_get(skb)))
				return NFB_DROP_NOMEM;
			skb->protocol = skb->vlan_proto;
			__vlan_hwaccel_clear_tag(skb);
		}
		if (c->nit & BIT(i)) {
			skb->dev = c->dev[i];
			dev_queue_xmit_nit(skb, c->dev[i]);
		}
		v = vlan_dev_priv(c->dev[i]);
		tci = v->vlan_id |
		      vlan_dev_get_egress_qos_mask(c->dev[i], skb->priority);
		__vlan_hwaccel_put_tag(skb, v->vlan_proto, tci);
	}
	skb->dev = real;
#endif
	return NFB_DROP_NONE;
}

/*
 * The length a VLAN stand-in bulk's packet @skb had when handed on to the
 * real device, its last tag in vlan_tci: validate_xmit_vlan() may have
 * moved that tag into the frame since.
 */
static __always_inline unsigned int nfb_vlan_len(const struct sk_buff *skb)
{
	return skb->len - (skb_vlan_tag_present(skb) ? 0 : VLAN_HLEN);
}

/*
 * What the VLAN devices of @c count for a packet of their bulk once the
 * real device's transmit returned @rc, as vlan_dev_hard_start_xmit()
 * counts what dev_queue_xmit() returns: taken (NET_XMIT_SUCCESS or
 * NET_XMIT_CN: sent, or queued or put back in the real device's qdisc) in
 * tx_packets and tx_bytes, else in tx_dropped. @len: nfb_vlan_len(). A GSO
 * packet that had to be segmented for the real device counts as its
 * segments, which the stock path counts as one packet. @c NULL: not a
 * VLAN stand-in bulk.
 */
static void nfb_vlan_tally(struct nfb_vlan_chain *c, unsigned int len, int rc)
{
	if (likely(!c))
		return;
	if (rc == NET_XMIT_SUCCESS || rc == NET_XMIT_CN) {
		c->sent++;
		c->bytes += len;
	} else {
		c->dropped++;
	}
}

/*
 * The VLAN devices' own transmit counters for a bulk, as the stock path
 * counts them through each device: each device counts the frame with its
 * Ethernet header and less the tags of the devices below it (in vlan_tci
 * or moved into the frame later); c->bytes has every tag but the last.
 */
static void nfb_vlan_chain_count(struct nfb_vlan_chain *c)
{
#if IS_ENABLED(CONFIG_VLAN_8021Q)
	struct vlan_pcpu_stats __percpu *pst;
	struct vlan_pcpu_stats *st;
	int i;

	for (i = 0; i < c->n; i++) {
		pst = vlan_dev_priv(c->dev[i])->vlan_pcpu_stats;
		if (c->dropped)
			this_cpu_add(pst->tx_dropped, c->dropped);
		if (!c->sent)
			continue;
		st = this_cpu_ptr(pst);
		u64_stats_update_begin(&st->syncp);
		u64_stats_add(&st->tx_packets, c->sent);
		u64_stats_add(&st->tx_bytes,
			      c->bytes - c->sent * VLAN_HLEN * (c->n - 1 - i));
		u64_stats_update_end(&st->syncp);
	}
#endif
}

/*
 * The encapsulation of every packet of a bulk's list @skb, pushed before
 * the bulk's link-layer header: the flow's (from 6.19) or the PPPoE
 * session's of a PPP device stood in for (6.1 / 6.12). A packet that
 * cannot take it is dropped and counted. Returns the list. @tap: the PPP
 * device, while it has taps: they see each packet as ppp_start_xmit()'s
 * caller shows it to them, the network packet with skb->dev the PPP
 * device, before the headers go on (the headers then copy the shared
 * header first, skb_cow_head(), as pppoe_xmit() does). Out of the transmit
 * loop, which stays as it is for every other bulk.
 */
static noinline struct sk_buff *nfb_push_list(struct sk_buff *skb,
					      struct nfb_net *nn,
					      struct net_device *tap,
					      unsigned int hh_len)
{
	struct sk_buff *head = NULL, **tail = &head, *next;
	struct net_device *dev;
	enum nfb_drop_reason err;

	for (; skb; skb = next) {
		next = skb->next;
		if (unlikely(tap)) {
			dev = skb->dev;
			skb_mark_not_on_list(skb);
			__skb_pull(skb, skb_network_offset(skb));
			skb_reset_mac_header(skb);
			skb->dev = tap;
			dev_queue_xmit_nit(skb, tap);
			skb->dev = dev;
		}
		err = nfb_encap_push(skb, NFB_CB(skb), hh_len);
		if (unlikely(err != NFB_DROP_NONE)) {
			skb_mark_not_on_list(skb);
			nfb_count_drop(nn, err);
			kfree_skb(skb);
			continue;
		}
		*tail = skb;
		tail = &skb->next;
	}
	*tail = NULL;
	return head;
}

/*
 * 6.1 / 6.12, nf_flow_bulk_pppoe_direct (fastpath.c, nfb_ppp_out()): the
 * PPP device @ppp a bulk stands in for, checked per bulk. It must be up,
 * with no qdisc and no egress hook, and still be the PPPoE session the
 * flow was taken for (cb's encap[0]) on @real: the session's peer, its
 * address copied to @ha, is what pppoe_xmit() would send to. Otherwise
 * the packets go through the PPP device (the reason is returned). The
 * path is asked for as path discovery asked for it: under RCU, which
 * ppp_fill_forward_path() needs.
 */
static noinline enum nfb_fallback_reason
nfb_ppp_session(struct net_device *ppp, const struct net_device *real,
		const struct nfb_cb *cb, u8 *ha)
{
	struct net_device_path_stack stack;
	const struct net_device_path *path;
	enum nfb_fallback_reason r;

	r = nfb_stand_in_ok(ppp);
	if (r != __NFB_FALLBACK_MAX)
		return r;
	if (nfb_fill_forward_path(ppp, &stack) ||
	    stack.num_paths != 2)
		return NFB_FALLBACK_NEIGH;
	path = &stack.path[0];
	if (path->type != DEV_PATH_PPPOE ||
	    path->encap.proto != htons(ETH_P_PPP_SES) ||
	    path->encap.id != cb->encap[0].id ||
	    cb->encap[0].proto != htons(ETH_P_PPP_SES) ||
	    stack.path[1].type != DEV_PATH_ETHERNET ||
	    stack.path[1].dev != real)
		return NFB_FALLBACK_NEIGH;
	ether_addr_copy(ha, path->encap.h_dest);
	return __NFB_FALLBACK_MAX;
}

/*
 * The PPP device's transmit counters, which ppp_send_frame() counts for
 * each packet it sends: the packet from its PPP protocol field on, less
 * that field. @skb: the bulk's list, its PPPoE and PPP headers pushed.
 * Only where the PPP unit keeps them in the core's per-CPU counters
 * (6.1.192, 6.12.118); before that (6.12.95) they are private to
 * ppp_generic.c, dev->tstats is not allocated, and the packets go
 * uncounted there, as the stock hook of 6.19 leaves them.
 */
static void nfb_ppp_count(struct net_device *ppp, const struct sk_buff *skb)
{
	unsigned int n = 0, bytes = 0;

	if (ppp->pcpu_stat_type != NETDEV_PCPU_STAT_TSTATS || !ppp->tstats) {
		pr_notice_once("%s keeps its transmit counters to itself on this kernel: with nf_flow_bulk_pppoe_direct, what is sent for it is not counted there\n",
			       ppp->name);
		return;
	}
	for (; skb; skb = skb->next) {
		bytes += skb->len - PPPOE_SES_HLEN;
		n++;
	}
	if (n)
		dev_sw_netstats_tx_add(ppp, n, bytes);
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

