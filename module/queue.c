// SPDX-License-Identifier: GPL-2.0
/*
 * nf_flow_bulk: the per-CPU queue, its NAPI poll, and the drain that groups
 * the queued packets into bulks.
 *
 * The hook appends taken packets to its CPU's queue and schedules that CPU's
 * NAPI instance (one per CPU, on a dummy netdev: the gro_cells pattern). The
 * poll runs later in the same or the next net_rx_action round, so a queued
 * packet carries no RCU-only pointer: skb->cb holds a referenced output
 * device, the next hop by value and the netns state, which namespace exit
 * keeps alive until the in-flight count drops to zero. The drain hands each
 * bulk to xmit.c (nfb_xmit_bulk()).
 *
 * Per-CPU rules: the queue and the counters of a CPU are touched only by
 * that CPU, with BH disabled (softirq, or local_bh_disable() in the hook),
 * so no lock is needed. Only the in-flight count may be decremented by
 * another CPU (when a CPU goes offline its NAPI moves), hence only its sum
 * is used.
 */
#include <linux/cpu.h>
#include <linux/hash.h>
#include <linux/moduleparam.h>
#include <linux/netdevice.h>
#include <net/ipv6.h>

#include "nfb.h"
#include "bulk.h"
#include "txq.h"

/* Bulks being filled at the same time during one drain. */
#define NFB_OPEN_BULKS	4
/* Slots of the per-CPU table of which open bulk holds a flow (nfb_drain()). */
#define NFB_FLOW_SLOTS	256
#define NFB_FLOW_SLOT(key)	NFB_ORDER_IDX(key, ilog2(NFB_FLOW_SLOTS))
/* A bulk's bloom bit of the flow with order key @key (struct nfb_bulk). */
#define NFB_BULK_BLOOM(key)	(1ULL << NFB_ORDER_IDX(key, 6))

/*
 * A flow's last packet in this drain, by the top bits of its order key:
 * the serial of the bulk it joined, even; odd once two keys of the drain
 * met in the slot (NFB_SLOT_SHARED).
 */
struct nfb_flow_slot {
	u32			flow_hash;
	u32			serial;
};

#define NFB_SLOT_SHARED	1U

struct nfb_cpu {
	struct sk_buff_head	queue;
	struct napi_struct	napi;
	bool			draining;	/* in nfb_drain() */
	/*
	 * Filters of the order keys of the packets in @queue (a superset:
	 * rebuilt by a selective drain, cleared when the queue empties),
	 * which a decline asks before it walks the queue
	 * (nfb_flush_local()): the full keys, and their address part.
	 */
	DECLARE_BITMAP(order_flows, NFB_ORDER_FLOW_BITS);
	u64			order_addrs;
	/*
	 * Which open bulk holds each flow, from a drain's first bloom hit
	 * on (nfb_flow_elsewhere()): bulk serials count up by two per bulk,
	 * from one drain to the next, so a slot written before
	 * @first_serial, the drain's first, is stale without being cleared.
	 */
	u32			serial;
	u32			first_serial;
	struct nfb_flow_slot	slots[NFB_FLOW_SLOTS];
};

/* Which queued packets a decline sends ahead of itself (nfb_drain()). */
struct nfb_order_sel {
	const struct nfb_net	*nn;
	u32			key;
	u32			mask;		/* bits of cb->flow_hash compared */
};

static struct nfb_cpu __percpu *nfb_cpus;
static struct net_device *nfb_napi_dev;

/*
 * Fault injection for the selftests: while set, the poll leaves taken
 * packets in the per-CPU queues (at most NFB_QUEUE_FLUSH per CPU; further
 * ones are dropped as queue_full), so that a test can delete devices,
 * namespaces or CPUs under them, or send a packet the hook declines behind
 * them (nfb_flush_local() still drains). Clearing it schedules every CPU's
 * poll. Never set it on a router.
 */
static bool nfb_test_hold;
/*
 * Set once module exit has released the held packets, under the module's
 * parameter lock, which every write to test_hold holds too: a write after
 * that fails (EBUSY) instead of holding packets the namespaces' exits then
 * wait for forever, or kicking CPUs whose queues nfb_queue_fini() freed.
 */
