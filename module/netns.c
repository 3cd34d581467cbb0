// SPDX-License-Identifier: GPL-2.0
/*
 * nf_flow_bulk: a network namespace's state and what userspace sees of it
 * there: nfb_pernet() finds the state, the sysctls set it, and
 * /proc/net/stat/nf_flow_bulk shows its per-CPU counters. Every other part
 * reaches the state through nfb_pernet(); main.c creates and frees it.
 */
#include <linux/proc_fs.h>
#include <linux/seq_file.h>
#include <linux/sysctl.h>
#include <net/netns/generic.h>

#include "nfb.h"

unsigned int nfb_net_id __read_mostly;
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

/* The namespace's sysctls and its statistics file. */
int nfb_netns_files_init(struct nfb_net *nn)
{
	int err;

	err = nfb_sysctl_init(nn);
	if (err)
		return err;

	if (!proc_create_net("nf_flow_bulk", 0444, nn->net->proc_net_stat,
			     &nfb_cpu_seq_ops, sizeof(struct seq_net_private))) {
		nfb_sysctl_fini(nn);
		return -ENOMEM;
	}
	return 0;
}

void nfb_netns_files_fini(struct nfb_net *nn)
{
	remove_proc_entry("nf_flow_bulk", nn->net->proc_net_stat);
	nfb_sysctl_fini(nn);
}
