/* SPDX-License-Identifier: GPL-2.0 */
/*
 * nf_flow_bulk: a flow's NAT on a taken packet, IPv4 and IPv6, as the stock
 * hook applies it: the ports by the kernel's nf_flow_snat_port() and
 * nf_flow_dnat_port(), the addresses here (nf_flow_nat_ip() and
 * nf_flow_nat_ipv6() are static in the kernel). Included by fastpath.c
 * alone, as encap.h.
 */
#ifndef _NFB_NAT_H
#define _NFB_NAT_H

#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <net/netfilter/nf_flow_table.h>

#include "nfb.h"

/* IPv4 NAT: the address part of nf_flow_nat_ip(), static in the kernel. */
static void nfb_nat_ip_l4(struct sk_buff *skb, const struct iphdr *iph,
			  unsigned int thoff, __be32 addr, __be32 new_addr)
{
	struct tcphdr *tcph;
	struct udphdr *udph;

	switch (iph->protocol) {
	case IPPROTO_TCP:
		tcph = (void *)(skb_network_header(skb) + thoff);
		inet_proto_csum_replace4(&tcph->check, skb, addr, new_addr,
					 true);
		break;
	case IPPROTO_UDP:
		udph = (void *)(skb_network_header(skb) + thoff);
		if (udph->check || skb->ip_summed == CHECKSUM_PARTIAL) {
			inet_proto_csum_replace4(&udph->check, skb, addr,
						 new_addr, true);
			if (!udph->check)
				udph->check = CSUM_MANGLED_0;
		}
		break;
	}
}

static void nfb_snat_ip(const struct flow_offload *flow, struct sk_buff *skb,
			struct iphdr *iph, unsigned int thoff,
			enum flow_offload_tuple_dir dir)
{
	__be32 addr, new_addr;

	if (dir == FLOW_OFFLOAD_DIR_ORIGINAL) {
		addr = iph->saddr;
		new_addr = flow->tuplehash[FLOW_OFFLOAD_DIR_REPLY].tuple.dst_v4.s_addr;
		iph->saddr = new_addr;
	} else {
		addr = iph->daddr;
		new_addr = flow->tuplehash[FLOW_OFFLOAD_DIR_ORIGINAL].tuple.src_v4.s_addr;
		iph->daddr = new_addr;
	}
	csum_replace4(&iph->check, addr, new_addr);
	nfb_nat_ip_l4(skb, iph, thoff, addr, new_addr);
}

static void nfb_dnat_ip(const struct flow_offload *flow, struct sk_buff *skb,
			struct iphdr *iph, unsigned int thoff,
			enum flow_offload_tuple_dir dir)
{
	__be32 addr, new_addr;

	if (dir == FLOW_OFFLOAD_DIR_ORIGINAL) {
		addr = iph->daddr;
		new_addr = flow->tuplehash[FLOW_OFFLOAD_DIR_REPLY].tuple.src_v4.s_addr;
		iph->daddr = new_addr;
	} else {
		addr = iph->saddr;
		new_addr = flow->tuplehash[FLOW_OFFLOAD_DIR_ORIGINAL].tuple.dst_v4.s_addr;
		iph->saddr = new_addr;
	}
	csum_replace4(&iph->check, addr, new_addr);
	nfb_nat_ip_l4(skb, iph, thoff, addr, new_addr);
}

static __always_inline void nfb_nat_ip(const struct flow_offload *flow,
				       struct sk_buff *skb,
		       unsigned int thoff, enum flow_offload_tuple_dir dir,
		       struct iphdr *iph)
{
	if (test_bit(NF_FLOW_SNAT, &flow->flags)) {
		nf_flow_snat_port(flow, skb, thoff, iph->protocol, dir);
		nfb_snat_ip(flow, skb, iph, thoff, dir);
	}
	if (test_bit(NF_FLOW_DNAT, &flow->flags)) {
		nf_flow_dnat_port(flow, skb, thoff, iph->protocol, dir);
		nfb_dnat_ip(flow, skb, iph, thoff, dir);
	}
}

/* IPv6 NAT: the address part of nf_flow_nat_ipv6(). */
static void nfb_nat_ipv6_l4(struct sk_buff *skb, const struct ipv6hdr *ip6h,
			    unsigned int thoff, const struct in6_addr *addr,
			    const struct in6_addr *new_addr)
{
	struct tcphdr *tcph;
	struct udphdr *udph;

	switch (ip6h->nexthdr) {
	case IPPROTO_TCP:
		tcph = (void *)(skb_network_header(skb) + thoff);
		inet_proto_csum_replace16(&tcph->check, skb, addr->s6_addr32,
					  new_addr->s6_addr32, true);
		break;
	case IPPROTO_UDP:
		udph = (void *)(skb_network_header(skb) + thoff);
		if (udph->check || skb->ip_summed == CHECKSUM_PARTIAL) {
			inet_proto_csum_replace16(&udph->check, skb,
						  addr->s6_addr32,
						  new_addr->s6_addr32, true);
			if (!udph->check)
				udph->check = CSUM_MANGLED_0;
		}
		break;
	}
}

static void nfb_snat_ipv6(const struct flow_offload *flow,
			  struct sk_buff *skb, struct ipv6hdr *ip6h,
			  unsigned int thoff, enum flow_offload_tuple_dir dir)
{
	struct in6_addr addr, new_addr;

	if (dir == FLOW_OFFLOAD_DIR_ORIGINAL) {
		addr = ip6h->saddr;
		new_addr = flow->tuplehash[FLOW_OFFLOAD_DIR_REPLY].tuple.dst_v6;
		ip6h->saddr = new_addr;
	} else {
		addr = ip6h->daddr;
		new_addr = flow->tuplehash[FLOW_OFFLOAD_DIR_ORIGINAL].tuple.src_v6;
		ip6h->daddr = new_addr;
	}
	nfb_nat_ipv6_l4(skb, ip6h, thoff, &addr, &new_addr);
}

static void nfb_dnat_ipv6(const struct flow_offload *flow,
			  struct sk_buff *skb, struct ipv6hdr *ip6h,
			  unsigned int thoff, enum flow_offload_tuple_dir dir)
{
	struct in6_addr addr, new_addr;

	if (dir == FLOW_OFFLOAD_DIR_ORIGINAL) {
		addr = ip6h->daddr;
		new_addr = flow->tuplehash[FLOW_OFFLOAD_DIR_REPLY].tuple.src_v6;
		ip6h->daddr = new_addr;
	} else {
		addr = ip6h->saddr;
		new_addr = flow->tuplehash[FLOW_OFFLOAD_DIR_ORIGINAL].tuple.dst_v6;
		ip6h->saddr = new_addr;
	}
	nfb_nat_ipv6_l4(skb, ip6h, thoff, &addr, &new_addr);
}

static __always_inline void nfb_nat_ipv6(const struct flow_offload *flow,
					 struct sk_buff *skb,
			 enum flow_offload_tuple_dir dir, struct ipv6hdr *ip6h)
{
	unsigned int thoff = sizeof(*ip6h);

	if (test_bit(NF_FLOW_SNAT, &flow->flags)) {
		nf_flow_snat_port(flow, skb, thoff, ip6h->nexthdr, dir);
		nfb_snat_ipv6(flow, skb, ip6h, thoff, dir);
	}
	if (test_bit(NF_FLOW_DNAT, &flow->flags)) {
		nf_flow_dnat_port(flow, skb, thoff, ip6h->nexthdr, dir);
		nfb_dnat_ipv6(flow, skb, ip6h, thoff, dir);
	}
}

#endif /* _NFB_NAT_H */
