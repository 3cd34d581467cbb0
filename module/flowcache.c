// SPDX-License-Identifier: GPL-2.0
/*
 * nf_flow_bulk: a per-CPU cache in front of flow_offload_lookup().
 *
 * The stock lookup hashes the whole tuple (jhash) and walks the
 * rhashtable for every packet, about a third of the router's work per
 * packet. The cache remembers, per CPU, the flows found for the last few
 * hundred tuples, 4-way set associative, and keeps them across softirq
 * runs: a hundred flows interleaved packet by packet still hit.
 *
 * Why a cached pointer is safe to use (RCU rule). Flows are freed after an
 * RCU grace period (flow_offload_free() -> kfree_rcu()), their routes too
 * (dst_release() -> call_rcu()), and flowtables after synchronize_rcu().
 * The cache takes RCU's grace-period state (get_state_synchronize_rcu_full():
 * the normal and the expedited sequence, each of which moves when a grace
 * period of its kind starts) before every lookup, and keeps its entries
 * only while that state has not moved. A flow found by a lookup made after
 * state C was taken was still linked then, so the grace period that frees
 * it starts after C. When a later lookup, inside a read-side section R,
 * still reads C, no grace period has started since: every one that starts
 * later waits for R, and the flow outlives R, the only section in which
 * the cached pointer is used. The ordering this needs (a flow unlinked
 * before C is not found after C; a grace period whose start this CPU has
 * not seen has no quiescent state of this CPU) is what the polled
 * grace-period interface itself relies on; the full barrier is inside
 * get_state_synchronize_rcu_full(). Any grace period starting anywhere
 * empties every CPU's cache (lazily, set by set): entries live for
 * milliseconds on a busy system, and a sequence cannot come back to an
 * old value, unlike the softirq-counter epoch this replaced.
 *
 * As flow_offload_lookup() does, a hit is refused when the flow is being
 * torn down or its conntrack entry is dying; the tuple is then looked up
 * again, so a replacement flow is found as the stock hook would find it.
 *
 * One removal sets no flag: flow_offload_add() inserts the original
 * direction, fails to insert the reply direction and removes the original
 * again, then frees the flow after a grace period. A lookup on another CPU
 * may find the flow in that window, and the cache may hand it out until
 * the grace period that frees it starts, which the free itself requests.
 * That is safe: the flow's memory and its routes' memory live that long (by
 * the argument above), a route whose last reference went is refused by
 * dst_hold_safe() in the hook, and the conntrack entry stays in its table.
 *
 * Each entry also remembers the jiffy in which this CPU last refreshed the
 * flow's timeout (flow_offload_refresh()): the hook refreshes a flow at
 * most once per jiffy and CPU. That is what the stock hook's refresh per
 * packet amounts to: it computes the same timeout for every packet of a
 * jiffy and writes it only when it moved by more than HZ.
 *
 * Per-CPU rule: only the owning CPU touches its cache, with BH off: in a
 * softirq, or where BH is disabled outside one, as a threaded NAPI poll
 * runs the hook (in_softirq() without in_serving_softirq()). Neither a
 * softirq nor another BH-off section can start on this CPU until the
 * lookup's caller is done with the entry (nfb_refresh()), and a BH-off
 * region is an RCU read-side section (on PREEMPT_RT local_bh_disable()
 * takes rcu_read_lock() itself), as the argument above needs; the hook
 * holds rcu_read_lock() anyway. With BH on (netif_receive_skb() from
 * process context) the cache is bypassed.
 */
#include <linux/hash.h>
#include <linux/percpu.h>
#include <net/netfilter/nf_conntrack.h>
#include <net/netfilter/nf_flow_table.h>

#include "nfb.h"

