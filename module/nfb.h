/* SPDX-License-Identifier: GPL-2.0 */
/*
 * nf_flow_bulk: definitions shared by the module's source files.
 */
#ifndef _NFB_H
#define _NFB_H

#include <linux/in6.h>
#include <linux/list.h>
#include <linux/netdevice.h>
#include <linux/netfilter.h>
#include <linux/percpu.h>
#include <linux/skbuff.h>
#include <linux/workqueue.h>
#include <net/net_namespace.h>
#include <net/netfilter/nf_flow_table.h>
#include <net/netfilter/nf_tables.h>
#include <net/sch_generic.h>

#include "nf_flow_bulk.h"

/* Default and upper bound of the bulk-size cap (sysctl nf_flow_bulk_max). */
#define NFB_BULK_DEFAULT	64
#define NFB_BULK_LIMIT		256

/* Per-CPU queue length at which the hook drains the queue inline. */
#define NFB_QUEUE_FLUSH		1024

/*
 * Per-CPU statistics of one network namespace. Each CPU writes only its own
 * copy, with BH disabled; readers sum or print them without locking, like
 * /proc/net/stat/nf_flowtable.
 */
struct nfb_stats {
	u64	bulks;
	u64	hist[NFB_HIST_BUCKETS];
	u64	decline[__NFB_DECLINE_MAX];
	u64	fallback[__NFB_FALLBACK_MAX];
	u64	drop[__NFB_DROP_MAX];
	/*
	 * Packets taken, per receive encapsulation and transmit type: one
	 * increment per packet; the totals per encapsulation, per transmit
	 * type and in all are sums (nfb_stats_taken()).
	 */
	u64	taken[__NFB_ENCAP_MAX][__NFB_XMIT_MAX];
	/*
	 * Declines that sent queued packets ahead of the declined one
	 * (nfb_flush_local()): each one walked this CPU's queue.
	 */
	u64	drains;
	/*
	 * Packets queued and not yet transmitted or freed. Incremented by the
	 * CPU that queues, decremented by the CPU that runs the NAPI poll
	 * (the same one unless the CPU went offline): only the sum over all
	 * CPUs is meaningful. Namespace exit waits for it to reach zero
	 * before freeing this memory.
	 */
	long	inflight;
};

/* The sums of @st->taken: in all, per encapsulation, per transmit type. */
static inline u64 nfb_stats_taken(const struct nfb_stats *st,
				  u64 encap[__NFB_ENCAP_MAX],
				  u64 xmit[__NFB_XMIT_MAX])
{
	u64 sum = 0;
	int e, x;

	if (encap)
		memset(encap, 0, sizeof(u64) * __NFB_ENCAP_MAX);
	if (xmit)
		memset(xmit, 0, sizeof(u64) * __NFB_XMIT_MAX);
	for (e = 0; e < __NFB_ENCAP_MAX; e++) {
		for (x = 0; x < __NFB_XMIT_MAX; x++) {
			u64 n = READ_ONCE(st->taken[e][x]);

			sum += n;
			if (encap)
				encap[e] += n;
			if (xmit)
				xmit[x] += n;
		}
	}
	return sum;
}

/* Rescans of an unsettled attachment back off from 1/2 s to 64 s. */
#define NFB_RESCAN_MIN		(HZ / 2)
#define NFB_RESCAN_MAX		(64 * HZ)

/* Per-netns state. */
struct nfb_net {
	struct net			*net;
	struct nfb_stats __percpu	*stats;
	struct ctl_table_header		*sysctl;
	int				enable;
	int				bulk_max;
	int				pppoe_direct;	/* 6.1 / 6.12 */
	struct list_head		attachments;	/* under RTNL */
	unsigned int			n_attachments;	/* under RTNL */
	struct delayed_work		rescan_work;
	unsigned long			rescan_next;	/* jiffies */
	unsigned long			rescan_delay;	/* under RTNL */
	unsigned long			poll_at;	/* jiffies, under RTNL */
	unsigned long			swept_at;	/* jiffies, under RTNL */
	/*
	 * Set under RTNL once the namespace (or the module) is going away:
	 * no attach, no rescan, no new work after that.
	 */
	bool				exiting;
	/*
	 * Set under RTNL by the first attach, never cleared: a namespace
	 * without it has had no hook, no rescan work and no packet in
	 * flight, and its exit has nothing to stop or wait for.
	 */
	bool				attached_once;
	/* Set last by nfb_net_init(): the notifier ignores a half-made nn. */
	bool				ready;
};

