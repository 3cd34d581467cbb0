/* SPDX-License-Identifier: GPL-2.0 */
/*
 * nf_flow_bulk: the encapsulation of a packet the hook receives (fastpath.c):
 * VLAN tags, a PPPoE session and, from 6.19, an IPIP / IP6IP6 tunnel's outer
 * header, parsed as the stock hook parses it and popped before the flow's
 * work; and the tunnel header pushed back on the way out. The VLAN tags and
 * PPPoE session the transmit pushes are push.h's. Included by fastpath.c
 * alone: these helpers run per packet and inline into the hook, which a
 * function in another object file would not (a lost inline costs the
 * datapath 45 to 75 instructions per packet).
 */
#ifndef _NFB_ENCAP_H
#define _NFB_ENCAP_H

#include <linux/if_pppox.h>
#include <linux/if_vlan.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/ppp_defs.h>
#include <net/ip.h>
#include <net/ip_tunnels.h>
#include <net/ipv6.h>
#include <net/netfilter/nf_flow_table.h>

#include "nfb.h"

/* What precedes the IP header of a received packet. */
struct nfb_rx {
	__be16	proto;		/* ETH_P_IP or ETH_P_IPV6 */
	u8	offset;		/* in-packet encapsulation bytes */
	u8	layers;		/* encapsulation layers, tag in vlan_tci included */
	u8	type;		/* enum nfb_encap */
	/* Taken with the packet: its fraglist GRO segments (nfb_unbundle()). */
	struct sk_buff	*segs;
	unsigned int	nsegs;
	/*
	 * How far the packet's order key is known, and the key: the hash of
	 * the addresses (NFB_ORDER_ADDR, not yet reduced) or the whole key
	 * (NFB_ORDER_FLOW, nfb_order_key()). A declined packet sends the
	 * queued packets it may follow ahead of itself (nfb_flush_local()).
	 */
	u8		scope;		/* enum nfb_order_scope */
	u32		order;
};

/*
 * Find the IP packet behind the encapsulation, as the stock hook's
 * nf_flow_skb_encap_protocol() does, and validate what it does not: a
 * PPPoE header with a wrong version, type, code or length is declined
 * (the stock hook would forward it). Nothing is modified.
 *
 * The stock hook reads an in-packet 802.1Q tag through the MAC header and
 * pops it at skb->data: both agree only when the network header follows
 * the Ethernet header and data points at it, which the receive path
 * guarantees; anything else is declined.
 */
static int nfb_parse_encap(struct sk_buff *skb, struct nfb_rx *rx)
{
	const struct vlan_ethhdr *veth;
	const struct pppoe_hdr *ph;
	bool tag = skb_vlan_tag_present(skb);
	unsigned int len;

	rx->proto = skb->protocol;
	rx->offset = 0;
	rx->layers = tag;
	rx->type = tag ? NFB_ENCAP_VLAN : NFB_ENCAP_NONE;

	switch (skb->protocol) {
	case htons(ETH_P_IP):
	case htons(ETH_P_IPV6):
		return 0;
	case htons(ETH_P_8021Q):
	case htons(ETH_P_PPP_SES):
		break;
	default:
		return NFB_DECLINE_NOT_IP;
	}

	if (unlikely(!skb_mac_header_was_set(skb) ||
		     skb_network_offset(skb) != 0 ||
		     skb_network_header(skb) - skb_mac_header(skb) != ETH_HLEN))
		return NFB_DECLINE_ENCAP;

	if (skb->protocol == htons(ETH_P_8021Q)) {
		if (!pskb_may_pull(skb, VLAN_HLEN))
			return NFB_DECLINE_ENCAP_HEADER;
		veth = (const struct vlan_ethhdr *)skb_mac_header(skb);
		rx->proto = veth->h_vlan_encapsulated_proto;
		rx->offset = VLAN_HLEN;
		rx->layers++;
		rx->type = tag ? NFB_ENCAP_VLAN2 : NFB_ENCAP_VLAN;
	} else {
		if (!pskb_may_pull(skb, PPPOE_SES_HLEN))
			return NFB_DECLINE_ENCAP_HEADER;
		ph = (const struct pppoe_hdr *)skb_network_header(skb);
		len = ntohs(ph->length);
		if (ph->ver != 1 || ph->type != 1 || ph->code != 0 ||
		    len < PPPOE_SES_HLEN - sizeof(*ph) ||
		    len > skb->len - sizeof(*ph))
			return NFB_DECLINE_PPPOE;
		switch (*(const __be16 *)(ph + 1)) {
		case htons(PPP_IP):
			rx->proto = htons(ETH_P_IP);
			break;
		case htons(PPP_IPV6):
			rx->proto = htons(ETH_P_IPV6);
			break;
		default:
			return NFB_DECLINE_PPP_PROTO;
		}
		rx->offset = PPPOE_SES_HLEN;
		rx->layers++;
		rx->type = tag ? NFB_ENCAP_VLAN_PPPOE : NFB_ENCAP_PPPOE;
	}

	if (rx->proto != htons(ETH_P_IP) && rx->proto != htons(ETH_P_IPV6))
		return NFB_DECLINE_ENCAP;
	return 0;
}

