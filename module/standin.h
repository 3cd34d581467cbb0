/* SPDX-License-Identifier: GPL-2.0 */
/*
 * nf_flow_bulk: the devices the bulk transmit stands in for on 6.1 and
 * 6.12 (fastpath.c chose them: nfb_vlan_out(), nfb_ppp_out()): whether it
 * can, per bulk (up, no qdisc, no egress hook; the PPPoE session still the
 * flow's), the frames their taps see, and the counters their own transmit
 * would keep. Included by xmit.c alone, as push.h: the checks inline into
 * the bulk transmit.
 */
#ifndef _NFB_STANDIN_H
#define _NFB_STANDIN_H

#include <linux/etherdevice.h>
#include <linux/if_pppox.h>
#include <linux/if_vlan.h>
#include <linux/netdevice.h>

#include "nfb.h"
#include "push.h"

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

#endif /* _NFB_STANDIN_H */