/* One attached flowtable, identified by what the user gave. Under RTNL. */
struct nfb_attach {
	struct list_head	list;
	struct nfb_net		*nn;
	u32			family;
	char			table[NFT_TABLE_MAXNAMELEN];
	char			name[NFT_NAME_MAXLEN];
	int			priority;	/* last seen flowtable priority */
	/*
	 * The flowtable followed: nf_tables' handles of its table and of
	 * itself, taken when an attach first finds it (bound). A flowtable
	 * of that name with other handles is another one, created after this
	 * one was deleted (by nft, or by a file that declares it hook
	 * ingress), and is not taken: the attachment is then stale until it
	 * is attached again or detached.
	 */
	u64			table_handle;
	u64			ft_handle;
	bool			bound;
	bool			stale;		/* deleted, another one seen */
	bool			unsettled;	/* hooks pending removal */
	u64			scans;		/* rescans since attach */
	struct list_head	hooks;		/* struct nfb_hook */
};

/*
 * One ingress hook on one flowtable device. Hook function priv. Read by
 * the datapath under RCU; freed with kfree_rcu() after unregistration.
 */
struct nfb_hook {
	struct list_head	list;		/* under RTNL */
	struct nf_hook_ops	ops;
	struct nfb_net		*nn;
	struct net_device	*dev;		/* valid until NETDEV_UNREGISTER */
	int			ft_priority;
	unsigned int		missing;	/* rescans not finding it */
	/*
	 * The stock flowtable hook's priv seen at (re)scan time. Compared
	 * with the entry that follows ours, never dereferenced on its own.
	 */
	const void		*ft_cookie;
	/*
	 * dev->nf_hooks_ingress as the last scan saw it, never dereferenced:
	 * the datapath asks for a rescan only when the device's hook list
	 * changed since, so a layout the module cannot use (another hook
	 * between ours and the flowtable) costs one scan, not one per packet.
	 */
	const void		*seen;
	const void		*scan_seen;	/* taken before a scan walks */
	/*
	 * Set by the datapath when it found the hook list changed since the
	 * last scan, cleared by the scan that looks at this device again.
	 */
	bool			dirty;
	u64			checks;		/* nfb_sync_dev() runs, under RTNL */
	struct rcu_head		rcu;
};

/*
 * What transmit needs, copied into skb->cb by the hook. The output device
 * is skb->dev, held (dev_hold(), untracked: the tracker would not fit in
 * the control block) from the moment the packet is taken until its bulk
 * has been handed on; the route, for FLOW_OFFLOAD_XMIT_NEIGH, is
 * skb_dst(), referenced. Nothing else of the flow survives the hook.
 *
 * @encap is the encapsulation the flow's packets leave with: the receive
 * encapsulation of the flow's other direction, which is what the stock
 * flowtable pushes on kernels that push it. On the kernels whose
 * flowtable leaves the push to the VLAN or PPP device the route points at
 * (6.1 and 6.12), the output device already implies it; the bulk key
 * compares it anyway, so that no bulk can mix two encapsulations whatever
 * the device layout.
 *
 * Where it lives: past the qdisc_skb_cb header (pkt_len,
 * slave_dev_queue_mapping, tc_classid; bytes 0..7; on 7.x see
 * NFB_SDQM_IN_CB below). The output device's ndo_select_queue() writes
 * that header: bond, team, net_failover and netvsc keep
 * slave_dev_queue_mapping there until their ndo_start_xmit() reads it
 * back. With the next hop in bytes 0..15 a bond output corrupted every
 * IPv6 next hop and every cached MAC address. A device with its own pick
 * is asked only once this is cleared (nfb_cb_clear(); txq.h,
 * nfb_pick_frame()), and no qdisc reads its data[] before enqueue.
 */
struct nfb_cb {
	union {
		__be32		v4;
		struct in6_addr	v6;
		struct {			/* FLOW_OFFLOAD_XMIT_DIRECT */
			u8	h_dest[ETH_ALEN];
			u8	h_source[ETH_ALEN];
		} mac;
	} nexthop;
	struct nfb_net		*nn;		/* kept alive by inflight */
	u32			flow_hash;	/* order key, see NFB_ORDER_ADDR_BITS */
	u16			bulk_max;
	u8			xmit;		/* enum nfb_xmit */
	/*
	 * NEIGH, and the output device is not the route's: the module
	 * stands in for the route's device (a VLAN device's tag, from 6.19
	 * any encapsulation or tunnel, pushed here), whose neighbour it
	 * uses. Set when the packet is taken: by the time of transmit the
	 * route's device may be gone and the route pointing elsewhere.
	 */
	u8			stand_in;
	struct {
		u16		id;
		__be16		proto;
	} encap[NF_FLOW_TABLE_ENCAP_MAX];
};

