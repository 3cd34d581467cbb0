// SPDX-License-Identifier: GPL-2.0
/*
 * nf_flow_bulk: the ingress hook. It runs right before the stock flowtable
 * hook (same priority, registered in front of it: attach.c), repeats the
 * stock lookup and checks for the cases it implements and either takes the
 * packet (NF_STOLEN, queued for bulk transmit) or declines it (NF_ACCEPT):
 * a declined packet reaches the stock flowtable hook next, unchanged, so
 * the stock code stays the reference behaviour for everything this file
 * does not handle, including the teardown on TCP FIN/RST and on a stale
 * route.
 *
 * The order of checks follows nf_flow_offload_ip_hook() and
 * nf_flow_offload_ipv6_hook() of net/netfilter/nf_flow_table_ip.c (same in
 * 6.1 and 6.12): header pulls, fragments / options / L4 protocol / TTL,
 * lookup, MTU, TCP flags, dst check; only then is the packet modified.
 *
 * Encapsulation, as the stock hook of 6.1 and 6.12 handles it: one tag in
 * skb->vlan_tci (the core moves the outer 802.1Q or 802.1ad tag there
 * before the ingress hooks run), then at most one more layer in the
 * packet, an 802.1Q tag or a PPPoE session header. All of it goes into the
 * tuple's encap[] for the lookup (nf_flow_tuple_encap()) and is popped
 * after the checks (nf_flow_encap_pop()). Transmit encapsulation is not
 * pushed here: on these kernels the route of a flow leaving through a VLAN
 * or PPP device points at that device (FLOW_OFFLOAD_XMIT_NEIGH), which
 * pushes it, and a FLOW_OFFLOAD_XMIT_DIRECT flow (bridge) sends the cached
 * Ethernet header on its cached output device, as nf_flow_queue_xmit()
 * does. From 6.19 the stock hook receives the same way but transmits on
 * the real device and pushes the encapsulation itself: so does the module
 * there (compat.h, nfb_flowtable_pushes_encap(); xmit.c).
 */
#include <linux/etherdevice.h>
#include <linux/hash.h>
#include <linux/if_arp.h>
#include <linux/if_pppox.h>
#include <linux/if_vlan.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/module.h>
#include <linux/ppp_defs.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <net/ip.h>
#include <net/ip6_route.h>
#include <net/ip_tunnels.h>
#include <net/ipv6.h>
#include <net/route.h>
#include <net/netfilter/nf_conntrack_acct.h>
#include <net/netfilter/nf_flow_table.h>

#include "nfb.h"
#include "encap.h"
#include "nat.h"

/* Returned by the per-family handlers when the packet was taken. */
#define NFB_TAKEN	(-1)
/* ... or taken, then dropped and counted (it could not be transmitted). */
#define NFB_DROPPED	(-2)

/*
 * The flowtable entry right after ours on @dev, or NULL when it is not the
 * one we attached to (deleted, re-created elsewhere, another hook in
 * between). The returned flowtable is valid until the hook returns.
 */
static struct nf_flowtable *nfb_next_flowtable(const struct nfb_hook *h,
					       const struct net_device *dev,
					       nf_hookfn **fn)
{
	const struct nf_hook_entries *e;
	unsigned int i;

	e = rcu_dereference(dev->nf_hooks_ingress);
	if (!e)
		return NULL;

	for (i = 0; i + 1 < e->num_hook_entries; i++) {
		if (e->hooks[i].priv != h)
			continue;
		if (e->hooks[i + 1].priv != READ_ONCE(h->ft_cookie) ||
		    !nfb_is_flowtable_hook(e->hooks[i + 1].hook))
			return NULL;
		*fn = e->hooks[i + 1].hook;
		return e->hooks[i + 1].priv;
	}
	return NULL;
}

/*
 * The order key (NFB_ORDER_ADDR_BITS in nfb.h): @addrs is the XOR of the
 * packet's addresses (nfb_order_addrs4/6()), the ports XORed too.
 *
 * The flow part is the product's top bits: a product's bit n depends only
 * on the factor's bits 0..n, so its low bits would leave out the high bits
 * of @all, and flows that differ only there (hosts whose addresses differ
 * in the last byte, with the same ports) would all share the index
 * NFB_ORDER_IDX() takes. The address part is the low bits, which the
 * top bits' users leave alone. XORs keep the key symmetric.
 */
static __always_inline u32 nfb_order_key(u32 addrs, u8 l4proto,
					 __be16 sport, __be16 dport)
{
	u32 all = addrs ^ (__force u16)(sport ^ dport) ^ ((u32)l4proto << 16);

	return (__hash_32(all) & ~NFB_ORDER_ADDR_MASK) |
	       hash_32(addrs, NFB_ORDER_ADDR_BITS);
}

static __always_inline u32 nfb_order_addrs4(const struct iphdr *iph)
{
	return (__force u32)(iph->saddr ^ iph->daddr);
}

static __always_inline u32 nfb_order_addrs6(const struct ipv6hdr *ip6h)
{
	return ipv6_addr_hash(&ip6h->saddr) ^ ipv6_addr_hash(&ip6h->daddr);
}

/*
 * The order scope of an IPv6 packet declined for its extension headers
 * (options or a fragment header; @nhoff: its IPv6 header, from
 * skb->data). Its own addresses (in @rx already) are its flow's unless it
 * is a tunnel's outer packet, which the stock path decapsulates and whose
 * inner packet it then forwards: the inner addresses, when the headers
 * lead to them (an ip6tnl device's encapsulation limit option), else
 * nothing is known. Out of line: only such declines pay for the walk.
 */