#define NFB_FC_WAYS	4
#define NFB_FC_SETS	128	/* 512 flows: 12 KiB per CPU */
#define NFB_FC_SET_BITS	ilog2(NFB_FC_SETS)
/*
 * The hit-rate gate: of every NFB_FC_WINDOW lookups through the cache,
 * fewer than NFB_FC_MIN_HITS hits (more flows than the cache holds, 10,000
 * round-robin, say) send the next NFB_FC_BYPASS lookups straight to
 * flow_offload_lookup(): each lookup would otherwise pay the cache's
 * bookkeeping (the state, the hash, the compares, the fill) for nothing.
 * The window is long enough for a cold cache (just after a grace period
 * started) to fill with a few hundred interleaved flows and hit before it
 * ends. A window is taken again after each bypass, so the cache comes back
 * when the traffic changes. Only speed depends on it: a bypassed lookup is
 * the stock one.
 */
#define NFB_FC_WINDOW		256
#define NFB_FC_MIN_HITS		32
#define NFB_FC_BYPASS		4096
#define NFB_FC_WORDS	(NFB_TUPLE_KEY_BYTES / sizeof(unsigned long))
/* Bytes of the key in its last word: the rest is the tuple's, not key. */
#define NFB_FC_TAIL	(offsetof(struct flow_offload_tuple, __hash) % \
			 sizeof(unsigned long))

/*
 * The loops over the few words of the key run for every packet, with a
 * count known at build time (seven words on 6.1 and 6.12, eleven where the
 * key holds tunnel addresses): unrolled in full, as -O2 does not by
 * itself, so that no loop control is left.
 */
static __always_inline unsigned long
nfb_fold_words(const unsigned long *a, unsigned int n)
{
	unsigned long h = 0;
	unsigned int i;

#pragma GCC unroll 12
	for (i = 0; i < n && i < NFB_KEY_WORDS_MAX; i++)
		h ^= a[i];
	return h;
}

/* Zero when the words of @a and @b are equal. */
static __always_inline unsigned long
nfb_diff_words(const unsigned long *a, const unsigned long *b, unsigned int n)
{
	unsigned long d = 0;
	unsigned int i;

#pragma GCC unroll 12
	for (i = 0; i < n && i < NFB_KEY_WORDS_MAX; i++)
		d |= a[i] ^ b[i];
	return d;
}

/*
 * Whether the lookup key @key (the key part of a tuple, zeroes past it)
 * equals the key of the flow's tuple @t, as the flowtable compares them
 * (memcmp() up to __hash). The last word of @t holds fields past the key
 * (dir, xmit_type, mtu): they are masked off.
 */
static __always_inline bool nfb_key_equal(const unsigned long *key,
					  const struct flow_offload_tuple *t)
{
	const unsigned long *w = (const unsigned long *)t;
	const unsigned int n = NFB_FC_WORDS;
	unsigned long mask = ~0UL;

	if (NFB_FC_TAIL) {
#ifdef __LITTLE_ENDIAN
		mask = (1UL << (8 * NFB_FC_TAIL)) - 1;
#else
		mask = ~0UL << (8 * (sizeof(unsigned long) - NFB_FC_TAIL));
#endif
	}
	return !(nfb_diff_words(key, w, n - 1) |
		 ((key[n - 1] ^ w[n - 1]) & mask));
}

/*
 * One set. An entry is valid only while the set's generation is the
 * cache's: a set of an older one is empty. The tags (hash bits the set
 * index does not use) spare a miss reading the flows' memory.
 */
struct nfb_fc_set {
	struct flow_offload_tuple_rhash	*th[NFB_FC_WAYS];
	const struct nf_flowtable	*ft[NFB_FC_WAYS];
	u32				tag[NFB_FC_WAYS];
	u32				refreshed[NFB_FC_WAYS];	/* jiffy */
	u64				gen;
	u8				victim;	/* next way to replace */
};

