// SPDX-License-Identifier: GPL-2.0
/*
 * nf_flow_bulk: a small per-CPU cache in front of flow_offload_lookup().
 *
 * A NAPI batch usually carries several packets of few flows; the stock
 * lookup hashes the whole tuple (jhash) and walks the rhashtable for each
 * of them, about a third of the router's work per packet. The cache
 * remembers, per CPU, the flows found for the last few tuples.
 *
 * Why a cached pointer is safe to use (RCU rule): flows are freed after an
 * RCU grace period (flow_offload_free() -> kfree_rcu()), and a softirq
 * handler runs with BH disabled, which is an RCU read-side critical
 * section (all flavours are one since 4.20, preemptible RCU included), from
 * its start to its end. The kernel increments the CPU's softirq counter
 * (kstat) before every handler it runs, and only reports a quiescent state
 * between handlers. An entry is used only while this CPU serves a softirq
 * and the sum of its softirq counters has not moved since the entry was
 * made: then the CPU has stayed inside the same read-side section, and the
 * flow cannot have been freed. Outside a softirq (netif_receive_skb() from
 * process context, threaded NAPI) the cache is bypassed.
 *
 * As flow_offload_lookup() does, a hit is refused when the flow is being
 * torn down or its conntrack entry is dying; the tuple is then looked up
 * again, so a replacement flow is found as the stock hook would find it.
 *
 * One removal sets no flag: flow_offload_add() inserts the original
 * direction, fails to insert the reply direction and removes the original
 * again, then frees the flow after a grace period. A lookup on another CPU
 * may find the flow in that window, and the cache may hand it out until
 * this softirq run ends. That is safe: the flow's memory and its routes'
 * memory live at least as long (both are freed after a grace period, by
 * the argument above), a route whose last reference went is refused by
 * dst_hold_safe() in the hook, and the conntrack entry stays in its table.
 * It is equivalent to packets the stock hook looked up inside the window,
 * one softirq run later at most.
 *
 * Per-CPU rule: only the owning CPU touches its cache, in softirq context.
 */
#include <linux/kernel_stat.h>
#include <linux/percpu.h>
#include <net/netfilter/nf_conntrack.h>
#include <net/netfilter/nf_flow_table.h>

#include "nfb.h"

#define NFB_FC_SLOTS	32
/*
 * The hit-rate gate: of every NFB_FC_WINDOW lookups through the cache,
 * fewer than NFB_FC_MIN_HITS hits send the next NFB_FC_BYPASS lookups
 * straight to flow_offload_lookup(). Many flows interleaved (100
 * round-robin flows in bursts of 32) hit about never: each lookup then
 * paid the cache's bookkeeping (the epoch, the slot hash, the compare, the
 * fill; about 55 instructions per packet and router) for nothing. A window
 * is taken again after each bypass, so the cache comes back when the
 * traffic changes. Only speed depends on it: a bypassed lookup is the
 * stock one.
 */
#define NFB_FC_WINDOW	64
#define NFB_FC_MIN_HITS	8
#define NFB_FC_BYPASS	1024
#define NFB_FC_WORDS	(NFB_TUPLE_KEY_BYTES / sizeof(unsigned long))

/*
 * The loops over the few words of the key and of the softirq counters run
 * for every packet, with a count known at build time; -O2 does not unroll
 * them, so they are written out, and the compiler drops the words at and
 * past @n: eight for the softirq counters, twelve for the key (seven words
 * on 6.1 and 6.12; eleven since ab427db17885 ("netfilter: flowtable: Add
 * IPIP rx sw acceleration", 6.19) put the tunnel addresses in the key).
 */
static __always_inline u64 nfb_sum_words(const u64 *w, unsigned int n)
{
	u64 sum = 0;

	if (n > 0)
		sum += w[0];
	if (n > 1)
		sum += w[1];
	if (n > 2)
		sum += w[2];
	if (n > 3)
		sum += w[3];
	if (n > 4)
		sum += w[4];
	if (n > 5)
		sum += w[5];
	if (n > 6)
		sum += w[6];
	if (n > 7)
		sum += w[7];
	return sum;
}

/* The XOR of the words of @a: the lookup cache's slot hash, before folding. */
static __always_inline unsigned long
nfb_fold_words(const unsigned long *a, unsigned int n)
{
	unsigned long h = 0;

	if (n > 0)
		h ^= a[0];
	if (n > 1)
		h ^= a[1];
	if (n > 2)
		h ^= a[2];
	if (n > 3)
		h ^= a[3];
	if (n > 4)
		h ^= a[4];
	if (n > 5)
		h ^= a[5];
	if (n > 6)
		h ^= a[6];
	if (n > 7)
		h ^= a[7];
	if (n > 8)
		h ^= a[8];
	if (n > 9)
		h ^= a[9];
	if (n > 10)
		h ^= a[10];
	if (n > 11)
		h ^= a[11];
	return h;
}