static noinline void nfb_order_ext6(const struct sk_buff *skb,
				    unsigned int nhoff, struct nfb_rx *rx)
{
	const struct ipv6hdr *ip6h = (const void *)(skb->data + nhoff);
	u8 nexthdr = ip6h->nexthdr;
	struct frag_hdr _fh, *fh;
	struct ipv6hdr _in6, *in6;
	struct iphdr _in4, *in4;
	__be16 frag_off;
	int off;

	off = ipv6_skip_exthdr(skb, nhoff + sizeof(*ip6h), &nexthdr, &frag_off);
	if (off < 0)
		goto unknown;
	switch (nexthdr) {
	case NEXTHDR_FRAGMENT:
		/* Not the first fragment: what the fragment header carries. */
		fh = skb_header_pointer(skb, off, sizeof(_fh), &_fh);
		if (!fh || fh->nexthdr == IPPROTO_IPV6 ||
		    fh->nexthdr == IPPROTO_IPIP)
			goto unknown;
		return;
	case IPPROTO_IPV6:
		in6 = skb_header_pointer(skb, off, sizeof(_in6), &_in6);
		if (!in6)
			goto unknown;
		rx->order = nfb_order_addrs6(in6);
		return;
	case IPPROTO_IPIP:
		in4 = skb_header_pointer(skb, off, sizeof(_in4), &_in4);
		if (!in4)
			goto unknown;
		rx->order = nfb_order_addrs4(in4);
		return;
	default:
		return;
	}
unknown:
	rx->scope = NFB_ORDER_NS;
}

/*
 * The output device of a flow, referenced by the caller before the hook
 * returns: for FLOW_OFFLOAD_XMIT_NEIGH the route's (@dst, referenced by
 * the caller's dst_hold_safe()), or from 6.19 the real device behind it
 * (nfb_neigh_out_dev()), the cached one for FLOW_OFFLOAD_XMIT_DIRECT,
 * looked up as nf_flow_queue_xmit() does. A device that is gone is a
 * "direct_dev" decline either way.
 */
struct nfb_out {
	struct net_device	*dev;
	struct dst_entry	*dst;		/* NEIGH only */
	u8			xmit;		/* enum nfb_xmit */
};

/*
 * The Ethernet device behind a route's device @dev that path discovery
 * resolved (the other direction's iifidx), or @dev itself when there is
 * none: the device a bulk the module stands in for is sent to.
 */
static struct net_device *
nfb_real_out(struct net *net, const struct flow_offload_tuple *other,
	     struct net_device *dev)
{
	struct net_device *real;

	real = dev_get_by_index_rcu(net, other->iifidx);
	if (!real || real == dev || !real->header_ops ||
	    real->header_ops->create != eth_header)
		return dev;
	return real;
}

/*
 * 6.1 / 6.12: a NEIGH flow whose route leaves through a VLAN device
 * (@vlan) that path discovery resolved to the real device behind it
 * (the other direction's iifidx, its tags in encap[]). Its bulks go to the
 * real device, the VLAN devices' tags pushed per packet at transmit, as
 * the stock hook does from 6.19, instead of through the VLAN device one
 * packet at a time: the transmit tells such a bulk by cb->stand_in (set
 * in nfb_prepare(): its output device is not its route's; xmit.c,
 * nfb_vlan_chain(), which checks the VLAN devices per bulk and sends
 * through them where it cannot stand in for them: a qdisc, an egress
 * hook). Only onto an Ethernet device.
 * Returns the device to send to. Out of line, and given no pointer to
 * the caller's nfb_out, which then stays in registers.
 */
static noinline struct net_device *
nfb_vlan_out(struct net *net, const struct flow_offload_tuple *other,
	     struct net_device *vlan)
{
	if (!other->encap_num)
		return vlan;
	return nfb_real_out(net, other, vlan);
}

/*
 * 6.1 / 6.12, with nf_flow_bulk_pppoe_direct set: a NEIGH flow whose
 * route leaves through a PPP device (@ppp) that path discovery resolved
 * to a PPPoE session on an Ethernet device (the other direction's iifidx,
 * the session in encap[0]). Its bulks go to that device, the PPPoE and
 * PPP headers pushed per packet, as the stock hook does from 6.19,
 * instead of through the PPP unit one packet at a time (cb->stand_in, as
 * for VLAN devices; standin.h, nfb_ppp_session(), checks the session per
 * bulk). The PPP unit's own per-packet work (pass and active filters,
 * the idle time pppd reads, compression, npmode) is then not done: the
 * operator's choice, off by default. A GSO packet goes through the PPP
 * device, which cuts it up before its header goes on; so does a session
 * inside a VLAN.
 */
static noinline struct net_device *
nfb_ppp_out(struct nfb_net *nn, struct net *net,
	    const struct flow_offload_tuple *other, struct net_device *ppp,
	    const struct sk_buff *skb)
{
	if (!READ_ONCE(nn->pppoe_direct) || skb_is_gso(skb) ||
	    other->encap_num != 1 ||
	    other->encap[0].proto != htons(ETH_P_PPP_SES))
		return ppp;
	return nfb_real_out(net, other, ppp);
}

static int nfb_direct_out(const struct nf_hook_state *state,
			  const struct flow_offload_tuple *tuple,
			  struct nfb_out *out)
{
	out->dev = dev_get_by_index_rcu(state->net, tuple->out.ifidx);
	if (!out->dev)
		return NFB_DECLINE_DIRECT_DEV;
	out->dst = NULL;
	out->xmit = NFB_XMIT_DIRECT;
	return 0;
}

/*
 * flow_offload_refresh(), once per jiffy and CPU for a flow found through
 * the flow cache (@refreshed, see nfb_flow_lookup()): the stock hook's
 * call per packet computes the same timeout for every packet of a jiffy,
 * and writes it only when it moved by more than HZ.
 */
static __always_inline void nfb_refresh(struct nf_flowtable *ft,
					struct flow_offload *flow,
					u32 *refreshed)
{
	u32 now = nf_flowtable_time_stamp;

	if (refreshed && *refreshed == now)
		return;
	flow_offload_refresh(ft, flow, false);
	if (refreshed)
		*refreshed = now;
}

