// SPDX-License-Identifier: GPL-2.0
/*
 * nf_flow_bulk: bulk forwarding of nftables flowtable hits.
 *
 * Module and per-netns set-up: sysctls, statistics, /proc/net/stat.
 */
#include <linux/module.h>
#include <linux/proc_fs.h>
#include <linux/rtnetlink.h>
#include <linux/seq_file.h>
#include <linux/sysctl.h>
#include <linux/utsname.h>
#include <net/genetlink.h>
#include <net/netns/generic.h>

#include "nfb.h"

#define NFB_VERSION "0.1.0"

static unsigned int nfb_net_id __read_mostly;
static int nfb_bulk_limit = NFB_BULK_LIMIT;

struct nfb_net *nfb_pernet(const struct net *net)
{
	return net_generic(net, nfb_net_id);
}

static const struct ctl_table nfb_sysctl_template[] = {
	{
		.procname	= "nf_flow_bulk_enable",
		.maxlen		= sizeof(int),
		.mode		= 0644,
		.proc_handler	= proc_dointvec_minmax,
		.extra1		= SYSCTL_ZERO,
		.extra2		= SYSCTL_ONE,
	},
	{
		.procname	= "nf_flow_bulk_max",
		.maxlen		= sizeof(int),
		.mode		= 0644,
		.proc_handler	= proc_dointvec_minmax,
		.extra1		= SYSCTL_ONE,
		.extra2		= &nfb_bulk_limit,
	},
	{
		.procname	= "nf_flow_bulk_pppoe_direct",
		.maxlen		= sizeof(int),
		.mode		= 0644,
		.proc_handler	= proc_dointvec_minmax,
		.extra1		= SYSCTL_ZERO,
		.extra2		= SYSCTL_ONE,
	},
	{ }
};

static int nfb_sysctl_init(struct nfb_net *nn)
{
	struct ctl_table *table;

	table = kmemdup(nfb_sysctl_template, sizeof(nfb_sysctl_template),
			GFP_KERNEL);
	if (!table)
		return -ENOMEM;
	table[0].data = &nn->enable;
	table[1].data = &nn->bulk_max;
	table[2].data = &nn->pppoe_direct;

	nn->sysctl = nfb_register_net_sysctl(nn->net, "net/netfilter", table,
					     ARRAY_SIZE(nfb_sysctl_template) - 1);
	if (!nn->sysctl) {
		kfree(table);
		return -ENOMEM;
	}
	return 0;
}

static void nfb_sysctl_fini(struct nfb_net *nn)
{
	const struct ctl_table *table = nn->sysctl->ctl_table_arg;

	unregister_net_sysctl_table(nn->sysctl);
	kfree(table);
}

/* /proc/net/stat/nf_flow_bulk: a header line, then one row per CPU. */
static void *nfb_cpu_seq_start(struct seq_file *seq, loff_t *pos)
{
	struct nfb_net *nn = nfb_pernet(seq_file_net(seq));
	int cpu;

	if (*pos == 0)
		return SEQ_START_TOKEN;

	for (cpu = *pos - 1; cpu < nr_cpu_ids; ++cpu) {
		if (!cpu_possible(cpu))
			continue;
		*pos = cpu + 1;
		return per_cpu_ptr(nn->stats, cpu);
	}
	return NULL;
}

static void *nfb_cpu_seq_next(struct seq_file *seq, void *v, loff_t *pos)
{
	struct nfb_net *nn = nfb_pernet(seq_file_net(seq));
	int cpu;

	for (cpu = *pos; cpu < nr_cpu_ids; ++cpu) {
		if (!cpu_possible(cpu))
			continue;
		*pos = cpu + 1;
		return per_cpu_ptr(nn->stats, cpu);
	}
	(*pos)++;
	return NULL;
}

static void nfb_cpu_seq_stop(struct seq_file *seq, void *v)
{
}

/*
 * The counters' names in the header line, in enum order (the designated
 * initializers keep each at its number).
 */
static const char * const nfb_decline_names[] = {
#define NFB_DECLINE_REASON(e, name, value) \
	[e] = name,
#include "nf_flow_bulk_names.h"
#undef NFB_DECLINE_REASON
};

static const char * const nfb_fallback_names[] = {
#define NFB_FALLBACK_REASON(e, name, value) \
	[e] = name,
#include "nf_flow_bulk_names.h"
#undef NFB_FALLBACK_REASON
};

