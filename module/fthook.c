// SPDX-License-Identifier: GPL-2.0
/*
 * nf_flow_bulk: the stock flowtable hook that runs after ours.
 *
 * Both the attach (attach.c, process context) and the datapath
 * (fastpath.c, softirq) need to tell a flowtable's hook from any other
 * ingress hook, and the datapath asks the attach side for a rescan when
 * the hook after ours is no longer the flowtable's. Both live here, below
 * the two, so that neither calls into the other for them.
 */
#include <linux/jiffies.h>
#include <linux/kallsyms.h>
#include <linux/module.h>
#include <linux/rtnetlink.h>
#include <net/netfilter/nf_flow_table.h>

#include "nfb.h"

/*
 * nf_flow_offload_inet_hook() is static in nf_flow_table_inet.c. Its address
 * is learned once, in process context and under RTNL, and its module is
 * pinned until we unload, so the address cannot be reused meanwhile.
 */
nf_hookfn __read_mostly *nfb_inet_hook;
static struct module *nfb_inet_owner;

/**
 * nfb_learn_inet_hook - recognise the inet flowtable hook
 * @fn: hook function of an ingress hook entry we do not know
 * @priv: its priv, only looked at once @fn is known to be the inet hook
 *
 * Caller holds RTNL and the RCU read lock that keeps the entry alive.
 */
void nfb_learn_inet_hook(nf_hookfn *fn, const void *priv)
{
	static const char want[] = "nf_flow_offload_inet_hook+0x0/";
	const struct nf_flowtable *ft = priv;
	char sym[KSYM_SYMBOL_LEN];

	ASSERT_RTNL();
	if (READ_ONCE(nfb_inet_hook) || !fn)
		return;

	sprint_symbol(sym, (unsigned long)fn);
	if (strncmp(sym, want, sizeof(want) - 1))
		return;
	if (!ft->type || ft->type->hook != fn)
		return;
	if (!try_module_get(ft->type->owner))
		return;

	nfb_inet_owner = ft->type->owner;
	WRITE_ONCE(nfb_inet_hook, fn);
}

void nfb_fthook_fini(void)
{
	if (nfb_inet_owner)
		module_put(nfb_inet_owner);
	nfb_inet_owner = NULL;
	nfb_inet_hook = NULL;
}

/*
 * From the datapath (softirq), when a device's hook list changed since the
 * last scan: at most ten rescans a second. nfb_net_exit_batch() waits for every
 * hook to finish (synchronize_net()) after setting exiting and before it
 * cancels the work, so no work is queued on a namespace that is gone.
 */
void nfb_rescan_request(struct nfb_hook *h)
{
	struct nfb_net *nn = h->nn;
	unsigned long next = READ_ONCE(nn->rescan_next);

	if (!READ_ONCE(h->dirty))
		WRITE_ONCE(h->dirty, true);
	if (time_before(jiffies, next) || READ_ONCE(nn->exiting))
		return;
	WRITE_ONCE(nn->rescan_next, jiffies + HZ / 10);
	mod_delayed_work(system_wq, &nn->rescan_work, 0);
}