/* The tuple's encap[], as nf_flow_tuple_encap() fills it. */
static void nfb_tuple_encap(const struct sk_buff *skb,
			    struct flow_offload_tuple *tuple)
{
	const struct vlan_ethhdr *veth;
	const struct pppoe_hdr *ph;
	int i = 0;

	if (skb_vlan_tag_present(skb)) {
		tuple->encap[i].id = skb_vlan_tag_get(skb);
		tuple->encap[i].proto = skb->vlan_proto;
		i++;
	}
	switch (skb->protocol) {
	case htons(ETH_P_8021Q):
		veth = (const struct vlan_ethhdr *)skb_mac_header(skb);
		tuple->encap[i].id = ntohs(veth->h_vlan_TCI);
		tuple->encap[i].proto = skb->protocol;
		break;
	case htons(ETH_P_PPP_SES):
		ph = (const struct pppoe_hdr *)skb_network_header(skb);
		tuple->encap[i].id = ntohs(ph->sid);
		tuple->encap[i].proto = skb->protocol;
		break;
	}
}

/*
 * Remove the receive encapsulation, as nf_flow_encap_pop() does: the tag
 * in vlan_tci, then the in-packet layer, after which the network header
 * is the IP header. nf_flow_encap_pop() pops the flow's encap_num
 * layers; the lookup matched encap[] entry by entry and no layer has a
 * zero protocol, so that is the number of layers @rx found. The pull keeps
 * a CHECKSUM_COMPLETE sum right, as the 6.19 hook's does (6.1 and 6.12
 * left it covering the popped bytes).
 */
static void nfb_encap_pop(struct sk_buff *skb, const struct nfb_rx *rx)
{
	struct vlan_hdr *vhdr;

	if (skb_vlan_tag_present(skb))
		__vlan_hwaccel_clear_tag(skb);
	switch (skb->protocol) {
	case htons(ETH_P_8021Q):
		vhdr = (struct vlan_hdr *)skb->data;
		skb_pull_rcsum(skb, VLAN_HLEN);
		vlan_set_encap_proto(skb, vhdr);
		skb_reset_network_header(skb);
		break;
	case htons(ETH_P_PPP_SES):
		skb->protocol = rx->proto;
		skb_pull_rcsum(skb, PPPOE_SES_HLEN);
		skb_reset_network_header(skb);
		break;
	}
}

/*
 * 6.19 on, nf_flow_ip_tunnel_pop(): the outer header of a packet that came
 * in through an IPIP / IP6IP6 tunnel, once the encapsulation before it is
 * gone. As the encapsulation's pop, the pull keeps a CHECKSUM_COMPLETE
 * sum right.
 */
static void nfb_tunnel_pop(struct sk_buff *skb, unsigned int hlen)
{
	skb_pull_rcsum(skb, hlen);
	skb_reset_network_header(skb);
}

