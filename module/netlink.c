// SPDX-License-Identifier: GPL-2.0
/*
 * nf_flow_bulk: the generic netlink family (uapi/nf_flow_bulk.h).
 *
 * Every operation needs CAP_NET_ADMIN in the user namespace that owns the
 * caller's network namespace (GENL_UNS_ADMIN_PERM) and acts on that
 * namespace only. Messages are validated strictly: the header's reserved
 * byte and flags, and the attributes against nfb_policy.
 */
#include <linux/netfilter.h>
#include <linux/rtnetlink.h>
#include <net/genetlink.h>
#include <net/netlink.h>

#include "nfb.h"

static struct genl_family nfb_genl_family;

static const struct nla_policy nfb_policy[NFB_A_MAX + 1] = {
	[NFB_A_FAMILY]		= { .type = NLA_U32 },
	[NFB_A_TABLE]		= { .type = NLA_STRING,
				    .len = NFT_TABLE_MAXNAMELEN - 1 },
	[NFB_A_FLOWTABLE]	= { .type = NLA_STRING,
				    .len = NFT_NAME_MAXLEN - 1 },
	[NFB_A_PRIORITY]	= { .type = NLA_REJECT },
	[NFB_A_DEVICES]		= { .type = NLA_REJECT },
	[NFB_A_DEVICE]		= { .type = NLA_REJECT },
	[NFB_A_STATS]		= { .type = NLA_REJECT },
	[NFB_A_PAD]		= { .type = NLA_REJECT },
	[NFB_A_SCANS]		= { .type = NLA_REJECT },
	[NFB_A_STATE]		= { .type = NLA_REJECT },
};

struct nfb_ft_id {
	u32	family;
	char	table[NFT_TABLE_MAXNAMELEN];
	char	name[NFT_NAME_MAXLEN];
};

static int nfb_parse_id(struct genl_info *info, struct nfb_ft_id *id)
{
	struct nlattr **tb = info->attrs;

	if (GENL_REQ_ATTR_CHECK(info, NFB_A_FAMILY) ||
	    GENL_REQ_ATTR_CHECK(info, NFB_A_TABLE) ||
	    GENL_REQ_ATTR_CHECK(info, NFB_A_FLOWTABLE)) {
		NL_SET_ERR_MSG(info->extack,
			       "FAMILY, TABLE and FLOWTABLE are required");
		return -EINVAL;
	}

	id->family = nla_get_u32(tb[NFB_A_FAMILY]);
	switch (id->family) {
	case NFPROTO_INET:
	case NFPROTO_IPV4:
	case NFPROTO_IPV6:
		break;
	default:
		NL_SET_ERR_MSG_ATTR(info->extack, tb[NFB_A_FAMILY],
				    "family must be inet (1), ip (2) or ip6 (10)");
		return -EINVAL;
	}

	nla_strscpy(id->table, tb[NFB_A_TABLE], sizeof(id->table));
	nla_strscpy(id->name, tb[NFB_A_FLOWTABLE], sizeof(id->name));
	if (!id->table[0]) {
		NL_SET_ERR_MSG_ATTR(info->extack, tb[NFB_A_TABLE],
				    "empty table name");
		return -EINVAL;
	}
	if (!id->name[0]) {
		NL_SET_ERR_MSG_ATTR(info->extack, tb[NFB_A_FLOWTABLE],
				    "empty flowtable name");
		return -EINVAL;
	}
	return 0;
}

static int nfb_nl_attach(struct sk_buff *skb, struct genl_info *info)
{
	struct nfb_ft_id id;
	int err;

	err = nfb_parse_id(info, &id);
	if (err)
		return err;

	rtnl_lock();
	err = nfb_attach(genl_info_net(info), id.family, id.table, id.name,
			 info->extack);
	rtnl_unlock();
	return err;
}

static int nfb_nl_detach(struct sk_buff *skb, struct genl_info *info)
{
	struct nfb_ft_id id;
	int err;

	err = nfb_parse_id(info, &id);
	if (err)
		return err;

	rtnl_lock();
	err = nfb_detach(genl_info_net(info), id.family, id.table, id.name,
			 info->extack);
	rtnl_unlock();
	return err;
}

