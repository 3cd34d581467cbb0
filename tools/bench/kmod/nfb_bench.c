// SPDX-License-Identifier: GPL-2.0
/*
 * nfb_bench: the benchmark's UDP burst generator and packet sink.
 *
 * pktgen on veth hands the receiver a shared skb, which makes every
 * plain-forwarded packet get copied and inflates the flowtable's apparent
 * gain. This generator sends fresh skbs, built beforehand, in bursts of N
 * inside one BH-disabled section, so a veth peer in NAPI mode receives NAPI
 * batches of N. The sink is a netdev ingress hook that consumes the
 * generator's packets (and nothing else: ARP and neighbour discovery pass),
 * counts them, checks per-flow order and records the time of the last one.
 * Under QEMU -icount shift=0 guest nanoseconds are guest instructions, so
 * (sink last - generator start) / packets is instructions per packet.
 *
 * On a NIC (virtio-net) the packets leave the guest and come back through
 * QEMU; an open-loop generator would overrun the rings and an idle vCPU
 * would let icount jump time forward. With window=N the generator keeps at
 * most N packets in flight and busy-waits in a loop whose instruction cost
 * it calibrates with interrupts off; the waiting is reported (gen_wait_ns) so
 * that it can be subtracted, leaving the work of moving the packets.
 *
 * The flows take turns: train=N consecutive packets of one flow, then N of
 * the next (N = 1, the default: round-robin, packet by packet). A TCP
 * sender with TSO, or a NIC's receive of a bursty flow, gives trains; GRO
 * merges a train and nothing of a round-robin mix.
 *
 * With headroom=N the packets are built as a NIC driver builds them: in a
 * page fragment (netdev_alloc_frag(), build_skb()), N bytes of headroom.
 * Without it their head is kmalloc'ed, with the device's LL_RESERVED_SPACE.
 * XDP on veth copies every packet into a new page unless its head is a
 * page fragment with XDP_PACKET_HEADROOM (256) in front of it
 * (veth_convert_skb_to_xdp_buff()); a NIC's XDP never copies.
 *
 * Flow set-up (tools/bench/icount/setup.sh): with churn=1 the flows of each round
 * move up by one, so that every round brings one new flow and retires the
 * oldest: flow f of round r goes out as flow r + f (source port sport + r
 * + f), each flow gets one packet per round for as many rounds as there
 * are flows, and count / flows rounds bring that many new flows, plus the
 * first round's. With gap=N the generator waits until N guest nanoseconds
 * after the previous burst started before it sends the next (busy, counted
 * as waiting and subtracted like window's): burst=flows and gap=200000
 * give 5,000 new flows per second.
 *
 * With addrs=1 (IPv4, no churn) the flows differ in their source address
 * instead: flow f goes out from src + f, all from source port sport. That
 * is the traffic of many hosts to one service on the same ports (tunnel
 * endpoints, NTP), whose flows differ only in the addresses' last bytes.
 *
 * Control, from a process in the network namespace of the device:
 *   echo "gen dev=D dmac=M src=IP dst=IP [sport=N dport=N flows=N len=N
 *         burst=N count=N ttl=N tos=N window=N train=N headroom=N
 *         churn=0|1 gap=N addrs=0|1]"
 *     > /sys/kernel/debug/nfb_bench/ctl
 *   echo "sink dev=D [verify=1]" > ...;  echo "sink off" > ...;  echo reset > ...
 * The sink checks every packet's TTL (or hop limit) and IPv4 header
 * checksum; with verify=1 also its UDP checksum, which costs a pass over
 * the payload (the selftests, not the benchmark).
 *   cat /sys/kernel/debug/nfb_bench/ctl     (key=value results)
 */