static bool nfb_test_hold_closed;

static void nfb_kick_cpu(void *unused)
{
	napi_schedule(&this_cpu_ptr(nfb_cpus)->napi);
}

/* Runs every CPU's poll, on that CPU: the queues are per CPU, unlocked. */
static void nfb_kick_all(void)
{
	int cpu;

	cpus_read_lock();
	for_each_possible_cpu(cpu) {
		if (cpu_online(cpu)) {
			smp_call_function_single(cpu, nfb_kick_cpu, NULL, 1);
			continue;
		}
		/* An offline CPU's queue is drained here, as dev_cpu_dead() would. */
		local_bh_disable();
		napi_schedule(&per_cpu_ptr(nfb_cpus, cpu)->napi);
		local_bh_enable();
	}
	cpus_read_unlock();
}

static int nfb_test_hold_set(const char *val, const struct kernel_param *kp)
{
	int err;

	if (nfb_test_hold_closed)
		return -EBUSY;
	err = param_set_bool(val, kp);
	if (err || READ_ONCE(nfb_test_hold) || !nfb_cpus)
		return err;
	nfb_kick_all();
	return 0;
}

/*
 * Module exit: a test killed while holding leaves test_hold set, and the
 * namespaces' exits would then wait for the held packets forever. They are
 * released instead (sent, or dropped and counted, as on a clear).
 */
void nfb_test_hold_release(void)
{
	bool held;

	kernel_param_lock(THIS_MODULE);
	nfb_test_hold_closed = true;
	held = READ_ONCE(nfb_test_hold);
	WRITE_ONCE(nfb_test_hold, false);
	kernel_param_unlock(THIS_MODULE);
	if (!held)
		return;
	pr_warn("test_hold still set at unload: releasing the held packets\n");
	nfb_kick_all();
}

static const struct kernel_param_ops nfb_test_hold_ops = {
	.set	= nfb_test_hold_set,
	.get	= param_get_bool,
};

module_param_cb(test_hold, &nfb_test_hold_ops, &nfb_test_hold, 0600);
MODULE_PARM_DESC(test_hold,
		 "selftests only: keep taken packets queued until cleared");

/*
 * The bulk key: output device, transmit queue, ethertype, transmit type,
 * transmit encapsulation, the route's device where the module stands in
 * for it, and the next hop (NEIGH) or the MAC addresses (DIRECT).
 * Everything a packet's transmit depends on besides its own bytes:
 * __nfb_xmit_bulk() takes all of it from the bulk's first packet.
 * Not the DSCP, which the RFC's key has: nothing in a bulk's transmit
 * reads it (a qdisc that classifies gets each packet enqueued on its own,
 * and reads its DSCP from its header). And the namespace the packet was
 * taken in, whose in-flight count the bulk gives back: an output device
 * moved to another namespace while packets wait can carry packets of
 * both, and a bulk of both accounted to one left the other's exit waiting
 * forever.
 */
static bool nfb_key_match(const struct nfb_bulk *b, const struct sk_buff *skb,
			  u16 txq)
{
	const struct nfb_cb *head = NFB_CB(b->head);
	const struct nfb_cb *cb = NFB_CB(skb);

	if (b->dev != skb->dev || b->nn != cb->nn ||
	    b->proto != skb->protocol ||
	    b->txq != txq || b->xmit != cb->xmit ||
	    head->stand_in != cb->stand_in ||
	    memcmp(head->encap, cb->encap, sizeof(cb->encap)))
		return false;
	/* Whose neighbour, VLAN devices or PPPoE session (stand_in). */
	if (unlikely(cb->stand_in) &&
	    skb_dst(b->head)->dev != skb_dst(skb)->dev)
		return false;
	if (cb->xmit == NFB_XMIT_DIRECT)
		return !memcmp(&head->nexthop.mac, &cb->nexthop.mac,
			       sizeof(cb->nexthop.mac));
	if (skb->protocol == htons(ETH_P_IP))
		return head->nexthop.v4 == cb->nexthop.v4;
	return ipv6_addr_equal(&head->nexthop.v6, &cb->nexthop.v6);
}