/* Based on ip_exceeds_mtu(), as nf_flow_exceeds_mtu(). */
static bool nfb_exceeds_mtu(const struct sk_buff *skb, unsigned int mtu)
{
	if (skb->len <= mtu)
		return false;

	if (skb_is_gso(skb) && skb_gso_validate_network_len(skb, mtu))
		return false;

	return true;
}

/*
 * Packets whose encapsulation the stock hook of this kernel handles in a
 * way the module does not (compat.h): where the stock hook pushes VLAN /
 * PPPoE itself, a GSO packet that gets more than the one tag
 * skb->vlan_tci carries: the stock hook cuts one under PPPoE into
 * segments first (needs_gso_segment), and a header pushed into a GSO
 * packet would have to be repeated per segment. The flow's other packets
 * are taken (NFB_DECLINE_ENCAP_GSO: the hook drains before it declines
 * one of these).
 */
static __always_inline bool
nfb_encap_left_to_stock(const struct flow_offload *flow,
			enum flow_offload_tuple_dir dir,
			const struct sk_buff *skb)
{
	const struct flow_offload_tuple *other = &flow->tuplehash[!dir].tuple;

	return nfb_flowtable_pushes_encap() && unlikely(skb_is_gso(skb)) &&
	       other->encap_num &&
	       (other->encap_num > 1 ||
		other->encap[0].proto == htons(ETH_P_PPP_SES));
}

/* The stock hook's own decision for these (see nfb_flow_closing()). */
static bool nfb_tcp_flags_decline(const struct sk_buff *skb, unsigned int thoff,
				  const struct flow_offload *flow)
{
	const struct tcphdr *tcph;

	tcph = (void *)(skb_network_header(skb) + thoff);
	return tcph->fin || tcph->rst || (tcph->syn && nfb_flow_closing(flow));
}

/*
 * Fraglist GRO (rx-gro-list) hands the hook a train of one flow's UDP
 * packets as one skb: the first packet is the head, with the train's
 * lengths in its headers (inet_gro_complete(), udp4_gro_complete()), and
 * the others hang off its frag_list as they arrived, each with its own
 * headers in front of its data (skb_gro_receive_list() pulled them, and
 * set each one's network header). Taken whole, the train would be cut up
 * again at transmit by skb_segment_list(), which copies the head's MAC
 * header into every segment, recomputes each one's IP header checksum and
 * rewrites its IP ID, and leaves each segment's TTL or hop limit as it
 * came (6.1 and 6.12: nothing copies it from the head).
 *
 * Instead the train is taken apart here, once the flow has passed every
 * check on the head: the head gets its own lengths back, the segments
 * their headers, and each then gets the work of a packet that arrived
 * alone (TTL, NAT, checksums, references), one lookup for all of them.
 * They are queued in arrival order and leave in one bulk.
 *
 * Only what the checks on the head vouch for: UDP (a TCP segment may carry
 * FIN or RST), no encapsulation, the head not cloned (its frag_list would be
 * shared), no segment shared (another user holds it) or over @mtu, and each
 * segment's headers where GRO left them, @hlen bytes of IP and UDP header
 * before its data. Otherwise the train is taken whole, as before.
 *
 * Returns the segments, a list by ->next, or NULL.
 */
static struct sk_buff *nfb_unbundle(struct sk_buff *skb, unsigned int hlen,
				    unsigned int mtu, unsigned int *nsegs)
{
	const unsigned int type = SKB_GSO_FRAGLIST | SKB_GSO_UDP_L4;
	struct skb_shared_info *shinfo = skb_shinfo(skb);
	unsigned int len = 0, truesize = 0, n = 0;
	struct sk_buff *seg, *segs = shinfo->frag_list;
	struct udphdr *uh;

	if ((shinfo->gso_type & type) != type || !segs || skb_cloned(skb) ||
	    skb_network_offset(skb))
		return NULL;
	for (seg = segs; seg; seg = seg->next) {
		if (skb_shared(seg) || seg->len + hlen > mtu ||
		    skb_network_offset(seg) != -(int)hlen)
			return NULL;
		len += seg->len;
		truesize += seg->truesize;
		n++;
	}

	shinfo->frag_list = NULL;
	skb->len -= len;
	skb->data_len -= len;
	skb->truesize -= truesize;
	skb_gso_reset(skb);

	/* The head's own lengths: the checksums then hold again. */
	if (skb->protocol == htons(ETH_P_IP)) {
		struct iphdr *iph = ip_hdr(skb);
		__be16 tot_len = htons(skb->len);

		csum_replace2(&iph->check, iph->tot_len, tot_len);
		iph->tot_len = tot_len;
	} else {
		ipv6_hdr(skb)->payload_len =
			htons(skb->len - sizeof(struct ipv6hdr));
	}
	uh = (struct udphdr *)(skb->data + hlen - sizeof(*uh));
	uh->len = htons(skb->len - hlen + sizeof(*uh));
	/*
	 * And its checksum state: completing the train counted one more
	 * verified checksum on the head (__skb_incr_checksum_unnecessary()
	 * in udp4_gro_complete()), the packets were merged only with the
	 * state the head had before. Left at that, the next router's
	 * fraglist GRO (udp_gro_receive_segment()) would refuse to merge
	 * any packet with the head, and hold the head back behind them.
	 */
	if (skb->ip_summed == CHECKSUM_UNNECESSARY &&
	    segs->ip_summed == CHECKSUM_UNNECESSARY)
		skb->csum_level = segs->csum_level;

	/*
	 * The segments never went through __netif_receive_skb_core(), and
	 * anything tc ingress set was set on the head: they take what
	 * skb_segment_list() would have copied from it and transmit reads.
	 * Their protocol is their own (GRO merges only one), their device
	 * is set with their references (nfb_segs_apply()).
	 */
	for (seg = segs; seg; seg = seg->next) {
		__skb_push(seg, hlen);
		skb_set_transport_header(seg, hlen - sizeof(*uh));
		seg->skb_iif = skb->skb_iif;
		seg->mark = skb->mark;
		seg->priority = skb->priority;
		seg->queue_mapping = skb->queue_mapping;
		seg->hash = skb->hash;
		seg->l4_hash = skb->l4_hash;
		seg->sw_hash = skb->sw_hash;
	}
	*nsegs = n;
	return segs;
}