#include <linux/debugfs.h>
#include <linux/etherdevice.h>
/* mac_pton(): in kernel.h until 6.x, in hex.h, included by neither, on 7.x. */
#if __has_include(<linux/hex.h>)
#include <linux/hex.h>
#endif
#include <linux/inet.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/module.h>
#include <linux/netdevice.h>
#include <linux/netfilter.h>
#include <linux/netfilter_netdev.h>
#include <linux/sched/signal.h>
#include <linux/skbuff.h>
#include <linux/slab.h>
#include <linux/udp.h>
#include <net/ip.h>
#include <net/ip6_checksum.h>
#include <net/net_namespace.h>

#define NFB_BENCH_MAGIC		0x6e666262	/* "nfbb" */
#define NFB_BENCH_MAX_BURST	256
#define NFB_BENCH_MAX_FLOWS	65536

struct nfb_bench_payload {
	__be32 magic;
	__be32 flow;
	__be64 seq;
};

struct nfb_gen_params {
	char dev[IFNAMSIZ];
	u8 dmac[ETH_ALEN];
	bool ipv6;
	union {
		__be32 v4;
		struct in6_addr v6;
	} src, dst;
	u16 sport, dport;
	u32 flows, len, burst, ttl, tos, window, train, headroom, churn, gap;
	u32 addrs;
	u64 count;
};

struct nfb_sink_pcpu {
	u64 packets;
	u64 bytes;
	u64 reordered;
	u64 bad_csum;		/* IPv4 header (or UDP) checksum wrong */
	u64 first_ns;
	u64 last_ns;
	u8 ttl_min;		/* TTL or hop limit */
	u8 ttl_max;
};

static DEFINE_MUTEX(nfb_lock);	/* control writes and sink (un)registration */
static struct dentry *nfb_dir;

/* Results of the last generator run. */
static u64 gen_sent, gen_dropped, gen_start_ns, gen_end_ns, gen_wait_ns,
	   gen_lost;

/* The sink: one at a time. */
static struct nf_hook_ops sink_ops;
static struct net *sink_net;
static struct net_device *sink_dev;
static struct nfb_sink_pcpu __percpu *sink_stats;
static u64 *sink_next_seq;	/* per flow; NFB_BENCH_MAX_FLOWS entries */
static bool sink_verify;
/* The source address of the last packet received (NAT tests). */
static struct in6_addr sink_src;
static bool sink_src_v6;

/* The UDP checksum of the datagram at @off, over the pseudo header. */
static bool nfb_udp_csum_bad(struct sk_buff *skb, unsigned int off)
{
	const struct udphdr *uh = (const struct udphdr *)(skb->data + off);
	unsigned int ulen = ntohs(uh->len);
	__wsum sum;

	if (ulen < sizeof(*uh) || off + ulen > skb->len)
		return true;
	if (!uh->check)
		return skb->protocol == htons(ETH_P_IPV6);
	sum = skb_checksum(skb, off, ulen, 0);
	if (skb->protocol == htons(ETH_P_IP))
		return csum_tcpudp_magic(ip_hdr(skb)->saddr, ip_hdr(skb)->daddr,
					 ulen, IPPROTO_UDP, sum);
	return csum_ipv6_magic(&ipv6_hdr(skb)->saddr, &ipv6_hdr(skb)->daddr,
			       ulen, IPPROTO_UDP, sum);
}