static int nfb_fill_attach(struct sk_buff *skb, const struct nfb_attach *a,
			   u32 portid, u32 seq, int flags)
{
	const struct nfb_hook *h;
	struct nlattr *devs, *dev;
	void *hdr;

	hdr = genlmsg_put(skb, portid, seq, &nfb_genl_family, flags,
			  NFB_CMD_GET_ATTACH);
	if (!hdr)
		return -EMSGSIZE;

	if (nla_put_u32(skb, NFB_A_FAMILY, a->family) ||
	    nla_put_string(skb, NFB_A_TABLE, a->table) ||
	    nla_put_string(skb, NFB_A_FLOWTABLE, a->name) ||
	    nla_put_s32(skb, NFB_A_PRIORITY, a->priority) ||
	    nla_put_u64_64bit(skb, NFB_A_SCANS, a->scans, NFB_A_PAD) ||
	    nla_put_u8(skb, NFB_A_STATE, nfb_attach_state(a)))
		goto cancel;

	devs = nla_nest_start(skb, NFB_A_DEVICES);
	if (!devs)
		goto cancel;
	list_for_each_entry(h, &a->hooks, list) {
		dev = nla_nest_start(skb, NFB_A_DEVICE);
		if (!dev ||
		    nla_put_u32(skb, NFB_DEV_A_IFINDEX, h->dev->ifindex) ||
		    nla_put_string(skb, NFB_DEV_A_IFNAME, h->dev->name) ||
		    nla_put_u8(skb, NFB_DEV_A_ADJACENT, nfb_hook_adjacent(h)) ||
		    nla_put_u64_64bit(skb, NFB_DEV_A_CHECKS, h->checks,
				      NFB_DEV_A_PAD))
			goto cancel;
		nla_nest_end(skb, dev);
	}
	nla_nest_end(skb, devs);

	genlmsg_end(skb, hdr);
	return 0;

cancel:
	genlmsg_cancel(skb, hdr);
	return -EMSGSIZE;
}

/*
 * A read: it reports the attachments as they are and changes nothing (the
 * datapath and the poll keep them in line with the flowtables). An
 * attachment that does not fit an empty message is an error, not the end
 * of the dump.
 */
static int nfb_nl_get_attach(struct sk_buff *skb, struct netlink_callback *cb)
{
	struct nfb_net *nn = nfb_pernet(sock_net(skb->sk));
	long idx = 0, start = cb->args[0];
	struct nfb_attach *a;
	int err = 0;

	rtnl_lock();
	list_for_each_entry(a, &nn->attachments, list) {
		if (idx < start) {
			idx++;
			continue;
		}
		err = nfb_fill_attach(skb, a, NETLINK_CB(cb->skb).portid,
				      cb->nlh->nlmsg_seq, NLM_F_MULTI);
		if (err)
			break;
		idx++;
	}
	rtnl_unlock();
	cb->args[0] = idx;
	if (err && idx == start)
		return err;
	return skb->len;
}

/* Nested counters: attribute type = index + 1; padding uses type 0. */
static int nfb_put_counters(struct sk_buff *skb, int type, const u64 *v,
			    unsigned int n)
{
	struct nlattr *nest;
	unsigned int i;

	nest = nla_nest_start(skb, type);
	if (!nest)
		return -EMSGSIZE;
	for (i = 0; i < n; i++)
		if (nla_put_u64_64bit(skb, i + 1, v[i], 0))
			return -EMSGSIZE;
	nla_nest_end(skb, nest);
	return 0;
}