static const char * const nfb_drop_names[] = {
#define NFB_DROP_REASON(e, name, value) \
	[e] = name,
#include "nf_flow_bulk_names.h"
#undef NFB_DROP_REASON
};

/*
 * Every member's number is ABI: one inserted, removed or moved in
 * nf_flow_bulk_names.h would renumber those after it, and fails the build
 * here instead (a negative bit-field width: the enumerator is not the value
 * written next to it).
 */
static const int nfb_pinned_values[] __maybe_unused = {
#define NFB_PIN_VALUE(e, name, value) \
	BUILD_BUG_ON_ZERO((e) != (value)),
#define NFB_ATTACH_STATE NFB_PIN_VALUE
#define NFB_DECLINE_REASON NFB_PIN_VALUE
#define NFB_FALLBACK_REASON NFB_PIN_VALUE
#define NFB_DROP_REASON NFB_PIN_VALUE
#define NFB_ENCAP_TYPE NFB_PIN_VALUE
#define NFB_XMIT_TYPE NFB_PIN_VALUE
#include "nf_flow_bulk_names.h"
#undef NFB_ATTACH_STATE
#undef NFB_DECLINE_REASON
#undef NFB_FALLBACK_REASON
#undef NFB_DROP_REASON
#undef NFB_ENCAP_TYPE
#undef NFB_XMIT_TYPE
#undef NFB_PIN_VALUE
};

static_assert(ARRAY_SIZE(nfb_decline_names) == __NFB_DECLINE_MAX);
static_assert(ARRAY_SIZE(nfb_fallback_names) == __NFB_FALLBACK_MAX);
static_assert(ARRAY_SIZE(nfb_drop_names) == __NFB_DROP_MAX);

static int nfb_cpu_seq_show(struct seq_file *seq, void *v)
{
	const struct nfb_stats *st = v;
	int i;

	if (v == SEQ_START_TOKEN) {
		seq_puts(seq, "packets  bulks    ");
		for (i = 0; i < NFB_HIST_BUCKETS; i++)
			seq_printf(seq, "bulk%-4u ", 1U << i);
		for (i = 0; i < __NFB_DECLINE_MAX; i++)
			seq_printf(seq, "decline_%s ", nfb_decline_names[i]);
		for (i = 0; i < __NFB_FALLBACK_MAX; i++)
			seq_printf(seq, "fallback_%s ", nfb_fallback_names[i]);
		for (i = 0; i < __NFB_DROP_MAX; i++)
			seq_printf(seq, "drop_%s%s", nfb_drop_names[i],
				   i + 1 < __NFB_DROP_MAX ? " " : "\n");
		return 0;
	}

	seq_printf(seq, "%08llx %08llx", nfb_stats_taken(st, NULL, NULL),
		   st->bulks);
	for (i = 0; i < NFB_HIST_BUCKETS; i++)
		seq_printf(seq, " %08llx", st->hist[i]);
	for (i = 0; i < __NFB_DECLINE_MAX; i++)
		seq_printf(seq, " %08llx", st->decline[i]);
	for (i = 0; i < __NFB_FALLBACK_MAX; i++)
		seq_printf(seq, " %08llx", st->fallback[i]);
	for (i = 0; i < __NFB_DROP_MAX; i++)
		seq_printf(seq, " %08llx", st->drop[i]);
	seq_putc(seq, '\n');
	return 0;
}

static const struct seq_operations nfb_cpu_seq_ops = {
	.start	= nfb_cpu_seq_start,
	.next	= nfb_cpu_seq_next,
	.stop	= nfb_cpu_seq_stop,
	.show	= nfb_cpu_seq_show,
};

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

	err = nfb_sysctl_init(nn);
	if (err)
		goto err_stats;

	if (!proc_create_net("nf_flow_bulk", 0444, net->proc_net_stat,
			     &nfb_cpu_seq_ops, sizeof(struct seq_net_private))) {
		err = -ENOMEM;
		goto err_sysctl;
	}
	/* Pairs with the notifier's smp_load_acquire(). */
	smp_store_release(&nn->ready, true);
	return 0;

err_sysctl:
	nfb_sysctl_fini(nn);
err_stats:
	free_percpu(nn->stats);
	return err;
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
		remove_proc_entry("nf_flow_bulk", net->proc_net_stat);
		nfb_sysctl_fini(nn);
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

	err = nfb_xmit_init();
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
	nfb_xmit_fini();
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
	nfb_xmit_fini();
	nfb_fastpath_fini();
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