static unsigned int nfb_sink_hook(void *priv, struct sk_buff *skb,
				  const struct nf_hook_state *state)
{
	const struct nfb_bench_payload *pl;
	struct nfb_sink_pcpu *st;
	unsigned int off;
	u32 flow;
	u64 seq, now;
	u8 ttl;
	bool bad = false;

	switch (skb->protocol) {
	case htons(ETH_P_IP):
		off = sizeof(struct iphdr);
		if (!pskb_may_pull(skb, off) || ip_hdr(skb)->protocol != IPPROTO_UDP)
			return NF_ACCEPT;
		off = ip_hdr(skb)->ihl * 4;
		ttl = ip_hdr(skb)->ttl;
		/*
		 * Every delivered packet must have been forwarded right, not
		 * only arrive: a wrong TTL or header checksum is counted.
		 */
		bad = off < sizeof(struct iphdr) || !pskb_may_pull(skb, off) ||
		      ip_fast_csum(skb->data, ip_hdr(skb)->ihl);
		break;
	case htons(ETH_P_IPV6):
		off = sizeof(struct ipv6hdr);
		if (!pskb_may_pull(skb, off) || ipv6_hdr(skb)->nexthdr != IPPROTO_UDP)
			return NF_ACCEPT;
		ttl = ipv6_hdr(skb)->hop_limit;
		break;
	default:
		return NF_ACCEPT;
	}
	if (!pskb_may_pull(skb, off + sizeof(struct udphdr) + sizeof(*pl)))
		return NF_ACCEPT;
	if (sink_verify) {
		if (!bad)
			bad = nfb_udp_csum_bad(skb, off);
		sink_src_v6 = skb->protocol == htons(ETH_P_IPV6);
		if (sink_src_v6)
			sink_src = ipv6_hdr(skb)->saddr;
		else
			memcpy(&sink_src, &ip_hdr(skb)->saddr, 4);
	}
	off += sizeof(struct udphdr);
	pl = (const struct nfb_bench_payload *)(skb->data + off);
	if (pl->magic != htonl(NFB_BENCH_MAGIC))
		return NF_ACCEPT;

	now = ktime_get_ns();
	st = this_cpu_ptr(sink_stats);
	if (!st->packets) {
		st->first_ns = now;
		st->ttl_min = ttl;
		st->ttl_max = ttl;
	}
	st->ttl_min = min(st->ttl_min, ttl);
	st->ttl_max = max(st->ttl_max, ttl);
	st->bad_csum += bad;
	st->packets++;
	st->bytes += skb->len;
	st->last_ns = now;
	flow = ntohl(pl->flow);
	seq = be64_to_cpu(pl->seq);
	if (flow < NFB_BENCH_MAX_FLOWS) {
		if (seq < READ_ONCE(sink_next_seq[flow]))
			st->reordered++;
		else
			WRITE_ONCE(sink_next_seq[flow], seq + 1);
	}
	consume_skb(skb);
	return NF_STOLEN;
}

static void nfb_sink_reset(void)
{
	int cpu;

	for_each_possible_cpu(cpu)
		memset(per_cpu_ptr(sink_stats, cpu), 0, sizeof(struct nfb_sink_pcpu));
	memset(sink_next_seq, 0, NFB_BENCH_MAX_FLOWS * sizeof(*sink_next_seq));
}

/* Called with nfb_lock held. */
static void nfb_sink_off(void)
{
	if (!sink_dev)
		return;
	nf_unregister_net_hook(sink_net, &sink_ops);
	dev_put(sink_dev);
	put_net(sink_net);
	sink_dev = NULL;
	sink_net = NULL;
}

static int nfb_sink_on(struct net *net, char *args)
{
	char *name = strsep(&args, " ");
	struct net_device *dev;
	bool verify = false;
	int err;

	if (args && strcmp(args, "verify=1"))
		return -EINVAL;
	verify = args;
	dev = dev_get_by_name(net, name);
	if (!dev)
		return -ENODEV;
	nfb_sink_off();
	memset(&sink_ops, 0, sizeof(sink_ops));
	sink_ops.hook = nfb_sink_hook;
	sink_ops.pf = NFPROTO_NETDEV;
	sink_ops.hooknum = NF_NETDEV_INGRESS;
	sink_ops.priority = INT_MIN + 1;
	sink_ops.dev = dev;
	err = nf_register_net_hook(net, &sink_ops);
	if (err) {
		dev_put(dev);
		return err;
	}
	sink_dev = dev;
	sink_net = get_net(net);
	sink_verify = verify;
	nfb_sink_reset();
	return 0;
}