/*
 * Copy what transmit needs; the flow stays behind. As the stock hook does
 * (skb_dst_set_noref(), skb->dev = outdev), a NEIGH packet leaves with the
 * route attached and the output device as skb->dev; since it waits in a
 * queue past this RCU section, both are referenced: the route by the
 * caller's dst_hold_safe(), the device here. A DIRECT packet keeps the
 * route it came with, as nf_flow_queue_xmit() leaves it, made to survive
 * the queue.
 */
static __always_inline void nfb_prepare(struct sk_buff *skb,
					struct nfb_net *nn,
					const struct nfb_out *out,
					const struct flow_offload *flow,
					enum flow_offload_tuple_dir dir,
					u32 order)
{
	const struct flow_offload_tuple *other = &flow->tuplehash[!dir].tuple;
	struct nfb_cb *cb = NFB_CB(skb);

	if (out->dst) {
		skb_dst_drop(skb);
		skb_dst_set(skb, out->dst);
	} else {
		skb_dst_force(skb);
	}
	dev_hold(out->dev);
	skb->dev = out->dev;
	nfb_sdqm_park(skb);	/* before @nn covers the slot (nfb.h) */
	cb->nn = nn;
	cb->flow_hash = order;
	cb->bulk_max = READ_ONCE(nn->bulk_max);
	cb->xmit = out->xmit;
	cb->stand_in = out->dst && out->dev != out->dst->dev;
	BUILD_BUG_ON(sizeof(cb->encap) != sizeof(other->encap));
	memcpy(cb->encap, other->encap, sizeof(cb->encap));
	if (out->xmit == NFB_XMIT_DIRECT) {
		const struct flow_offload_tuple *t = &flow->tuplehash[dir].tuple;

		ether_addr_copy(cb->nexthop.mac.h_dest, t->out.h_dest);
		ether_addr_copy(cb->nexthop.mac.h_source, t->out.h_source);
	}
}

/*
 * The packets of a taken train after its head (nfb_unbundle()), each
 * given the work the head got: NAT, TTL or hop limit, accounting, and what
 * transmit needs, the head's control block with a reference of its own on
 * the route (NEIGH: the head's reference, taken by dst_hold_safe(), keeps
 * it above zero meanwhile) and on the output device. Out of line, and
 * called only for a train, so that the hook's code for every other packet
 * stays as it was. A packet that cannot be made writable is dropped and
 * counted: the train is past the point where any of it could go back to
 * the stock path.
 */
static noinline void nfb_segs_apply(struct nfb_net *nn,
				    struct nf_flowtable *ft,
				    struct nfb_rx *rx,
				    const struct flow_offload *flow,
				    enum flow_offload_tuple_dir dir,
				    unsigned int thoff, unsigned int hlen,
				    const struct sk_buff *head)
{
	struct sk_buff *seg, *next, **tail = &rx->segs;
	const struct nfb_cb *cb = NFB_CB(head);

	for (seg = rx->segs; seg; seg = next) {
		next = seg->next;
		seg->next = NULL;
		if (unlikely(skb_try_make_writable(seg, hlen))) {
			nfb_count_drop(nn, NFB_DROP_NOMEM);
			kfree_skb(seg);
			rx->nsegs--;
			continue;
		}
		if (seg->protocol == htons(ETH_P_IP)) {
			nfb_nat_ip(flow, seg, thoff, dir, ip_hdr(seg));
			ip_decrease_ttl(ip_hdr(seg));
		} else {
			nfb_nat_ipv6(flow, seg, dir, ipv6_hdr(seg));
			ipv6_hdr(seg)->hop_limit--;
		}
		skb_clear_tstamp(seg);
		if (ft->flags & NF_FLOWTABLE_COUNTER)
			nf_ct_acct_update(flow->ct, dir, seg->len);
		if (cb->xmit == NFB_XMIT_NEIGH) {
			dst_hold(skb_dst(head));
			skb_dst_set(seg, skb_dst(head));
		} else {
			skb_dst_force(seg);
		}
		dev_hold(head->dev);
		seg->dev = head->dev;
		*NFB_CB(seg) = *cb;
		/* skb_segment_list() copies the head's control block. */
		if (NFB_SDQM_IN_CB)
			memcpy(seg->cb + NFB_SDQM_STASH,
			       head->cb + NFB_SDQM_STASH, NFB_SDQM_LEN);
		*tail = seg;
		tail = &seg->next;
	}
}

/*
 * Returned by the stages nfb_ipv4() and nfb_ipv6() share when the packet
 * goes on to the next one.
 */
#define NFB_GO_ON	(-3)

/*
 * The parse state of a packet in nfb_ipv4() or nfb_ipv6(), and in the
 * stages they share, as upstream's struct nf_flowtable_ctx.
 */
struct nfb_ctx {
	struct nfb_net				*nn;
	struct nf_flowtable			*ft;
	const struct nf_hook_state		*state;
	struct nfb_rx				*rx;
	struct flow_offload_tuple_rhash		*tuplehash;
	struct flow_offload			*flow;
	const struct flow_offload_tuple		*other;
	struct dst_entry			*dst;	/* the route: NEIGH */
	u32					*refreshed;
	struct nfb_out				out;
	enum flow_offload_tuple_dir		dir;
	unsigned int				offset;	/* of the (inner) IP header */
	unsigned int				thoff;
	unsigned int				hdrsize;
	bool					tun_rx;
	bool					tun_tx;
};

static __always_inline void nfb_ctx_init(struct nfb_ctx *ctx,
					 struct nfb_net *nn,
					 struct nf_flowtable *ft,
					 const struct nf_hook_state *state,
					 struct nfb_rx *rx)
{
	ctx->nn = nn;
	ctx->ft = ft;
	ctx->state = state;
	ctx->rx = rx;
	ctx->offset = rx->offset;
	ctx->tun_rx = false;
}