/* Zero when the words of @a and @b are equal. */
static __always_inline unsigned long
nfb_diff_words(const unsigned long *a, const unsigned long *b, unsigned int n)
{
	unsigned long d = 0;

	if (n > 0)
		d |= a[0] ^ b[0];
	if (n > 1)
		d |= a[1] ^ b[1];
	if (n > 2)
		d |= a[2] ^ b[2];
	if (n > 3)
		d |= a[3] ^ b[3];
	if (n > 4)
		d |= a[4] ^ b[4];
	if (n > 5)
		d |= a[5] ^ b[5];
	if (n > 6)
		d |= a[6] ^ b[6];
	if (n > 7)
		d |= a[7] ^ b[7];
	if (n > 8)
		d |= a[8] ^ b[8];
	if (n > 9)
		d |= a[9] ^ b[9];
	if (n > 10)
		d |= a[10] ^ b[10];
	if (n > 11)
		d |= a[11] ^ b[11];
	return d;
}

struct nfb_fc_entry {
	const struct nf_flowtable		*ft;
	struct flow_offload_tuple_rhash		*th;
	u64					epoch;
	unsigned long				key[NFB_FC_WORDS];
};

struct nfb_fc {
	struct nfb_fc_entry	slot[NFB_FC_SLOTS];
	u16			bypass;	/* lookups left past the cache */
	u8			probes;	/* lookups in this window */
	u8			hits;	/* hits in this window */
};

static DEFINE_PER_CPU(struct nfb_fc, nfb_fc);

/*
 * Moves before every softirq handler this CPU runs. The counters are summed
 * eight bytes at a time: an increment of any of them changes the sum, and
 * the sum cannot come back to an earlier value before 2^32 increments.
 */
static u64 nfb_fc_epoch(void)
{
	const struct kernel_stat *ks = this_cpu_ptr(&kstat);
	u64 sum;

	BUILD_BUG_ON(offsetof(struct kernel_stat, softirqs) % sizeof(u64));
	BUILD_BUG_ON(sizeof(ks->softirqs) > 8 * sizeof(u64));
	sum = nfb_sum_words((const u64 *)ks->softirqs,
			    sizeof(ks->softirqs) / sizeof(u64));
	if (sizeof(ks->softirqs) % sizeof(u64))
		sum += ks->softirqs[NR_SOFTIRQS - 1];
	return sum;
}

static unsigned int nfb_fc_slot(const unsigned long *key)
{
	unsigned long h = nfb_fold_words(key, NFB_FC_WORDS);

	h ^= h >> 32;
	h ^= h >> 16;
	h ^= h >> 8;
	return h & (NFB_FC_SLOTS - 1);
}

static bool nfb_fc_usable(const struct flow_offload_tuple_rhash *th)
{
	const struct flow_offload *flow;

	flow = container_of(th, struct flow_offload, tuplehash[th->tuple.dir]);
	return !test_bit(NF_FLOW_TEARDOWN, &flow->flags) &&
	       !nf_ct_is_dying(flow->ct);
}

/**
 * nfb_flow_lookup - flow_offload_lookup() with a per-CPU cache
 * @ft: the flowtable, valid for the caller's RCU read-side section
 * @tuple: the tuple; its first NFB_TUPLE_KEY_BYTES are the key, the
 *	lookup fields and zeroes elsewhere (see nfb_tuple_init())
 *
 * Return: what flow_offload_lookup() would return.
 */
struct flow_offload_tuple_rhash *nfb_flow_lookup(struct nf_flowtable *ft,
						 struct flow_offload_tuple *tuple)
{
	const unsigned long *key = (const unsigned long *)tuple;
	struct flow_offload_tuple_rhash *th;
	struct nfb_fc_entry *e;
	struct nfb_fc *fc;
	u64 epoch;

	BUILD_BUG_ON(NFB_TUPLE_KEY_BYTES % sizeof(unsigned long) ||
		     sizeof(*tuple) < NFB_TUPLE_KEY_BYTES ||
		     NFB_FC_WORDS > 12);

	if (!in_serving_softirq())
		return flow_offload_lookup(ft, tuple);

	fc = this_cpu_ptr(&nfb_fc);
	if (unlikely(fc->bypass)) {
		fc->bypass--;
		return flow_offload_lookup(ft, tuple);
	}
	if (unlikely(++fc->probes == NFB_FC_WINDOW)) {
		if (fc->hits < NFB_FC_MIN_HITS)
			fc->bypass = NFB_FC_BYPASS;
		fc->probes = 0;
		fc->hits = 0;
	}

	epoch = nfb_fc_epoch();
	e = &fc->slot[nfb_fc_slot(key)];
	if (e->th && e->epoch == epoch && e->ft == ft &&
	    !nfb_diff_words(e->key, key, NFB_FC_WORDS) &&
	    likely(nfb_fc_usable(e->th))) {
		fc->hits++;
		return e->th;
	}

	th = flow_offload_lookup(ft, tuple);
	e->th = th;
	if (th) {
		e->ft = ft;
		e->epoch = epoch;
		memcpy(e->key, key, sizeof(e->key));
	}
	return th;
}