static int nfb_netdev_event(struct notifier_block *nb, unsigned long event,
			    void *ptr)
{
	struct net_device *dev = netdev_notifier_info_to_dev(ptr);

	if (event != NETDEV_UNREGISTER)
		return NOTIFY_DONE;
	mutex_lock(&nfb_lock);
	if (dev == sink_dev)
		nfb_sink_off();
	mutex_unlock(&nfb_lock);
	return NOTIFY_DONE;
}

static struct notifier_block nfb_netdev_notifier = {
	.notifier_call = nfb_netdev_event,
};

static struct sk_buff *nfb_gen_build(struct net_device *dev,
				     const struct nfb_gen_params *p, u32 flow,
				     u64 seq)
{
	unsigned int l3len = p->len - ETH_HLEN, ulen;
	__be32 saddr = p->src.v4;
	u16 sport = p->sport + flow;
	struct nfb_bench_payload *pl;
	struct sk_buff *skb;
	struct udphdr *uh;
	struct ethhdr *eth;

	if (p->headroom) {
		unsigned int size = SKB_DATA_ALIGN(p->headroom + p->len +
						   dev->needed_tailroom) +
				    SKB_DATA_ALIGN(sizeof(struct skb_shared_info));
		void *data = netdev_alloc_frag(size);

		if (!data)
			return NULL;
		skb = build_skb(data, size);
		if (!skb) {
			skb_free_frag(data);
			return NULL;
		}
		skb_reserve(skb, p->headroom);
	} else {
		skb = alloc_skb(LL_RESERVED_SPACE(dev) + p->len +
				dev->needed_tailroom, GFP_KERNEL);
		if (!skb)
			return NULL;
		skb_reserve(skb, LL_RESERVED_SPACE(dev));
	}
	if (p->addrs) {
		saddr = htonl(ntohl(saddr) + flow);
		sport = p->sport;
	}
	skb_reset_mac_header(skb);
	eth = skb_put(skb, ETH_HLEN);
	ether_addr_copy(eth->h_dest, p->dmac);
	ether_addr_copy(eth->h_source, dev->dev_addr);
	skb_set_network_header(skb, ETH_HLEN);

	if (p->ipv6) {
		struct ipv6hdr *ip6 = skb_put_zero(skb, sizeof(*ip6));

		eth->h_proto = htons(ETH_P_IPV6);
		ulen = l3len - sizeof(*ip6);
		ip6_flow_hdr(ip6, p->tos, 0);
		ip6->payload_len = htons(ulen);
		ip6->nexthdr = IPPROTO_UDP;
		ip6->hop_limit = p->ttl;
		ip6->saddr = p->src.v6;
		ip6->daddr = p->dst.v6;
	} else {
		struct iphdr *iph = skb_put_zero(skb, sizeof(*iph));

		eth->h_proto = htons(ETH_P_IP);
		ulen = l3len - sizeof(*iph);
		iph->version = 4;
		iph->ihl = 5;
		iph->tos = p->tos;
		iph->tot_len = htons(l3len);
		iph->frag_off = htons(IP_DF);
		iph->ttl = p->ttl;
		iph->protocol = IPPROTO_UDP;
		iph->saddr = saddr;
		iph->daddr = p->dst.v4;
		ip_send_check(iph);
	}
	skb_set_transport_header(skb, skb->len);
	uh = skb_put_zero(skb, ulen);
	uh->source = htons(sport);
	uh->dest = htons(p->dport);
	uh->len = htons(ulen);
	pl = (struct nfb_bench_payload *)(uh + 1);
	pl->magic = htonl(NFB_BENCH_MAGIC);
	pl->flow = htonl(flow);
	pl->seq = cpu_to_be64(seq);
	if (p->ipv6)
		uh->check = csum_ipv6_magic(&p->src.v6, &p->dst.v6, ulen,
					    IPPROTO_UDP, csum_partial(uh, ulen, 0));
	else
		uh->check = csum_tcpudp_magic(saddr, p->dst.v4, ulen,
					      IPPROTO_UDP, csum_partial(uh, ulen, 0));
	if (!uh->check)
		uh->check = CSUM_MANGLED_0;

	skb->protocol = eth->h_proto;
	skb->dev = dev;
	skb->ip_summed = CHECKSUM_NONE;
	return skb;
}