static int nfb_fill_stats(struct sk_buff *skb, const struct nfb_stats *st,
			  int cpu, u32 portid, u32 seq)
{
	u64 taken_encap[__NFB_ENCAP_MAX], taken_xmit[__NFB_XMIT_MAX], packets;
	struct nfb_stats s;
	struct nlattr *nest;
	void *hdr;

	/* A racy copy, as /proc/net/stat readers get. */
	memcpy(&s, st, sizeof(s));
	packets = nfb_stats_taken(&s, taken_encap, taken_xmit);

	hdr = genlmsg_put(skb, portid, seq, &nfb_genl_family, NLM_F_MULTI,
			  NFB_CMD_GET_STATS);
	if (!hdr)
		return -EMSGSIZE;

	nest = nla_nest_start(skb, NFB_A_STATS);
	if (!nest ||
	    nla_put_u32(skb, NFB_STATS_A_CPU, cpu) ||
	    nla_put_u64_64bit(skb, NFB_STATS_A_PACKETS, packets,
			      NFB_STATS_A_PAD) ||
	    nla_put_u64_64bit(skb, NFB_STATS_A_BULKS, s.bulks,
			      NFB_STATS_A_PAD) ||
	    nfb_put_counters(skb, NFB_STATS_A_HIST, s.hist,
			     NFB_HIST_BUCKETS) ||
	    nfb_put_counters(skb, NFB_STATS_A_DECLINE, s.decline,
			     __NFB_DECLINE_MAX) ||
	    nfb_put_counters(skb, NFB_STATS_A_FALLBACK, s.fallback,
			     __NFB_FALLBACK_MAX) ||
	    nfb_put_counters(skb, NFB_STATS_A_DROP, s.drop, __NFB_DROP_MAX) ||
	    nfb_put_counters(skb, NFB_STATS_A_TAKEN_ENCAP, taken_encap,
			     __NFB_ENCAP_MAX) ||
	    nfb_put_counters(skb, NFB_STATS_A_TAKEN_XMIT, taken_xmit,
			     __NFB_XMIT_MAX) ||
	    nla_put_u64_64bit(skb, NFB_STATS_A_DRAINS, s.drains,
			      NFB_STATS_A_PAD)) {
		genlmsg_cancel(skb, hdr);
		return -EMSGSIZE;
	}
	nla_nest_end(skb, nest);
	genlmsg_end(skb, hdr);
	return 0;
}

static int nfb_nl_get_stats(struct sk_buff *skb, struct netlink_callback *cb)
{
	struct nfb_net *nn = nfb_pernet(sock_net(skb->sk));
	int cpu, start = cb->args[0], err = 0;

	for (cpu = start; cpu < nr_cpu_ids; cpu++) {
		if (!cpu_possible(cpu))
			continue;
		err = nfb_fill_stats(skb, per_cpu_ptr(nn->stats, cpu), cpu,
				     NETLINK_CB(cb->skb).portid,
				     cb->nlh->nlmsg_seq);
		if (err)
			break;
	}
	cb->args[0] = cpu;
	if (err && !skb->len)
		return err;
	return skb->len;
}

/*
 * Zero every CPU's counters. An increment racing with this on another CPU
 * may survive the reset; the in-flight count is never touched.
 */
static int nfb_nl_reset_stats(struct sk_buff *skb, struct genl_info *info)
{
	struct nfb_net *nn = nfb_pernet(genl_info_net(info));
	int cpu;

	for_each_possible_cpu(cpu)
		memset(per_cpu_ptr(nn->stats, cpu), 0,
		       offsetof(struct nfb_stats, inflight));
	return 0;
}

static const struct genl_small_ops nfb_ops[] = {
	{
		.cmd	= NFB_CMD_ATTACH,
		.doit	= nfb_nl_attach,
		.flags	= GENL_UNS_ADMIN_PERM,
	},
	{
		.cmd	= NFB_CMD_DETACH,
		.doit	= nfb_nl_detach,
		.flags	= GENL_UNS_ADMIN_PERM,
	},
	{
		.cmd	= NFB_CMD_GET_ATTACH,
		.dumpit	= nfb_nl_get_attach,
		.flags	= GENL_UNS_ADMIN_PERM,
	},
	{
		.cmd	= NFB_CMD_GET_STATS,
		.dumpit	= nfb_nl_get_stats,
		.flags	= GENL_UNS_ADMIN_PERM,
	},
	{
		.cmd	= NFB_CMD_RESET_STATS,
		.doit	= nfb_nl_reset_stats,
		.flags	= GENL_UNS_ADMIN_PERM,
	},
};

static struct genl_family nfb_genl_family __ro_after_init = {
	.name		= NFB_GENL_NAME,
	.version	= NFB_GENL_VERSION,
	.maxattr	= NFB_A_MAX,
	.policy		= nfb_policy,
	.netnsok	= true,
	.module		= THIS_MODULE,
	.small_ops	= nfb_ops,
	.n_small_ops	= ARRAY_SIZE(nfb_ops),
	/*
	 * resv_start_op stays 0: every command gets strict validation
	 * (genlmsghdr.reserved must be 0, only REQUEST/ACK/ECHO/DUMP flags,
	 * no unknown or trailing attributes).
	 */
};

int nfb_genl_init(void)
{
	return genl_register_family(&nfb_genl_family);
}

void nfb_genl_fini(void)
{
	genl_unregister_family(&nfb_genl_family);
}
