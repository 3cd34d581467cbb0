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
 * Per-CPU rule: only the owning CPU touches its cache, in softirq context.
 */
#include <linux/kernel_stat.h>
#include <linux/percpu.h>
#include <net/netfilter/nf_conntrack.h>
#include <net/netfilter/nf_flow_table.h>

#include "nfb.h"

#define NFB_FC_SLOTS	32
#define NFB_FC_WORDS	DIV_ROUND_UP(offsetof(struct flow_offload_tuple, __hash), \
				     sizeof(unsigned long))

struct nfb_fc_entry {
	const struct nf_flowtable		*ft;
	struct flow_offload_tuple_rhash		*th;
	unsigned long				epoch;
	unsigned long				key[NFB_FC_WORDS];
};

struct nfb_fc {
	struct nfb_fc_entry	slot[NFB_FC_SLOTS];
};

static DEFINE_PER_CPU(struct nfb_fc, nfb_fc);

/* Moves before every softirq handler this CPU runs. */
static unsigned long nfb_fc_epoch(void)
{
	const struct kernel_stat *ks = this_cpu_ptr(&kstat);
	unsigned long sum = 0;
	int i;

	for (i = 0; i < NR_SOFTIRQS; i++)
		sum += ks->softirqs[i];
	return sum;
}

static unsigned int nfb_fc_slot(const unsigned long *key)
{
	unsigned long h = 0;
	int i;

	for (i = 0; i < NFB_FC_WORDS; i++)
		h ^= key[i];
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
 * @tuple: the tuple, zeroed beyond its fields as the stock hook builds it
 *
 * Return: what flow_offload_lookup() would return.
 */
struct flow_offload_tuple_rhash *nfb_flow_lookup(struct nf_flowtable *ft,
						 struct flow_offload_tuple *tuple)
{
	const unsigned long *key = (const unsigned long *)tuple;
	struct flow_offload_tuple_rhash *th;
	struct nfb_fc_entry *e;
	unsigned long epoch;
	int i;

	if (!in_serving_softirq())
		return flow_offload_lookup(ft, tuple);

	epoch = nfb_fc_epoch();
	e = &this_cpu_ptr(&nfb_fc)->slot[nfb_fc_slot(key)];
	if (e->th && e->epoch == epoch && e->ft == ft) {
		for (i = 0; i < NFB_FC_WORDS; i++)
			if (e->key[i] != key[i])
				goto lookup;
		if (likely(nfb_fc_usable(e->th)))
			return e->th;
	}
lookup:
	th = flow_offload_lookup(ft, tuple);
	e->th = th;
	if (th) {
		e->ft = ft;
		e->epoch = epoch;
		memcpy(e->key, key, sizeof(e->key));
	}
	return th;
}