static u64 nfb_sink_packets(void)
{
	u64 sum = 0;
	int cpu;

	for_each_possible_cpu(cpu)
		sum += READ_ONCE(per_cpu_ptr(sink_stats, cpu)->packets);
	return sum;
}

#define NFB_WAIT_STEP 64

/*
 * One step of busy-waiting: the same instructions whether calibrating or
 * waiting. Returns the sink's packet count.
 */
static noinline u64 nfb_wait_step(void)
{
	u64 seen = 0;
	int i;

	for (i = 0; i < NFB_WAIT_STEP; i++) {
		cpu_relax();
		seen = nfb_sink_packets();
	}
	return seen;
}

/* Guest nanoseconds (instructions under icount) per 1024 wait steps. */
static u64 nfb_wait_calibrate(void)
{
	unsigned long flags;
	u64 t0, t1;
	int i;

	local_irq_save(flags);
	t0 = ktime_get_ns();
	for (i = 0; i < 1024; i++)
		nfb_wait_step();
	t1 = ktime_get_ns();
	local_irq_restore(flags);
	return t1 - t0;
}

/*
 * Busy-wait until at most @limit packets are in flight. Interrupts and
 * softirqs run meanwhile (they are the work being measured); only the
 * loop's own steps are counted. Gives up after 200 ms without progress
 * (about 10^8 instructions under icount). A step counts for at most 2 ms
 * of that: without icount, guest time runs on while a loaded host does
 * not run the vCPU, and such a gap is no sign that packets were lost.
 */
static bool nfb_wait_in_flight(u64 sent, u64 base, u64 limit, u64 *steps)
{
	u64 seen = nfb_sink_packets() - base, last = seen;
	u64 prev = ktime_get_ns(), now, idle = 0;

	while (sent - seen > limit) {
		seen = nfb_wait_step() - base;
		(*steps)++;
		now = ktime_get_ns();
		if (seen != last) {
			last = seen;
			idle = 0;
		} else {
			idle += min_t(u64, now - prev, 2 * NSEC_PER_MSEC);
			if (idle > 200 * NSEC_PER_MSEC)
				return false;
		}
		prev = now;
		cond_resched();
	}
	return true;
}