/*
 * The order key of a packet (cb->flow_hash, nfb_order_key()): computed
 * from what the hook reads before any lookup, the addresses, L4 protocol
 * and ports of the IP header the flow's tuple is made of (the inner one
 * of a tunnel), so that a packet the module declines, even one that
 * finds no flow, can be told apart from the queued packets of other
 * flows. Symmetric in source and destination: both directions of a flow
 * without NAT share it. The low NFB_ORDER_ADDR_BITS bits are a hash of
 * the addresses alone, for the declines that come before the ports are
 * read (fragments, options); the bits above them are the top bits of a
 * multiplicative hash of all of it, the ones every bit of the hashed word
 * reaches. What indexes by part of the key (the filters of
 * nfb_flush_local(), the drain's bloom and slots) takes its top bits,
 * NFB_ORDER_IDX(): flows that differ only in their addresses' last bytes,
 * with the same ports, spread there as flows that differ in a port do.
 */
#define NFB_ORDER_ADDR_BITS	6
#define NFB_ORDER_ADDR_MASK	((1U << NFB_ORDER_ADDR_BITS) - 1)
/* Bits of the per-CPU filter of the queued packets' full keys. */
#define NFB_ORDER_FLOW_BITS	256
/* An index of 2^@bits entries from the order key @key: its top bits. */
#define NFB_ORDER_IDX(key, bits)	((u32)(key) >> (32 - (bits)))

/* How much of a declined packet the hook could read (nfb_flush_local()). */
enum nfb_order_scope {
	NFB_ORDER_NS,		/* nothing: every queued packet of the netns */
	NFB_ORDER_ADDR,		/* its addresses: the key's low bits */
	NFB_ORDER_FLOW,		/* its flow: the whole key */
};

#define NFB_CB_OFFSET	offsetof(struct qdisc_skb_cb, data)
#define NFB_CB(skb)	((struct nfb_cb *)((skb)->cb + NFB_CB_OFFSET))

/*
 * Where ndo_select_queue() of a bond, team, net_failover or netvsc output
 * leaves the queue mapping its ndo_start_xmit() reads back. 6.1 and 6.12
 * keep slave_dev_queue_mapping in the qdisc_skb_cb header, before our
 * part. 7.x has it past data[], in our part (skb->cb bytes 28..29, the
 * upper half of @nn), where a bond output's queue mapping would make @nn
 * a non-canonical pointer for the drain. There (NFB_SDQM_IN_CB, told by
 * the layout itself) the slot's bytes live in tc_classid's place, before our
 * part and read by nobody before the qdisc, while our part is in use:
 * nfb_sdqm_park() puts the bytes the packet came with there when the
 * packet is taken, and nfb_cb_clear() moves them back to their own place,
 * before the device's ndo_select_queue() is asked (txq.h,
 * nfb_pick_frame()). A single-queue master gets no ndo_select_queue()
 * call, in the stock path as here, and reads the bytes the packet came
 * with.
 */
#define NFB_SDQM_OFFSET	offsetof(struct qdisc_skb_cb, slave_dev_queue_mapping)
#define NFB_SDQM_STASH	offsetof(struct qdisc_skb_cb, tc_classid)
#define NFB_SDQM_LEN	sizeof_field(struct qdisc_skb_cb, slave_dev_queue_mapping)
#define NFB_SDQM_IN_CB	(NFB_SDQM_OFFSET >= NFB_CB_OFFSET)

/*
 * Our part of the control block, zeroed before a packet goes on to the
 * transmit side; the qdisc_skb_cb header stays as the queue pick left it.
 */
static inline void nfb_sdqm_park(struct sk_buff *skb)
{
	if (NFB_SDQM_IN_CB)
		memcpy(skb->cb + NFB_SDQM_STASH, skb->cb + NFB_SDQM_OFFSET,
		       NFB_SDQM_LEN);
}

static inline void nfb_cb_clear(struct sk_buff *skb)
{
	memset(NFB_CB(skb), 0, sizeof(struct nfb_cb));
	if (NFB_SDQM_IN_CB) {
		memcpy(skb->cb + NFB_SDQM_OFFSET, skb->cb + NFB_SDQM_STASH,
		       NFB_SDQM_LEN);
		memset(skb->cb + NFB_SDQM_STASH, 0, NFB_SDQM_LEN);
	}
}

