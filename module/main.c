// SPDX-License-Identifier: GPL-2.0
/*
 * nf_flow_bulk: bulk forwarding of nftables flowtable hits.
 *
 * The module's and each network namespace's life: set-up and teardown of
 * every other part, in order.
 */
#include <linux/module.h>
#include <linux/rtnetlink.h>
#include <linux/utsname.h>
#include <net/genetlink.h>

#include "nfb.h"

#define NFB_VERSION "0.1.0"

static int __net_init nfb_net_init(struct net *net)
{
	struct nfb_net *nn = nfb_pernet(net);
	int err;

	nn->net = net;
	nn->enable = 1;
	nn->bulk_max = NFB_BULK_DEFAULT;
	nn->rescan_next = jiffies;
	nn->poll_at = jiffies;
	nn->swept_at = jiffies;
	INIT_LIST_HEAD(&nn->attachments);
	INIT_DELAYED_WORK(&nn->rescan_work, nfb_rescan_work);

	nn->stats = alloc_percpu(struct nfb_stats);
	if (!nn->stats)
		return -ENOMEM;

	err = nfb_netns_files_init(nn);
	if (err) {
		free_percpu(nn->stats);
		return err;
	}
	/* Pairs with the notifier's smp_load_acquire(). */
	smp_store_release(&nn->ready, true);
	return 0;
}

/*
 * Runs after the namespaces' devices are gone (device pernet ops exit
 * first), so normally nothing is attached any more; at module exit,
 * nfb_attach_fini() has detached everything already. Order: stop every
 * producer (exiting: no attach, no rescan, no work queued by the notifier;
 * hooks removed), wait for hooks still running (synchronize_net(): one may
 * still queue the rescan work), then cancel the work (it re-arms nothing
 * once exiting is set), wait for queued packets, then free.
 *
 * One RTNL section and one grace period for the whole batch, and neither
 * when no namespace of it ever attached: a host whose containers come and
 * go without the module pays nothing per namespace exit. A dying namespace
 * has no socket left to attach through, so attached_once is final here.
 */
static void __net_exit nfb_net_exit_batch(struct list_head *net_exit_list)
{
	bool attached = false;
	struct nfb_net *nn;
	struct net *net;

	list_for_each_entry(net, net_exit_list, exit_list)
		attached |= READ_ONCE(nfb_pernet(net)->attached_once);

	if (attached) {
		rtnl_lock();
		list_for_each_entry(net, net_exit_list, exit_list) {
			nn = nfb_pernet(net);
			if (!nn->attached_once)
				continue;
			WRITE_ONCE(nn->exiting, true);
			nfb_detach_all(nn);
		}
		rtnl_unlock();
		synchronize_net();
		list_for_each_entry(net, net_exit_list, exit_list) {
			nn = nfb_pernet(net);
			if (!nn->attached_once)
				continue;
			cancel_delayed_work_sync(&nn->rescan_work);
			nfb_wait_inflight(nn);
		}
	}

	list_for_each_entry(net, net_exit_list, exit_list) {
		nn = nfb_pernet(net);
		nfb_netns_files_fini(nn);
		free_percpu(nn->stats);
	}
}

static struct pernet_operations nfb_net_ops = {
	.init		= nfb_net_init,
	.exit_batch	= nfb_net_exit_batch,
	.id		= &nfb_net_id,
	.size		= sizeof(struct nfb_net),
};

static bool nfb_unproven_kernel;
module_param_named(unproven_kernel, nfb_unproven_kernel, bool, 0444);
MODULE_PARM_DESC(unproven_kernel,
		 "load on a kernel the module is not proven on (testing only)");

static int __init nf_flow_bulk_init(void)
{
	int err;

	if (!NFB_KERNEL_PROVEN) {
		if (!nfb_unproven_kernel) {
			pr_err("not proven on Linux %s: the project's selftests do not all pass there; not loading (unproven_kernel=1 loads it for testing)\n",
			       init_utsname()->release);
			return -EOPNOTSUPP;
		}
		pr_warn("loaded on Linux %s, on which it is not proven (unproven_kernel=1): for testing only\n",
			init_utsname()->release);
	}

	BUILD_BUG_ON(NFB_CB_OFFSET + sizeof(struct nfb_cb) >
		     sizeof_field(struct sk_buff, cb));
	/* The queue mapping is wholly before our part or wholly in it. */
	BUILD_BUG_ON(!NFB_SDQM_IN_CB &&
		     NFB_SDQM_OFFSET + NFB_SDQM_LEN > NFB_CB_OFFSET);
	BUILD_BUG_ON(NFB_SDQM_STASH + NFB_SDQM_LEN > NFB_CB_OFFSET ||
		     NFB_SDQM_STASH == NFB_SDQM_OFFSET);

	err = nfb_flowcache_init();
	if (err)
		return err;

	err = nfb_queue_init();
	if (err)
		goto err_flowcache;

	err = register_pernet_subsys(&nfb_net_ops);
	if (err)
		goto err_xmit;

	err = nfb_attach_init();
	if (err)
		goto err_pernet;

	err = nfb_genl_init();
	if (err)
		goto err_attach;

	pr_info("version %s loaded\n", NFB_VERSION);
	return 0;

err_attach:
	/* Hooks and notifier first: the notifier reads the pernet data. */
	nfb_attach_fini();
	unregister_pernet_subsys(&nfb_net_ops);
	goto err_xmit;
err_pernet:
	unregister_pernet_subsys(&nfb_net_ops);
err_xmit:
	nfb_queue_fini();
err_flowcache:
	nfb_flowcache_fini();
	return err;
}

static void __exit nf_flow_bulk_exit(void)
{
	/* No new attachment, then no hook and no notifier, then the netns data. */
	nfb_genl_fini();
	nfb_attach_fini();
	nfb_test_hold_release();
	unregister_pernet_subsys(&nfb_net_ops);
	nfb_queue_fini();
	nfb_fthook_fini();
	rcu_barrier();	/* kfree_rcu() of hooks */
	nfb_flowcache_fini();
	pr_info("unloaded\n");
}

module_init(nf_flow_bulk_init);
module_exit(nf_flow_bulk_exit);

MODULE_LICENSE("GPL");
MODULE_AUTHOR("nf_flow_bulk authors");
MODULE_DESCRIPTION("Bulk forwarding of nftables flowtable hits");
MODULE_VERSION(NFB_VERSION);
MODULE_ALIAS_GENL_FAMILY(NFB_GENL_NAME);
