/* SPDX-License-Identifier: GPL-2.0 */
/*
 * nf_flow_bulk: the headers the bulk transmit pushes (xmit.c): the link
 * layer's, a flow's VLAN tags and PPPoE session (from 6.19, and for the
 * PPP device the module stands in for on 6.1 and 6.12). Included by xmit.c
 * alone: these helpers run per packet and inline into the transmit, which
 * a function in another object file would not (a lost inline costs the
 * datapath 45 to 75 instructions per packet).
 */
#ifndef _NFB_PUSH_H
#define _NFB_PUSH_H

#include <linux/etherdevice.h>
#include <linux/if_pppox.h>
#include <linux/if_vlan.h>
#include <linux/netdevice.h>
#include <linux/ppp_defs.h>

#include "nfb.h"

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

#endif /* _NFB_PUSH_H */