/* Whether @b holds a packet of the flow with @flow_hash. */
static bool nfb_bulk_has_flow(const struct nfb_bulk *b, u32 flow_hash)
{
	const struct sk_buff *skb;

	for (skb = b->head; ; skb = skb->next) {
		if (NFB_CB(skb)->flow_hash == flow_hash)
			return true;
		if (skb == b->tail)
			return false;
	}
}

static bool nfb_slot_current(const struct nfb_cpu *c,
			     const struct nfb_flow_slot *slot)
{
	return (s32)((slot->serial & ~NFB_SLOT_SHARED) - c->first_serial) >= 0;
}

/* Record that the flow with @flow_hash has its last packet in @b. */
static void nfb_slot_set(struct nfb_cpu *c, const struct nfb_bulk *b,
			 u32 flow_hash)
{
	struct nfb_flow_slot *slot = &c->slots[NFB_FLOW_SLOT(flow_hash)];

	if (!nfb_slot_current(c, slot) || slot->flow_hash == flow_hash) {
		if (!(slot->serial & NFB_SLOT_SHARED) ||
		    !nfb_slot_current(c, slot)) {
			slot->flow_hash = flow_hash;
			slot->serial = b->serial;
		}
	} else {
		slot->serial |= NFB_SLOT_SHARED;
	}
}

/* Put the packets of @b, which joined it before it had slots, in them. */
static void nfb_bulk_slot(struct nfb_cpu *c, struct nfb_bulk *b)
{
	const struct sk_buff *skb;

	for (skb = b->head; ; skb = skb->next) {
		nfb_slot_set(c, b, NFB_CB(skb)->flow_hash);
		if (skb == b->tail)
			break;
	}
	b->slotted = true;
}

/*
 * Whether an open bulk other than @b (NULL: the packet has none yet) holds
 * a packet of the flow with @flow_hash, once the bloom of one says it may:
 * 64 bits, which two of a few flows share often enough (about 5 % for
 * three) that trusting the bloom alone cut every bulk of such a mix to one
 * packet. From the first such hit on, every open bulk is in the slots, and
 * then stays: a current slot of the flow's own says where its last packet
 * went, and a flow is never in two open bulks; a current slot of another
 * flow's, or none, says it is in none, since every packet that met a
 * current slot of another key marked it shared. Only a shared slot sends
 * back to the bulks' packets, one by one. With many flows over two next
 * hops that walk was taken for a good part of the packets.
 */
static bool nfb_flow_elsewhere(struct nfb_cpu *c, struct nfb_bulk *open,
			       int nopen, const struct nfb_bulk *b,
			       u32 flow_hash)
{
	const struct nfb_flow_slot *slot = &c->slots[NFB_FLOW_SLOT(flow_hash)];
	u64 bit = NFB_BULK_BLOOM(flow_hash);
	int j;

	for (j = 0; j < nopen; j++) {
		if (!open[j].slotted)
			nfb_bulk_slot(c, &open[j]);
	}
	if (!nfb_slot_current(c, slot))
		return false;
	if (!(slot->serial & NFB_SLOT_SHARED)) {
		if (slot->flow_hash != flow_hash)
			return false;
		for (j = 0; j < nopen; j++) {
			if (open[j].serial == slot->serial)
				return &open[j] != b;
		}
		return false;
	}
	for (j = 0; j < nopen; j++) {
		if (&open[j] != b && (open[j].flows & bit) &&
		    nfb_bulk_has_flow(&open[j], flow_hash))
			return true;
	}
	return false;
}

static __always_inline void nfb_order_mark(unsigned long *flows, u64 *addrs,
					   u32 key)
{
	__set_bit(NFB_ORDER_IDX(key, ilog2(NFB_ORDER_FLOW_BITS)), flows);
	*addrs |= 1ULL << (key & NFB_ORDER_ADDR_MASK);
}

