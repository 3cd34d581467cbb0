// SPDX-License-Identifier: GPL-2.0
/*
 * The benchmark's XDP peer (issue 24): what the kernel's
 * samples/bpf/xdp_fwd_kern.c does (David Ahern's xdp_fwd: a FIB lookup,
 * TTL or hop limit, MAC rewrite, redirect), on the routers' receive
 * devices, so that the fastest stock software forwarder is measured on the
 * same links as the module.
 *
 * One difference from the sample: bpf_redirect() to the FIB's egress
 * device instead of bpf_redirect_map() through a devmap the sample's
 * loader fills. Both enqueue to the same per-CPU bulk queue
 * (dev_xdp_enqueue() / dev_map_enqueue(), flushed once per NAPI poll in
 * xdp_do_flush()), and without a map iproute2 can load the program
 * alone (ip link set dev DEV xdpdrv obj xdp_fwd.o sec xdp).
 *
 * What it does not do, and the module keeps: conntrack state, NAT, nft
 * policy (the forward chain never sees the packets), the egress qdisc
 * (ndo_xdp_xmit bypasses it), tcpdump on the receive device (AF_PACKET
 * sees nothing that is redirected), and fragments / IP options checks
 * beyond what bpf_fib_lookup() itself refuses.
 *
 * xdp_pass: XDP_PASS only. On veth a redirected frame needs the peer's
 * NAPI, which an XDP program on the peer turns on; the sink's receive
 * device gets this one.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#ifndef AF_INET
#define AF_INET 2
#endif
#ifndef AF_INET6
#define AF_INET6 10
#endif

#define IPV6_FLOWINFO_MASK bpf_htonl(0x0FFFFFFF)

/* include/net/ip.h */
static __always_inline void ip_decrease_ttl(struct iphdr *iph)
{
	__u32 check = iph->check;

	check += bpf_htons(0x0100);
	iph->check = (__u16)(check + (check >= 0xFFFF));
	iph->ttl--;
}

SEC("xdp")
int xdp_fwd(struct xdp_md *ctx)
{
	void *data_end = (void *)(long)ctx->data_end;
	void *data = (void *)(long)ctx->data;
	struct bpf_fib_lookup fib = {};
	struct ethhdr *eth = data;
	struct ipv6hdr *ip6h;
	struct iphdr *iph;
	int rc;

	if ((void *)(eth + 1) > data_end)
		return XDP_DROP;

	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		iph = (void *)(eth + 1);
		if ((void *)(iph + 1) > data_end)
			return XDP_DROP;
		/* TTL expiry and options: the stack sends the ICMP error. */
		if (iph->ttl <= 1 || iph->ihl != 5)
			return XDP_PASS;
		fib.family = AF_INET;
		fib.tos = iph->tos;
		fib.l4_protocol = iph->protocol;
		fib.tot_len = bpf_ntohs(iph->tot_len);
		fib.ipv4_src = iph->saddr;
		fib.ipv4_dst = iph->daddr;
	} else if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		ip6h = (void *)(eth + 1);
		if ((void *)(ip6h + 1) > data_end)
			return XDP_DROP;
		if (ip6h->hop_limit <= 1)
			return XDP_PASS;
		fib.family = AF_INET6;
		fib.flowinfo = *(__be32 *)ip6h & IPV6_FLOWINFO_MASK;
		fib.l4_protocol = ip6h->nexthdr;
		fib.tot_len = bpf_ntohs(ip6h->payload_len);
		__builtin_memcpy(fib.ipv6_src, &ip6h->saddr, sizeof(fib.ipv6_src));
		__builtin_memcpy(fib.ipv6_dst, &ip6h->daddr, sizeof(fib.ipv6_dst));
	} else {
		return XDP_PASS;
	}
	fib.ifindex = ctx->ingress_ifindex;

	/*
	 * Anything but a resolved route with a resolved neighbour (no
	 * neighbour yet, forwarding off, a local or blackhole route, a
	 * packet over the egress MTU) goes to the stack, which resolves,
	 * answers or drops it as it would without this program.
	 */
	rc = bpf_fib_lookup(ctx, &fib, sizeof(fib), 0);
	if (rc != BPF_FIB_LKUP_RET_SUCCESS)
		return XDP_PASS;

	/*
	 * The headers again, bounds checked: the verifier does not carry
	 * "iph is NULL, so ip6h is not" across the branches above.
	 */
	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		iph = (void *)(eth + 1);
		if ((void *)(iph + 1) > data_end)
			return XDP_DROP;
		ip_decrease_ttl(iph);
	} else {
		ip6h = (void *)(eth + 1);
		if ((void *)(ip6h + 1) > data_end)
			return XDP_DROP;
		ip6h->hop_limit--;
	}
	__builtin_memcpy(eth->h_dest, fib.dmac, ETH_ALEN);
	__builtin_memcpy(eth->h_source, fib.smac, ETH_ALEN);
	return bpf_redirect(fib.ifindex, 0);
}

char _license[] SEC("license") = "GPL";