/*
 * 6.19 on, a flow that leaves through an IPIP / IP6IP6 tunnel: the outer
 * header, as nf_flow_tunnel_ipip_push() / nf_flow_tunnel_ip6ip6_push()
 * put it on, after the packet's own work (NAT, TTL). @dst is the flow's
 * route, the tunnel's underlay one; the headroom was made before the
 * packet was taken (nfb_tunnel_headroom()), which also left the header
 * uncloned, so neither can fail here. What the stock push does besides,
 * skb_dst_update_pmtu_no_confirm() on the route skb_scrub_packet() has
 * just dropped, is nothing; and IP6CB()->nhoff is in the control block
 * the transmit path owns from here (qdisc_skb_cb, then ours), which
 * nothing reads before the driver.
 */
static unsigned int nfb_tunnel_headroom(const struct dst_entry *dst,
					unsigned int hlen)
{
	return hlen + LL_RESERVED_SPACE(dst->dev) + dst->header_len;
}

/* What both pushes do first, then room for the outer header of @hlen. */
static int nfb_tunnel_prepare(struct sk_buff *skb, int gso_type, u8 ipproto,
			      unsigned int hlen)
{
	int err;

	err = iptunnel_handle_offloads(skb, gso_type);
	if (unlikely(err))
		return err;
	skb_set_inner_ipproto(skb, ipproto);
	skb_scrub_packet(skb, true);
	skb_push(skb, hlen);
	skb_reset_network_header(skb);
	return 0;
}

static int nfb_ipip_push(struct net *net, struct sk_buff *skb,
			 const struct flow_offload_tuple *other,
			 const struct dst_entry *dst)
{
	struct iphdr *iph = ip_hdr(skb);
	u8 tos = iph->tos, ttl = iph->ttl;
	__be16 frag_off = iph->frag_off;
	int err;

	err = nfb_tunnel_prepare(skb, SKB_GSO_IPXIP4, IPPROTO_IPIP,
				 sizeof(*iph));
	if (unlikely(err))
		return err;
	skb_clear_hash_if_not_l4(skb);
	iph = ip_hdr(skb);
	iph->version	= 4;
	iph->ihl	= sizeof(*iph) >> 2;
	iph->frag_off	= ip_mtu_locked(dst) ? 0 : frag_off;
	iph->protocol	= IPPROTO_IPIP;
	iph->tos	= tos;
	iph->daddr	= nfb_tuple_tun_far4(other);
	iph->saddr	= nfb_tuple_tun_near4(other);
	iph->ttl	= ttl;
	iph->tot_len	= htons(skb->len);
	__ip_select_ident(net, iph, skb_shinfo(skb)->gso_segs ?: 1);
	ip_send_check(iph);
	return 0;
}

static int nfb_ip6ip6_push(struct net *net, struct sk_buff *skb,
			   const struct flow_offload_tuple *other)
{
	struct ipv6hdr *ip6h = ipv6_hdr(skb);
	u8 dsfield = ipv6_get_dsfield(ip6h), hop_limit = ip6h->hop_limit;
	struct flowi6 fl6 = {
		.daddr = *nfb_tuple_tun_far6(other),
		.saddr = *nfb_tuple_tun_near6(other),
		.flowi6_proto = IPPROTO_IPV6,
	};
	int err;

	err = nfb_tunnel_prepare(skb, SKB_GSO_IPXIP6, IPPROTO_IPV6,
				 sizeof(*ip6h));
	if (unlikely(err))
		return err;
	ip6h = ipv6_hdr(skb);
	ip6_flow_hdr(ip6h, dsfield,
		     ip6_make_flowlabel(net, skb, fl6.flowlabel, true, &fl6));
	ip6h->hop_limit = hop_limit;
	ip6h->nexthdr = IPPROTO_IPV6;
	ip6h->daddr = fl6.daddr;
	ip6h->saddr = fl6.saddr;
	ip6h->payload_len = htons(skb->len - sizeof(*ip6h));
	return 0;
}

#endif /* _NFB_ENCAP_H */