static void nfb_order_clear(struct nfb_cpu *c)
{
	bitmap_zero(c->order_flows, NFB_ORDER_FLOW_BITS);
	c->order_addrs = 0;
}

/*
 * Move the packets @sel selects from @c's queue to @todo, in their order;
 * the filters are rebuilt from the packets that stay. A flow's packets
 * all have the same key: none of a selected flow stays behind.
 */
static int nfb_order_select(struct nfb_cpu *c, const struct nfb_order_sel *sel,
			    struct sk_buff_head *todo)
{
	struct sk_buff *skb, *next;
	int work = 0;

	nfb_order_clear(c);
	skb_queue_walk_safe(&c->queue, skb, next) {
		const struct nfb_cb *cb = NFB_CB(skb);

		if (cb->nn == sel->nn &&
		    !((cb->flow_hash ^ sel->key) & sel->mask)) {
			__skb_unlink(skb, &c->queue);
			__skb_queue_tail(todo, skb);
			work++;
			continue;
		}
		nfb_order_mark(c->order_flows, &c->order_addrs, cb->flow_hash);
	}
	return work;
}

/*
 * The drain's first stage: move the packets it sends this time from @c's
 * queue to @todo, in their order. With @sel, those it selects; else at
 * most @budget, all of them clearing the order filters.
 */
static int nfb_drain_take(struct nfb_cpu *c, int budget,
			  const struct nfb_order_sel *sel,
			  struct sk_buff_head *todo)
{
	struct sk_buff *skb;
	int work = 0;

	if (sel)
		return nfb_order_select(c, sel, todo);
	if (skb_queue_len(&c->queue) <= budget) {
		work = skb_queue_len(&c->queue);
		skb_queue_splice_init(&c->queue, todo);
		nfb_order_clear(c);
		return work;
	}
	while (work < budget && (skb = __skb_dequeue(&c->queue))) {
		__skb_queue_tail(todo, skb);
		work++;
	}
	return work;
}

/* Open the bulk @b with @skb, its first packet, whose queue is @txq. */
static void nfb_bulk_open(struct nfb_cpu *c, struct nfb_bulk *b,
			  struct sk_buff *skb, u16 txq)
{
	const struct nfb_cb *cb = NFB_CB(skb);

	b->head = skb;
	b->tail = skb;
	b->dev = skb->dev;
	b->nn = cb->nn;
	b->flows = 0;
	c->serial += 2;
	b->serial = c->serial;
	b->slotted = false;
	b->count = 0;
	b->max = cb->bulk_max;
	b->txq = txq;
	b->proto = skb->protocol;
	b->xmit = cb->xmit;
}

/*
 * Group the packets taken since the last poll into bulks, in arrival order.
 * A packet joins an open bulk with the same key; per-flow order holds
 * because a flow is never in two open bulks at once: a bloom of the flows
 * of each bulk, and when another bulk's says the packet's flow may be
 * there and it is (nfb_flow_elsewhere()), every open bulk is sent first.
 * With @sel, only the packets it selects, the others keep their place.
 */