struct nfb_fc {
	struct nfb_rcu_state	seen;	/* RCU's state when gen was taken */
	struct nfb_rcu_state	now;	/* scratch, kept off the stack */
	u64			gen;
	u16			bypass;	/* lookups left past the cache */
	u16			probes;	/* lookups in this window */
	u16			hits;	/* hits in this window */
	struct nfb_fc_set	set[NFB_FC_SETS];
};

static struct nfb_fc __percpu *nfb_fc;

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
 * @refreshed: set to the cached flow's jiffy of its last refresh on this
 *	CPU (nfb_refresh() reads and sets it until the next lookup on this
 *	CPU), or to NULL when the flow did not come through the cache
 *
 * Return: what flow_offload_lookup() would return.
 */
struct flow_offload_tuple_rhash *nfb_flow_lookup(struct nf_flowtable *ft,
						 struct flow_offload_tuple *tuple,
						 u32 **refreshed)
{
	const unsigned long *key = (const unsigned long *)tuple;
	struct flow_offload_tuple_rhash *th;
	struct nfb_fc_set *s;
	struct nfb_fc *fc;
	unsigned int w;
	u64 h;
	u32 tag;

	BUILD_BUG_ON(NFB_TUPLE_KEY_BYTES % sizeof(unsigned long) ||
		     sizeof(*tuple) < NFB_TUPLE_KEY_BYTES ||
		     NFB_FC_WORDS > 12 || NFB_FC_WORDS < 2);

	*refreshed = NULL;
	if (!in_softirq())
		return flow_offload_lookup(ft, tuple);

	fc = this_cpu_ptr(nfb_fc);
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

	/* Before the lookup: what it finds was linked after this. */
	nfb_rcu_state_get(&fc->now);
	if (unlikely(!nfb_rcu_state_same(&fc->now, &fc->seen))) {
		fc->seen = fc->now;
		fc->gen++;
	}

	h = (nfb_fold_words(key, NFB_FC_WORDS) ^ (unsigned long)ft) *
	    GOLDEN_RATIO_64;
	s = &fc->set[h >> (64 - NFB_FC_SET_BITS)];
	tag = (u32)h;
	if (unlikely(s->gen != fc->gen)) {
		memset(s->th, 0, sizeof(s->th));
		s->gen = fc->gen;
	}

	for (w = 0; w < NFB_FC_WAYS; w++) {
		th = s->th[w];
		if (th && s->tag[w] == tag && s->ft[w] == ft &&
		    nfb_key_equal(key, &th->tuple)) {
			if (likely(nfb_fc_usable(th))) {
				fc->hits++;
				*refreshed = &s->refreshed[w];
				return th;
			}
			break;	/* torn down: its way takes the new answer */
		}
	}

	th = flow_offload_lookup(ft, tuple);
	if (w == NFB_FC_WAYS) {
		if (!th)
			return NULL;
		for (w = 0; w < NFB_FC_WAYS && s->th[w]; w++)
			;
		if (w == NFB_FC_WAYS)
			w = s->victim++ % NFB_FC_WAYS;
	}
	s->th[w] = th;
	s->ft[w] = ft;
	s->tag[w] = tag;
	/* Not this jiffy: the new flow's first packet refreshes it. */
	s->refreshed[w] = nf_flowtable_time_stamp - 1;
	*refreshed = &s->refreshed[w];
	return th;
}

int nfb_flowcache_init(void)
{
	struct nfb_fc *fc;
	int cpu;

	nfb_fc = alloc_percpu(struct nfb_fc);
	if (!nfb_fc)
		return -ENOMEM;
	/* Generation 0 is no set's: every set starts empty. */
	for_each_possible_cpu(cpu) {
		fc = per_cpu_ptr(nfb_fc, cpu);
		nfb_rcu_state_get(&fc->seen);
		fc->gen = 1;
	}
	return 0;
}

/* After the hooks are gone and a grace period has passed. */
void nfb_flowcache_fini(void)
{
	free_percpu(nfb_fc);
	nfb_fc = NULL;
}