static inline void nfb_count_decline(struct nfb_net *nn,
				     enum nfb_decline_reason r)
{
	this_cpu_inc(nn->stats->decline[r]);
}

static inline void nfb_count_fallback(struct nfb_net *nn,
				      enum nfb_fallback_reason r)
{
	this_cpu_inc(nn->stats->fallback[r]);
}

static inline void nfb_count_drop(struct nfb_net *nn, enum nfb_drop_reason r)
{
	this_cpu_inc(nn->stats->drop[r]);
}

/* netns.c */
extern unsigned int nfb_net_id;
struct nfb_net *nfb_pernet(const struct net *net);
int nfb_netns_files_init(struct nfb_net *nn);
void nfb_netns_files_fini(struct nfb_net *nn);

/* fthook.c */
extern nf_hookfn *nfb_inet_hook;
void nfb_learn_inet_hook(nf_hookfn *fn, const void *priv);
void nfb_rescan_request(struct nfb_hook *h);
void nfb_fthook_fini(void);

/*
 * Whether @fn is a flowtable's ingress hook. Inline: the datapath asks for
 * every packet (nfb_next_flowtable()).
 */
static inline bool nfb_is_flowtable_hook(nf_hookfn *fn)
{
	return fn == nf_flow_offload_ip_hook ||
	       fn == nf_flow_offload_ipv6_hook ||
	       (fn && fn == READ_ONCE(nfb_inet_hook));
}

/* attach.c */
int nfb_attach(struct net *net, u32 family, const char *table,
	       const char *name, struct netlink_ext_ack *extack);
int nfb_detach(struct net *net, u32 family, const char *table,
	       const char *name, struct netlink_ext_ack *extack);
void nfb_detach_all(struct nfb_net *nn);
void nfb_rescan_all(struct nfb_net *nn);
void nfb_rescan_work(struct work_struct *work);
bool nfb_hook_adjacent(const struct nfb_hook *h);
u8 nfb_attach_state(const struct nfb_attach *a);
int nfb_attach_init(void);
void nfb_attach_fini(void);

/* fastpath.c */
unsigned int nfb_hook_fn(void *priv, struct sk_buff *skb,
			 const struct nf_hook_state *state);

/*
 * Words of a tuple's key at most: the loops over them are unrolled in
 * full ("GCC unroll 12"), as the count is known at build time and -O2
 * alone leaves a loop, or a memset() call, per packet.
 */
#define NFB_KEY_WORDS_MAX	12

/*
 * The part of struct flow_offload_tuple the flowtable hashes and compares
 * (up to __hash), rounded up to whole words for the lookup cache.
 */
#define NFB_TUPLE_KEY_BYTES \
	round_up(offsetof(struct flow_offload_tuple, __hash), sizeof(unsigned long))

/*
 * Zero the key part of a tuple before its fields are set. The stock hook
 * zeroes the whole tuple, but the lookup only reads the key; the callers
 * declare the tuple __uninitialized, or the kernel's automatic zeroing of
 * stack variables (INIT_STACK_ALL_ZERO, on in Debian) would clear all of
 * it with a rep stos every packet. Word by word, unrolled: a memset()
 * becomes one too.
 */
static inline void nfb_tuple_init(struct flow_offload_tuple *tuple)
{
	unsigned long *w = (unsigned long *)tuple;
	const unsigned int n = NFB_TUPLE_KEY_BYTES / sizeof(unsigned long);
	unsigned int i;

	BUILD_BUG_ON(n > NFB_KEY_WORDS_MAX);
#pragma GCC unroll 12
	for (i = 0; i < n; i++)
		w[i] = 0;
}

/* flowcache.c */
struct flow_offload_tuple_rhash *nfb_flow_lookup(struct nf_flowtable *ft,
						 struct flow_offload_tuple *tuple,
						 u32 **refreshed);
int nfb_flowcache_init(void);
void nfb_flowcache_fini(void);

/* queue.c */
void nfb_enqueue(struct sk_buff *skb);
void nfb_flush_local(const struct nfb_net *nn, enum nfb_order_scope scope,
		     u32 key);
int nfb_queue_init(void);
void nfb_queue_fini(void);
void nfb_wait_inflight(struct nfb_net *nn);
void nfb_test_hold_release(void);

/* netlink.c */
int nfb_genl_init(void);
void nfb_genl_fini(void);

#endif /* _NFB_H */