static int nfb_drain(struct nfb_cpu *c, int budget,
		     const struct nfb_order_sel *sel)
{
	struct nfb_bulk open[NFB_OPEN_BULKS] __uninitialized;
	struct sk_buff_head todo;
	struct sk_buff *skb;
	int nopen = 0, work, i, j;

	/*
	 * Work on a private list: a transmit that re-enters the hook on this
	 * CPU appends to c->queue, never to the packets being grouped here,
	 * and does not drain (c->draining) ahead of them.
	 *
	 * RCU: from the hook this runs inside nf_hook()'s read-side section,
	 * from nfb_poll() inside none. BH off already keeps every RCU-freed
	 * object (flows, routes, neighbours) alive, but the neighbour lookup
	 * helpers use rcu_dereference(), which PROVE_RCU checks against
	 * rcu_read_lock() (a PROVE_RCU kernel warns from ksoftirqd without
	 * it), and the stock hook calls them with it held: so does this.
	 */
	rcu_read_lock();
	c->draining = true;
	c->first_serial = c->serial + 2;
	__skb_queue_head_init(&todo);
	work = nfb_drain_take(c, budget, sel, &todo);

	while ((skb = __skb_dequeue(&todo))) {
		const struct nfb_cb *cb = NFB_CB(skb);
		u64 bit = NFB_BULK_BLOOM(cb->flow_hash);
		u16 txq = nfb_txq_of(skb->dev, skb);
		struct nfb_bulk *b = NULL;

		for (i = 0; i < nopen; i++) {
			if (nfb_key_match(&open[i], skb, txq)) {
				b = &open[i];
				break;
			}
		}
		for (j = 0; j < nopen; j++) {
			if (&open[j] == b || !(open[j].flows & bit))
				continue;
			if (nfb_flow_elsewhere(c, open, nopen, b,
					       cb->flow_hash)) {
				for (i = 0; i < nopen; i++)
					nfb_xmit_bulk(&open[i]);
				nopen = 0;
				b = NULL;
			}
			break;
		}
		if (!b) {
			if (nopen == NFB_OPEN_BULKS) {
				nfb_xmit_bulk(&open[0]);
				memmove(&open[0], &open[1],
					sizeof(open[0]) * --nopen);
			}
			b = &open[nopen++];
			nfb_bulk_open(c, b, skb, txq);
		} else {
			b->tail->next = skb;
			b->tail = skb;
		}
		b->flows |= bit;
		if (b->slotted)
			nfb_slot_set(c, b, cb->flow_hash);
		if (++b->count >= b->max) {
			i = b - open;
			nfb_xmit_bulk(b);
			memmove(&open[i], &open[i + 1],
				sizeof(open[0]) * (--nopen - i));
		}
	}
	for (i = 0; i < nopen; i++)
		nfb_xmit_bulk(&open[i]);

	c->draining = false;
	rcu_read_unlock();
	return work;
}

static int nfb_poll(struct napi_struct *napi, int budget)
{
	struct nfb_cpu *c = container_of(napi, struct nfb_cpu, napi);
	int work = 0;

	if (likely(!READ_ONCE(nfb_test_hold)))
		work = nfb_drain(c, budget, NULL);
	if (work < budget)
		napi_complete_done(napi, work);
	return work;
}

/*
 * Called by the hook with the packet prepared; takes ownership.
 *
 * The hook may run in process context (netif_receive_skb() callers, or a
 * threaded NAPI poll): the queue needs BH disabled, which softirq context
 * already is.
 */
void nfb_enqueue(struct sk_buff *skb)
{
	bool bh = !in_softirq();
	struct nfb_net *nn = NFB_CB(skb)->nn;
	struct nfb_cpu *c;

	if (bh)
		local_bh_disable();
	c = this_cpu_ptr(nfb_cpus);
	this_cpu_inc(nn->stats->inflight);
	if (unlikely(skb_queue_len(&c->queue) >= NFB_QUEUE_FLUSH)) {
		if (READ_ONCE(nfb_test_hold) || c->draining) {
			nfb_count_drop(nn, NFB_DROP_QUEUE_FULL);
			dev_put(skb->dev);
			kfree_skb(skb);
			this_cpu_dec(nn->stats->inflight);
			goto out;
		}
		nfb_drain(c, NFB_QUEUE_FLUSH, NULL);
	}
	__skb_queue_tail(&c->queue, skb);
	nfb_order_mark(c->order_flows, &c->order_addrs,
		       NFB_CB(skb)->flow_hash);
	if (skb_queue_len(&c->queue) == 1)
		napi_schedule(&c->napi);
out:
	if (bh)
		local_bh_enable();
}

/*
 * Per-flow order: the hook calls this before it lets a packet go on to
 * the stock flowtable or the stack. That packet may belong to a flow whose
 * earlier packets wait in this CPU's queue (a FIN or an over-MTU packet
 * after data, a packet of a flow torn down meanwhile): they leave first,
 * as the stock path, which transmits inline, would have sent them.
 *
 * Which packets: those of the declined packet's flow, as far as the hook
 * could read it (@scope, @key: the packet's order key, or with
 * NFB_ORDER_ADDR the hash of its addresses, not yet reduced), in its
 * namespace @nn, where all of a flow's packets are taken. The queue holds
 * every flow and namespace of this CPU: a decline walks it only when the
 * filters say it may hold such a packet, and sends only those, so that
 * the misses of new connections neither cut the other flows' bulks short
 * nor make every queued packet's control block be read again. A packet
 * the hook could not read at all sends every packet of @nn.
 */