/*
 * The flow of @tuple, and the checks that need only the flow: NFB_GO_ON
 * or why the packet is declined.
 */
static __always_inline int nfb_ctx_lookup(struct nfb_ctx *ctx,
					  struct flow_offload_tuple *tuple,
					  struct sk_buff *skb)
{
	u32 *refreshed;

	/* A local: @ctx's address escaping would keep it in memory. */
	ctx->tuplehash = nfb_flow_lookup(ctx->ft, tuple, &refreshed);
	ctx->refreshed = refreshed;
	if (!ctx->tuplehash)
		return NFB_DECLINE_MISS;

	ctx->dir = ctx->tuplehash->tuple.dir;
	ctx->flow = container_of(ctx->tuplehash, struct flow_offload,
				 tuplehash[ctx->dir]);
	ctx->other = &ctx->flow->tuplehash[!ctx->dir].tuple;
	ctx->tun_tx = nfb_tuple_tunnelled(ctx->other);

	/* Not implemented here: the stock hook handles these. */
	if (unlikely(test_bit(NF_FLOW_HW, &ctx->flow->flags)))
		return NFB_DECLINE_HW_OFFLOAD;
	if (nfb_encap_left_to_stock(ctx->flow, ctx->dir, skb))
		return NFB_DECLINE_ENCAP_GSO;
	return NFB_GO_ON;
}

/*
 * The output device, by the flow's transmit type; the route too for
 * FLOW_OFFLOAD_XMIT_NEIGH (ctx->dst). @family: that of the route.
 */
static __always_inline int nfb_ctx_out(struct nfb_ctx *ctx,
				       struct sk_buff *skb, u8 family)
{
	const struct flow_offload_tuple *tuple = &ctx->tuplehash->tuple;
	struct net *net = ctx->state->net;
	int ret;

	ctx->dst = NULL;
	switch (tuple->xmit_type) {
	case FLOW_OFFLOAD_XMIT_NEIGH:
		ctx->dst = tuple->dst_cache;
		if (family == AF_INET &&
		    unlikely(((struct rtable *)ctx->dst)->rt_gw_family ==
			     AF_INET6))
			return NFB_DECLINE_XMIT_TYPE;
		ctx->out.dev = nfb_neigh_out_dev(net, tuple, ctx->dst);
		if (unlikely(!ctx->out.dev))
			return NFB_DECLINE_DIRECT_DEV;
		if (nfb_flowtable_pushes_encap())
			break;
		if (unlikely(is_vlan_dev(ctx->out.dev)))
			ctx->out.dev = nfb_vlan_out(net, ctx->other,
						    ctx->out.dev);
		else if (unlikely(ctx->out.dev->type == ARPHRD_PPP))
			ctx->out.dev = nfb_ppp_out(ctx->nn, net, ctx->other,
						   ctx->out.dev, skb);
		break;
	case FLOW_OFFLOAD_XMIT_DIRECT:
		/* Into a tunnel with cached addresses: not taken. */
		if (unlikely(ctx->tun_tx))
			return NFB_DECLINE_ENCAP;
		ret = nfb_direct_out(ctx->state, tuple, &ctx->out);
		if (ret)
			return ret;
		break;
	default:
		return NFB_DECLINE_XMIT_TYPE;
	}
	return NFB_GO_ON;
}

/*
 * The stock checks that need the packet, in the stock order, then the
 * packet made writable: NFB_GO_ON with the route held, or why the packet
 * is declined. @iphlen: the IP header's length; @l4proto its protocol.
 */
static __always_inline int nfb_ctx_check(struct nfb_ctx *ctx,
					 struct sk_buff *skb,
					 unsigned int iphlen, u8 l4proto)
{
	struct dst_entry *dst = ctx->dst;

	if (unlikely(nfb_exceeds_mtu(skb, ctx->tuplehash->tuple.mtu +
					  ctx->offset -
					  (ctx->tun_tx ? iphlen : 0))))
		return NFB_DECLINE_MTU;

	if (l4proto == IPPROTO_TCP &&
	    nfb_tcp_flags_decline(skb, ctx->thoff, ctx->flow))
		return NFB_DECLINE_TCP_FLAGS;

	/* nf_flow_dst_check(): only a route is checked. */
	if (dst && (!dst_check(dst, ctx->tuplehash->tuple.dst_cookie) ||
		    !dst_hold_safe(dst)))
		return NFB_DECLINE_DST_STALE;

	if (skb_try_make_writable(skb, ctx->thoff + ctx->hdrsize) ||
	    (ctx->tun_tx && skb_cow_head(skb, nfb_tunnel_headroom(dst,
								  iphlen)))) {
		if (dst)
			dst_release(dst);
		return NFB_DECLINE_UNWRITABLE;
	}
	return NFB_GO_ON;
}

/*
 * From here on the packet is ours: the flow refreshed, the encapsulation
 * it came in popped, a fraglist GRO packet unbundled. ctx->thoff is then
 * relative to the network header.
 */
static __always_inline void nfb_ctx_take(struct nfb_ctx *ctx,
					 struct sk_buff *skb,
					 unsigned int iphlen)
{
	struct nfb_rx *rx = ctx->rx;

	nfb_refresh(ctx->ft, ctx->flow, ctx->refreshed);

	if (rx->layers)
		nfb_encap_pop(skb, rx);
	if (ctx->tun_rx)
		nfb_tunnel_pop(skb, iphlen);
	ctx->thoff -= ctx->offset;

	if (unlikely(skb_is_gso(skb)) && !rx->layers && !ctx->tun_rx &&
	    !ctx->tun_tx)
		rx->segs = nfb_unbundle(skb, ctx->thoff + ctx->hdrsize,
					ctx->tuplehash->tuple.mtu, &rx->nsegs);
}