static int nfb_gen_run(struct net *net, const struct nfb_gen_params *p)
{
	struct sk_buff **burst;
	struct net_device *dev;
	u64 sent = 0, dropped = 0, round = 0, start, steps = 0, base = 0;
	u64 step_cost = 0, next = 0;
	u32 flow = 0, pos = 0, i, n;
	int err = 0;

	dev = dev_get_by_name(net, p->dev);
	if (!dev)
		return -ENODEV;
	burst = kcalloc(p->burst, sizeof(*burst), GFP_KERNEL);
	if (!burst) {
		dev_put(dev);
		return -ENOMEM;
	}

	if (p->window || p->gap)
		step_cost = nfb_wait_calibrate();
	if (p->window)
		base = nfb_sink_packets();
	gen_lost = 0;
	/*
	 * The processes that started this run (ip netns exec, tee) and the
	 * set-up before it leave RCU callbacks behind; under icount they
	 * would otherwise run inside the measured window, more or less of
	 * them depending on where a grace period ends.
	 */
	rcu_barrier();
	start = ktime_get_ns();
	next = start;
	while (sent + dropped < p->count) {
		if (p->gap) {
			while (ktime_get_ns() < next) {
				nfb_wait_step();
				steps++;
			}
			next += p->gap;
		}
		n = min_t(u64, p->burst, p->count - sent - dropped);
		if (p->window &&
		    !nfb_wait_in_flight(sent, base, p->window - n, &steps)) {
			err = -ETIMEDOUT;
			break;
		}
		/* Build the burst first: it then arrives as a NIC would pass it. */
		for (i = 0; i < n; i++) {
			/* A flow's sequence numbers go up by one per packet. */
			burst[i] = nfb_gen_build(dev, p,
						 p->churn ? flow + round : flow,
						 round * p->train + pos);
			if (!burst[i]) {
				err = -ENOMEM;
				break;
			}
			if (++pos < p->train)
				continue;
			pos = 0;
			if (++flow == p->flows) {
				flow = 0;
				round++;
			}
		}
		n = i;
		local_bh_disable();
		for (i = 0; i < n; i++) {
			if (dev_queue_xmit(burst[i]) == NET_XMIT_SUCCESS)
				sent++;
			else
				dropped++;
		}
		local_bh_enable();
		if (err)
			break;
		if (signal_pending(current)) {
			err = -EINTR;
			break;
		}
		cond_resched();
	}
	/* Wait for the last packets too: an idle vCPU would skew icount. */
	if (p->window && !err && !nfb_wait_in_flight(sent, base, 0, &steps))
		err = -ETIMEDOUT;
	if (p->window)
		gen_lost = sent - (nfb_sink_packets() - base);
	gen_wait_ns = div_u64(steps * step_cost, 1024);
	gen_start_ns = start;
	gen_end_ns = ktime_get_ns();
	gen_sent = sent;
	gen_dropped = dropped;
	kfree(burst);
	dev_put(dev);
	return err;
}