static bool nfb_order_may_queue(const struct nfb_cpu *c,
				struct nfb_order_sel *sel,
				enum nfb_order_scope scope, u32 key)
{
	switch (scope) {
	case NFB_ORDER_FLOW:
		sel->key = key;
		sel->mask = ~0U;
		return test_bit(NFB_ORDER_IDX(key, ilog2(NFB_ORDER_FLOW_BITS)),
				c->order_flows);
	case NFB_ORDER_ADDR:
		sel->key = hash_32(key, NFB_ORDER_ADDR_BITS);
		sel->mask = NFB_ORDER_ADDR_MASK;
		return c->order_addrs & (1ULL << sel->key);
	default:
		sel->key = 0;
		sel->mask = 0;
		return true;
	}
}

void nfb_flush_local(const struct nfb_net *nn, enum nfb_order_scope scope,
		     u32 key)
{
	struct nfb_order_sel sel = { .nn = nn };
	struct nfb_cpu *c;
	bool bh;

	/* A peek without BH off: only this CPU's hook and poll fill it. */
	if (likely(skb_queue_empty_lockless(&raw_cpu_ptr(nfb_cpus)->queue)))
		return;

	bh = !in_softirq();
	if (bh)
		local_bh_disable();
	c = this_cpu_ptr(nfb_cpus);
	if (!c->draining && nfb_order_may_queue(c, &sel, scope, key)) {
		this_cpu_inc(nn->stats->drains);
		nfb_drain(c, INT_MAX, &sel);
	}
	if (bh)
		local_bh_enable();
}

static long nfb_inflight(struct nfb_net *nn)
{
	long sum = 0;
	int cpu;

	for_each_possible_cpu(cpu)
		sum += READ_ONCE(per_cpu_ptr(nn->stats, cpu)->inflight);
	return sum;
}

/*
 * Wait until no packet of @nn is queued any more. The caller has removed
 * every hook of @nn and waited for an RCU grace period, so the count only
 * goes down; each per-CPU value read is at least its current value, so a
 * zero sum is final.
 */
void nfb_wait_inflight(struct nfb_net *nn)
{
	unsigned int i;

	for (i = 0; nfb_inflight(nn) > 0; i++) {
		if (i == 500)
			pr_warn("netns %u: packets still queued after 10 s\n",
				nn->net->ns.inum);
		msleep(20);
	}
}

int nfb_queue_init(void)
{
	int cpu;

	nfb_napi_dev = nfb_alloc_dummy_netdev();
	if (!nfb_napi_dev)
		return -ENOMEM;

	nfb_cpus = alloc_percpu(struct nfb_cpu);
	if (!nfb_cpus) {
		nfb_free_dummy_netdev(nfb_napi_dev);
		return -ENOMEM;
	}

	for_each_possible_cpu(cpu) {
		struct nfb_cpu *c = per_cpu_ptr(nfb_cpus, cpu);

		__skb_queue_head_init(&c->queue);
		netif_napi_add_weight(nfb_napi_dev, &c->napi, nfb_poll,
				      NAPI_POLL_WEIGHT);
		napi_enable(&c->napi);
	}
	return 0;
}

/* Every hook is gone and every netns drained: the queues are empty. */
void nfb_queue_fini(void)
{
	int cpu;

	for_each_possible_cpu(cpu) {
		struct nfb_cpu *c = per_cpu_ptr(nfb_cpus, cpu);

		napi_disable(&c->napi);
		WARN_ON_ONCE(!skb_queue_empty(&c->queue));
		netif_napi_del(&c->napi);
	}
	synchronize_net();
	free_percpu(nfb_cpus);
	nfb_free_dummy_netdev(nfb_napi_dev);
}