/* What the stock path does after the address and TTL rewrite. */
static __always_inline void nfb_ctx_account(struct nfb_ctx *ctx,
					    struct sk_buff *skb)
{
	skb_clear_tstamp(skb);
	if (ctx->ft->flags & NF_FLOWTABLE_COUNTER)
		nf_ct_acct_update(ctx->flow->ct, ctx->dir, skb->len);
}

/*
 * The packet's control block for transmit; the caller writes the next hop
 * of a NEIGH flow after it.
 */
static __always_inline void nfb_ctx_prepare(struct nfb_ctx *ctx,
					    struct sk_buff *skb)
{
	if (ctx->dst) {
		ctx->out.dst = ctx->dst;
		ctx->out.xmit = NFB_XMIT_NEIGH;
	}
	nfb_prepare(skb, ctx->nn, &ctx->out, ctx->flow, ctx->dir,
		    ctx->rx->order);
}

/* The packet's unbundled segments, as it: taken. */
static __always_inline int nfb_ctx_taken(struct nfb_ctx *ctx,
					 struct sk_buff *skb)
{
	if (unlikely(ctx->rx->segs))
		nfb_segs_apply(ctx->nn, ctx->ft, ctx->rx, ctx->flow, ctx->dir,
			       ctx->thoff, ctx->thoff + ctx->hdrsize, skb);
	return NFB_TAKEN;
}

/* A lookup tuple cleared, with the packet's ports (either family). */
static __always_inline void nfb_tuple_ports(const struct nfb_ctx *ctx,
					    struct flow_offload_tuple *tuple,
					    const struct sk_buff *skb)
{
	const struct flow_ports *ports;

	nfb_tuple_init(tuple);
	ports = (const struct flow_ports *)(skb_network_header(skb) + ctx->thoff);
	tuple->src_port		= ports->source;
	tuple->dst_port		= ports->dest;
}

/*
 * What the packet came in through, in the tuple (the input device, the
 * encapsulation), once its addresses and protocol are there; and its full
 * order key (either family).
 */
static __always_inline void nfb_tuple_rx(struct flow_offload_tuple *tuple,
					 const struct sk_buff *skb,
					 const struct nf_hook_state *state,
					 struct nfb_rx *rx)
{
	tuple->iifidx		= state->in->ifindex;
	rx->order = nfb_order_key(rx->order, tuple->l4proto, tuple->src_port,
				  tuple->dst_port);
	rx->scope = NFB_ORDER_FLOW;
	if (rx->layers)
		nfb_tuple_encap(skb, tuple);
}

/*
 * The lookup tuple of an IPv4 packet whose headers are pulled (ports, then
 * addresses, then what the packet came in through: encapsulation, tunnel),
 * and its full order key. Returns the (inner) IP header.
 */
static __always_inline struct iphdr *
nfb_tuple4(struct nfb_ctx *ctx, struct flow_offload_tuple *tuple,
	   struct sk_buff *skb, const struct nf_hook_state *state,
	   struct nfb_rx *rx)
{
	struct iphdr *iph;

	nfb_tuple_ports(ctx, tuple, skb);
	iph = (struct iphdr *)(skb_network_header(skb) + ctx->offset);
	tuple->src_v4.s_addr	= iph->saddr;
	tuple->dst_v4.s_addr	= iph->daddr;
	tuple->l3proto		= AF_INET;
	tuple->l4proto		= iph->protocol;
	nfb_tuple_rx(tuple, skb, state, rx);
	if (unlikely(ctx->tun_rx)) {
		/* The outer header, still in front of the inner one. */
		iph = (struct iphdr *)(skb_network_header(skb) + rx->offset);
		nfb_tuple_set_tun4(tuple, iph->saddr, iph->daddr);
		iph = (struct iphdr *)(skb_network_header(skb) + ctx->offset);
	}
	return iph;
}

/*
 * The take of an IPv4 packet that passed every check: the rewrite (NAT,
 * TTL), the accounting, the tunnel header a flow into a tunnel gets, and
 * the control block with the next hop.
 */
static __always_inline int nfb_ipv4_take(struct nfb_ctx *ctx,
					 struct sk_buff *skb,
					 const struct nf_hook_state *state)
{
	struct iphdr *iph;
	__be32 nexthop;

	nfb_ctx_take(ctx, skb, sizeof(*iph));
	iph = ip_hdr(skb);
	nfb_nat_ip(ctx->flow, skb, ctx->thoff, ctx->dir, iph);
	ip_decrease_ttl(iph);
	nfb_ctx_account(ctx, skb);

	if (unlikely(ctx->tun_tx) &&
	    nfb_ipip_push(state->net, skb, ctx->other, ctx->dst)) {
		dst_release(ctx->dst);
		return NFB_DROPPED;
	}

	if (ctx->dst) {
		nexthop = rt_nexthop((struct rtable *)ctx->dst,
				     ctx->tun_tx ? nfb_tuple_tun_far4(ctx->other) :
						   ctx->other->src_v4.s_addr);
		nfb_ctx_prepare(ctx, skb);
		NFB_CB(skb)->nexthop.v4 = nexthop;
	} else {
		nfb_ctx_prepare(ctx, skb);
	}
	return nfb_ctx_taken(ctx, skb);
}

/*
 * Inlined into the hook, as nfb_ipv6() and nfb_prepare(): out of line,
 * each call pays its own prologue, stack canary and epilogue on every
 * packet (about 45 instructions per packet per router, make bench).
 */
static __always_inline int nfb_ipv4(struct nfb_net *nn,
				    struct nf_flowtable *ft,
				    struct sk_buff *skb,
				    const struct nf_hook_state *state,
				    struct nfb_rx *rx)
{
	struct nfb_ctx ctx __uninitialized;
	struct flow_offload_tuple tuple __uninitialized;
	struct iphdr *iph;
	int ret;

	nfb_ctx_init(&ctx, nn, ft, state, rx);
again:
	if (!pskb_may_pull(skb, sizeof(*iph) + ctx.offset))
		return NFB_DECLINE_HEADER;