static int nfb_parse_u32(const char *val, u32 min, u32 max, u32 *out)
{
	u32 v;

	if (kstrtou32(val, 0, &v) || v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

static int nfb_parse_gen(char *args, struct nfb_gen_params *p)
{
	bool have_src = false, have_dst = false, have_mac = false, v6 = false;
	char *tok, *val;
	u32 v;
	int err = 0;

	*p = (struct nfb_gen_params){ .sport = 10000, .dport = 9, .flows = 1,
				      .len = 128, .burst = 32, .count = 1000,
				      .ttl = 64, .train = 1 };
	while ((tok = strsep(&args, " \t\n")) && !err) {
		if (!*tok)
			continue;
		val = strchr(tok, '=');
		if (!val)
			return -EINVAL;
		*val++ = '\0';
		if (!strcmp(tok, "dev")) {
			if (strscpy(p->dev, val, IFNAMSIZ) < 0)
				return -EINVAL;
		} else if (!strcmp(tok, "dmac")) {
			have_mac = mac_pton(val, p->dmac);
			if (!have_mac)
				return -EINVAL;
		} else if (!strcmp(tok, "src") || !strcmp(tok, "dst")) {
			void *addr = tok[0] == 's' ? (void *)&p->src : (void *)&p->dst;
			bool is6 = strchr(val, ':');

			if (is6 ? !in6_pton(val, -1, addr, -1, NULL) :
				  !in4_pton(val, -1, addr, -1, NULL))
				return -EINVAL;
			if ((have_src || have_dst) && is6 != v6)
				return -EINVAL;
			v6 = is6;
			if (tok[0] == 's')
				have_src = true;
			else
				have_dst = true;
		} else if (!strcmp(tok, "sport")) {
			err = nfb_parse_u32(val, 1, 65535, &v);
			p->sport = v;
		} else if (!strcmp(tok, "dport")) {
			err = nfb_parse_u32(val, 1, 65535, &v);
			p->dport = v;
		} else if (!strcmp(tok, "flows")) {
			err = nfb_parse_u32(val, 1, NFB_BENCH_MAX_FLOWS, &p->flows);
		} else if (!strcmp(tok, "len")) {
			err = nfb_parse_u32(val, 64, 9000, &p->len);
		} else if (!strcmp(tok, "burst")) {
			err = nfb_parse_u32(val, 1, NFB_BENCH_MAX_BURST, &p->burst);
		} else if (!strcmp(tok, "train")) {
			err = nfb_parse_u32(val, 1, 65536, &p->train);
		} else if (!strcmp(tok, "ttl")) {
			err = nfb_parse_u32(val, 1, 255, &p->ttl);
		} else if (!strcmp(tok, "tos")) {
			err = nfb_parse_u32(val, 0, 255, &p->tos);
		} else if (!strcmp(tok, "window")) {
			err = nfb_parse_u32(val, 0, 4096, &p->window);
		} else if (!strcmp(tok, "churn")) {
			err = nfb_parse_u32(val, 0, 1, &p->churn);
		} else if (!strcmp(tok, "gap")) {
			err = nfb_parse_u32(val, 0, NSEC_PER_SEC, &p->gap);
		} else if (!strcmp(tok, "addrs")) {
			err = nfb_parse_u32(val, 0, 1, &p->addrs);
		} else if (!strcmp(tok, "headroom")) {
			err = nfb_parse_u32(val, 0, 1024, &p->headroom);
		} else if (!strcmp(tok, "count")) {
			err = kstrtou64(val, 0, &p->count) ? -EINVAL : 0;
		} else {
			return -EINVAL;
		}
	}
	if (err || !p->dev[0] || !have_mac || !have_src || !have_dst)
		return -EINVAL;
	p->ipv6 = v6;
	if (p->len < ETH_HLEN + (v6 ? sizeof(struct ipv6hdr) : sizeof(struct iphdr)) +
		     sizeof(struct udphdr) + sizeof(struct nfb_bench_payload))
		return -EINVAL;
	if ((u32)p->sport + p->flows - 1 > 65535)
		return -EINVAL;
	/* addrs: the last flow's source address in the first one's /24. */
	if (p->addrs && (v6 || p->churn ||
			 (ntohl(p->src.v4) & 0xff) + p->flows - 1 > 254))
		return -EINVAL;
	/* churn: the last round's flows reach sport + rounds + flows - 1. */
	if (p->churn && (p->train != 1 ||
			 p->sport + p->flows + div_u64(p->count, p->flows) > 65536 ||
			 p->flows + div_u64(p->count, p->flows) > NFB_BENCH_MAX_FLOWS))
		return -EINVAL;
	if (p->window && p->window < p->burst)
		return -EINVAL;
	return 0;
}

static ssize_t nfb_ctl_write(struct file *file, const char __user *ubuf,
			     size_t len, loff_t *ppos)
{
	struct net *net = current->nsproxy->net_ns;
	struct nfb_gen_params *p;
	char *buf, *args;
	int err;

	if (len > 512)
		return -EINVAL;
	buf = memdup_user_nul(ubuf, len);
	if (IS_ERR(buf))
		return PTR_ERR(buf);
	args = strim(buf);

	mutex_lock(&nfb_lock);
	if (!strncmp(args, "gen ", 4)) {
		p = kmalloc(sizeof(*p), GFP_KERNEL);
		err = p ? nfb_parse_gen(args + 4, p) : -ENOMEM;
		/* The lock is dropped while generating: the sink may need it. */
		mutex_unlock(&nfb_lock);
		if (!err)
			err = nfb_gen_run(net, p);
		kfree(p);
		kfree(buf);
		return err ? err : len;
	} else if (!strcmp(args, "sink off")) {
		nfb_sink_off();
		err = 0;
	} else if (!strncmp(args, "sink dev=", 9)) {
		err = nfb_sink_on(net, args + 9);
	} else if (!strcmp(args, "reset")) {
		nfb_sink_reset();
		gen_sent = 0;
		gen_dropped = 0;
		err = 0;
	} else {
		err = -EINVAL;
	}
	mutex_unlock(&nfb_lock);
	kfree(buf);
	return err ? err : len;
}

static int nfb_ctl_show(struct seq_file *m, void *v)
{
	struct nfb_sink_pcpu sum = {};
	int cpu;

	for_each_possible_cpu(cpu) {
		const struct nfb_sink_pcpu *st = per_cpu_ptr(sink_stats, cpu);

		if (!st->packets)
			continue;
		if (!sum.packets || st->first_ns < sum.first_ns)
			sum.first_ns = st->first_ns;
		if (!sum.packets || st->ttl_min < sum.ttl_min)
			sum.ttl_min = st->ttl_min;
		sum.ttl_max = max(sum.ttl_max, st->ttl_max);
		sum.bad_csum += st->bad_csum;
		sum.last_ns = max(sum.last_ns, st->last_ns);
		sum.packets += st->packets;
		sum.bytes += st->bytes;
		sum.reordered += st->reordered;
	}
	seq_printf(m, "gen_sent=%llu\ngen_dropped=%llu\ngen_start_ns=%llu\ngen_end_ns=%llu\n",
		   gen_sent, gen_dropped, gen_start_ns, gen_end_ns);
	seq_printf(m, "gen_wait_ns=%llu\ngen_lost=%llu\n", gen_wait_ns, gen_lost);
	seq_printf(m, "sink_dev=%s\nsink_packets=%llu\nsink_bytes=%llu\nsink_reordered=%llu\n",
		   sink_dev ? sink_dev->name : "", sum.packets, sum.bytes,
		   sum.reordered);
	seq_printf(m, "sink_first_ns=%llu\nsink_last_ns=%llu\n", sum.first_ns,
		   sum.last_ns);
	seq_printf(m, "sink_ttl_min=%u\nsink_ttl_max=%u\nsink_bad_csum=%llu\n",
		   sum.ttl_min, sum.ttl_max, sum.bad_csum);
	if (sink_verify && sink_src_v6)
		seq_printf(m, "sink_src=%pI6c\n", &sink_src);
	else if (sink_verify)
		seq_printf(m, "sink_src=%pI4\n", &sink_src);
	return 0;
}

static int nfb_ctl_open(struct inode *inode, struct file *file)
{
	return single_open(file, nfb_ctl_show, NULL);
}

static const struct file_operations nfb_ctl_fops = {
	.owner = THIS_MODULE,
	.open = nfb_ctl_open,
	.read = seq_read,
	.llseek = seq_lseek,
	.release = single_release,
	.write = nfb_ctl_write,
};

static int __init nfb_bench_init(void)
{
	int err;

	sink_stats = alloc_percpu(struct nfb_sink_pcpu);
	sink_next_seq = kvcalloc(NFB_BENCH_MAX_FLOWS, sizeof(*sink_next_seq),
				 GFP_KERNEL);
	if (!sink_stats || !sink_next_seq) {
		err = -ENOMEM;
		goto err_free;
	}
	err = register_netdevice_notifier(&nfb_netdev_notifier);
	if (err)
		goto err_free;
	nfb_dir = debugfs_create_dir("nfb_bench", NULL);
	debugfs_create_file("ctl", 0600, nfb_dir, NULL, &nfb_ctl_fops);
	return 0;

err_free:
	kvfree(sink_next_seq);
	free_percpu(sink_stats);
	return err;
}

static void __exit nfb_bench_exit(void)
{
	debugfs_remove_recursive(nfb_dir);
	unregister_netdevice_notifier(&nfb_netdev_notifier);
	mutex_lock(&nfb_lock);
	nfb_sink_off();
	mutex_unlock(&nfb_lock);
	kvfree(sink_next_seq);
	free_percpu(sink_stats);
}

module_init(nfb_bench_init);
module_exit(nfb_bench_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("nf_flow_bulk benchmark: UDP burst generator and sink");