	iph = (struct iphdr *)(skb_network_header(skb) + ctx.offset);
	ctx.thoff = iph->ihl * 4;
	/*
	 * The order key's addresses; not those of a tunnel's outer header,
	 * which are not its inner flow's.
	 */
	if (likely(iph->protocol != IPPROTO_IPIP &&
		   iph->protocol != IPPROTO_IPV6)) {
		rx->order = nfb_order_addrs4(iph);
		rx->scope = NFB_ORDER_ADDR;
	}
	if (ip_is_fragment(iph))
		return NFB_DECLINE_FRAG;
	if (unlikely(ctx.thoff != sizeof(*iph)))
		return NFB_DECLINE_OPTIONS;

	/*
	 * 6.19 on, nf_flow_ip4_tunnel_proto(): an IPIP packet may belong to
	 * a flow that came in through the tunnel. The lookup is then the
	 * inner packet's, with the outer addresses in the tuple.
	 */
	if (iph->protocol == IPPROTO_IPIP && nfb_tunnels() && !ctx.tun_rx) {
		if (iph->ttl <= 1)
			return NFB_DECLINE_TTL;
		ctx.tun_rx = true;
		ctx.offset += sizeof(*iph);
		goto again;
	}
	ctx.thoff += ctx.offset;

	switch (iph->protocol) {
	case IPPROTO_TCP:
		ctx.hdrsize = sizeof(struct tcphdr);
		break;
	case IPPROTO_UDP:
		ctx.hdrsize = sizeof(struct udphdr);
		break;
	default:
		return NFB_DECLINE_L4PROTO;
	}

	if (iph->ttl <= 1)
		return NFB_DECLINE_TTL;

	if (!pskb_may_pull(skb, ctx.thoff + ctx.hdrsize))
		return NFB_DECLINE_HEADER;

	iph = nfb_tuple4(&ctx, &tuple, skb, state, rx);

	ret = nfb_ctx_lookup(&ctx, &tuple, skb);
	if (ret == NFB_GO_ON)
		ret = nfb_ctx_out(&ctx, skb, AF_INET);
	if (ret == NFB_GO_ON)
		ret = nfb_ctx_check(&ctx, skb, sizeof(*iph), iph->protocol);
	if (ret != NFB_GO_ON)
		return ret;

	return nfb_ipv4_take(&ctx, skb, state);
}

/*
 * The lookup tuple of an IPv6 packet whose headers are pulled, as
 * nfb_tuple4(); the caller adds a tunnel's outer addresses. Returns the
 * (inner) IPv6 header.
 */
static __always_inline struct ipv6hdr *
nfb_tuple6(struct nfb_ctx *ctx, struct flow_offload_tuple *tuple,
	   struct sk_buff *skb, const struct nf_hook_state *state,
	   struct nfb_rx *rx)
{
	struct ipv6hdr *ip6h;

	nfb_tuple_ports(ctx, tuple, skb);
	ip6h = (struct ipv6hdr *)(skb_network_header(skb) + ctx->offset);
	tuple->src_v6		= ip6h->saddr;
	tuple->dst_v6		= ip6h->daddr;
	tuple->l3proto		= AF_INET6;
	tuple->l4proto		= ip6h->nexthdr;
	nfb_tuple_rx(tuple, skb, state, rx);
	return ip6h;
}

/* The take of an IPv6 packet, as nfb_ipv4_take(). */
static __always_inline int nfb_ipv6_take(struct nfb_ctx *ctx,
					 struct sk_buff *skb,
					 const struct nf_hook_state *state)
{
	const struct in6_addr *nexthop;
	struct ipv6hdr *ip6h;

	nfb_ctx_take(ctx, skb, sizeof(*ip6h));
	ip6h = ipv6_hdr(skb);
	nfb_nat_ipv6(ctx->flow, skb, ctx->dir, ip6h);
	ip6h->hop_limit--;
	nfb_ctx_account(ctx, skb);

	if (unlikely(ctx->tun_tx) &&
	    nfb_ip6ip6_push(state->net, skb, ctx->other)) {
		dst_release(ctx->dst);
		return NFB_DROPPED;
	}

	if (ctx->dst) {
		nexthop = rt6_nexthop(dst_rt6_info(ctx->dst),
				      ctx->tun_tx ? nfb_tuple_tun_far6(ctx->other) :
						    &ctx->other->src_v6);
		nfb_ctx_prepare(ctx, skb);
		NFB_CB(skb)->nexthop.v6 = *nexthop;
	} else {
		nfb_ctx_prepare(ctx, skb);
	}
	return nfb_ctx_taken(ctx, skb);
}

static __always_inline int nfb_ipv6(struct nfb_net *nn,
				    struct nf_flowtable *ft,
				    struct sk_buff *skb,
				    const struct nf_hook_state *state,
				    struct nfb_rx *rx)
{
	struct nfb_ctx ctx __uninitialized;
	struct flow_offload_tuple tuple __uninitialized;
	struct in6_addr tun_saddr, tun_daddr;
	struct ipv6hdr *ip6h;
	int ret;

	nfb_ctx_init(&ctx, nn, ft, state, rx);
	ctx.thoff = sizeof(*ip6h) + ctx.offset;
	if (!pskb_may_pull(skb, ctx.thoff))
		return NFB_DECLINE_HEADER;

	ip6h = (struct ipv6hdr *)(skb_network_header(skb) + ctx.offset);
	/* 6.19 on, nf_flow_ip6_tunnel_proto(): as IPIP in nfb_ipv4(). */
	if (ip6h->nexthdr == IPPROTO_IPV6 && nfb_tunnels()) {
		if (ip6h->hop_limit <= 1)
			return NFB_DECLINE_TTL;
		tun_saddr = ip6h->saddr;
		tun_daddr = ip6h->daddr;
		ctx.tun_rx = true;
		ctx.offset += sizeof(*ip6h);
		ctx.thoff += sizeof(*ip6h);
		if (!pskb_may_pull(skb, ctx.thoff))
			return NFB_DECLINE_HEADER;
		ip6h = (struct ipv6hdr *)(skb_network_header(skb) + ctx.offset);
	}
	rx->order = nfb_order_addrs6(ip6h);
	rx->scope = NFB_ORDER_ADDR;
	switch (ip6h->nexthdr) {
	case IPPROTO_TCP:
		ctx.hdrsize = sizeof(struct tcphdr);
		break;
	case IPPROTO_UDP:
		ctx.hdrsize = sizeof(struct udphdr);
		break;
	case NEXTHDR_FRAGMENT:
		nfb_order_ext6(skb, skb_network_offset(skb) + ctx.offset, rx);
		return NFB_DECLINE_FRAG;
	default:
		/*
		 * Also the packets of an ip6tnl device with its default
		 * encapsulation limit option: as the stock hook, which
		 * takes an inner header only right behind the outer one.
		 */
		if (ipv6_ext_hdr(ip6h->nexthdr)) {
			nfb_order_ext6(skb,
				       skb_network_offset(skb) + ctx.offset,
				       rx);
			return NFB_DECLINE_OPTIONS;
		}
		return NFB_DECLINE_L4PROTO;
	}

	if (ip6h->hop_limit <= 1)
		return NFB_DECLINE_TTL;

	if (!pskb_may_pull(skb, ctx.thoff + ctx.hdrsize))
		return NFB_DECLINE_HEADER;

	ip6h = nfb_tuple6(&ctx, &tuple, skb, state, rx);
	if (ctx.tun_rx)
		nfb_tuple_set_tun6(&tuple, &tun_saddr, &tun_daddr);

	ret = nfb_ctx_lookup(&ctx, &tuple, skb);
	if (ret == NFB_GO_ON)
		ret = nfb_ctx_out(&ctx, skb, AF_INET6);
	if (ret == NFB_GO_ON)
		ret = nfb_ctx_check(&ctx, skb, sizeof(*ip6h), ip6h->nexthdr);
	if (ret != NFB_GO_ON)
		return ret;

	return nfb_ipv6_take(&ctx, skb, state);
}

/*
 * The packet goes on to the stock path, which transmits at once: packets
 * of its flow queued here must leave before it (nfb_flush_local() finds
 * them). Flows the module never takes have none: non-IP, and neither
 * TCP nor UDP (ICMP, neighbour discovery, GRE...), whose packets
 * would otherwise cut every bulk short; nor do encapsulated packets
 * that are not IP (PPP control protocols) or that the stock hook
 * does not parse either, nor bridge flows into a tunnel (encap). A
 * malformed encapsulation drains: the stock hook, which checks less, may
 * still forward it. So does a GSO packet into PPPoE or two tags
 * (encap_gso), whose flow's other packets are taken.
 */
static bool nfb_decline_needs_drain(int ret)
{
	return ret != NFB_DECLINE_NOT_IP && ret != NFB_DECLINE_ENCAP &&
	       ret != NFB_DECLINE_L4PROTO && ret != NFB_DECLINE_PPP_PROTO;
}

/*
 * The hook. Runs under the RCU read lock of nf_hook_slow(); everything the
 * flowtable lookup returns is valid until we return, and nothing of it but
 * the referenced route is kept in the queued packet (see nfb_prepare()).
 */
unsigned int nfb_hook_fn(void *priv, struct sk_buff *skb,
			 const struct nf_hook_state *state)
{
	struct nfb_hook *h = priv;
	struct nfb_net *nn = h->nn;
	struct nf_flowtable *ft;
	nf_hookfn *ftfn = NULL;
	struct nfb_rx rx = {};
	int ret;

	if (!READ_ONCE(nn->enable)) {
		ret = NFB_DECLINE_DISABLED;
		goto decline;
	}

	ft = nfb_next_flowtable(h, state->in, &ftfn);
	if (unlikely(!ft)) {
		ret = NFB_DECLINE_NO_FLOWTABLE;
		/* Only a changed hook list can change the answer. */
		if (rcu_access_pointer(state->in->nf_hooks_ingress) !=
		    READ_ONCE(h->seen))
			nfb_rescan_request(h);
		goto decline;
	}

	/* The queue owns the packet from here: it must not be shared. */
	if (unlikely(skb_shared(skb))) {
		ret = NFB_DECLINE_SHARED;
		goto decline;
	}

	ret = nfb_parse_encap(skb, &rx);
	if (ret)
		goto decline;

	switch (rx.proto) {
	case htons(ETH_P_IP):
		if (ftfn == nf_flow_offload_ipv6_hook)
			ret = NFB_DECLINE_NOT_IP;
		else
			ret = nfb_ipv4(nn, ft, skb, state, &rx);
		break;
	default:	/* ETH_P_IPV6 */
		if (ftfn == nf_flow_offload_ip_hook)
			ret = NFB_DECLINE_NOT_IP;
		else
			ret = nfb_ipv6(nn, ft, skb, state, &rx);
		break;
	}

	if (unlikely(ret == NFB_DROPPED)) {
		nfb_count_drop(nn, NFB_DROP_NOMEM);
		kfree_skb(skb);
		return NF_STOLEN;
	}
	if (ret != NFB_TAKEN)
		goto decline;

	this_cpu_add(nn->stats->taken[rx.type][NFB_CB(skb)->xmit],
		     1 + rx.nsegs);
	nfb_enqueue(skb);
	while (unlikely(rx.segs)) {
		struct sk_buff *seg = rx.segs;

		rx.segs = seg->next;
		seg->next = NULL;
		nfb_enqueue(seg);
	}
	return NF_STOLEN;

decline:
	nfb_count_decline(nn, ret);
	if (nfb_decline_needs_drain(ret))
		nfb_flush_local(nn, rx.scope, rx.order);
	return NF_ACCEPT;
}
