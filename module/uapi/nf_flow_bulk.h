/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * nf_flow_bulk: generic netlink interface between the kernel module and
 * userspace (the flowbulk tool).
 *
 * Family name NFB_GENL_NAME, version NFB_GENL_VERSION. Every command needs
 * CAP_NET_ADMIN in the user namespace of the caller's network namespace and
 * acts on that network namespace only.
 *
 * Until version 1.0 of the module the interface may change incompatibly:
 * NFB_GENL_VERSION (the family's version) says which one a module speaks,
 * and the flowbulk tool refuses another. Within a version, enums are
 * append-only: userspace must print unknown reasons as numbers.
 *
 * Version 2 removed what version 1 carried without meaning: the attribute
 * NFB_A_HOOK_PRIORITY (it repeated NFB_A_PRIORITY: the module's hook runs
 * at the flowtable's priority) and the counters declined "dying", fallback
 * "headroom" and drop "no_neigh", which nothing counted.
 */
#ifndef _UAPI_LINUX_NF_FLOW_BULK_H
#define _UAPI_LINUX_NF_FLOW_BULK_H

#define NFB_GENL_NAME		"nf_flow_bulk"
#define NFB_GENL_VERSION	2

/*
 * The members of the named sets below (enum nfb_attach_state, the decline,
 * fallback and drop reasons, enum nfb_encap, enum nfb_xmit), their names and
 * their numbers are defined once, in nf_flow_bulk_names.h.
 */

enum nfb_cmd {
	NFB_CMD_UNSPEC,
	NFB_CMD_ATTACH,		/* do: FAMILY, TABLE, FLOWTABLE */
	NFB_CMD_DETACH,		/* do: FAMILY, TABLE, FLOWTABLE */
	NFB_CMD_GET_ATTACH,	/* dump: one message per attachment */
	NFB_CMD_GET_STATS,	/* dump: one message per possible CPU */
	NFB_CMD_RESET_STATS,	/* do: zero every CPU's counters */
	__NFB_CMD_MAX,
};

#define NFB_CMD_MAX (__NFB_CMD_MAX - 1)

enum nfb_attr {
	NFB_A_UNSPEC,
	NFB_A_FAMILY,		/* u32: NFPROTO_INET, NFPROTO_IPV4, NFPROTO_IPV6 */
	NFB_A_TABLE,		/* string, nft table name */
	NFB_A_FLOWTABLE,	/* string, nft flowtable name */
	NFB_A_PRIORITY,		/* s32: the flowtable's hook priority, at
				 * which the module's hook runs too (reply)
				 */
	NFB_A_DEVICES,		/* nest of NFB_A_DEVICE (reply) */
	NFB_A_DEVICE,		/* nest of enum nfb_dev_attr */
	NFB_A_STATS,		/* nest of enum nfb_stats_attr (reply) */
	NFB_A_PAD,
	NFB_A_SCANS,		/* u64: walks of every device for this
				 * attachment (reply)
				 */
	NFB_A_STATE,		/* u8: enum nfb_attach_state (reply) */
	__NFB_A_MAX,
};

#define NFB_A_MAX (__NFB_A_MAX - 1)

/*
 * NFB_A_STATE. An attachment follows the flowtable its attach found (by
 * nf_tables' handles), not the next one of the same name.
 */
enum nfb_attach_state {
#define NFB_ATTACH_STATE(e, name, value) e,
#include "nf_flow_bulk_names.h"
#undef NFB_ATTACH_STATE
	__NFB_ATTACH_STATE_MAX,
};

enum nfb_dev_attr {
	NFB_DEV_A_UNSPEC,
	NFB_DEV_A_IFINDEX,	/* u32 */
	NFB_DEV_A_IFNAME,	/* string */
	NFB_DEV_A_ADJACENT,	/* u8: 1 when the module's hook runs right
				 * before the flowtable's; 0 when another hook
				 * sits between them and every packet is left
				 * to the stock path (reply)
				 */
	NFB_DEV_A_PAD,
	NFB_DEV_A_CHECKS,	/* u64: times a packet found this device's
				 * hook list changed and the module looked at
				 * this device again (reply)
				 */
	__NFB_DEV_A_MAX,
};

#define NFB_DEV_A_MAX (__NFB_DEV_A_MAX - 1)

/*
 * Statistics of one CPU. The nested per-reason and per-bucket attributes
 * carry a u64 each; their attribute type is the enum value plus one.
 */
enum nfb_stats_attr {
	NFB_STATS_A_UNSPEC,
	NFB_STATS_A_CPU,	/* u32 */
	NFB_STATS_A_PACKETS,	/* u64: packets taken by the fast path */
	NFB_STATS_A_BULKS,	/* u64: bulks transmitted */
	NFB_STATS_A_HIST,	/* nest: bulk-size histogram, enum nfb_hist */
	NFB_STATS_A_DECLINE,	/* nest: packets left to the stock path */
	NFB_STATS_A_FALLBACK,	/* nest: packets sent one by one */
	NFB_STATS_A_DROP,	/* nest: packets dropped */
	NFB_STATS_A_PAD,
	NFB_STATS_A_TAKEN_ENCAP, /* nest: packets taken per receive
				  * encapsulation, enum nfb_encap
				  */
	NFB_STATS_A_TAKEN_XMIT,	/* nest: packets taken per transmit type,
				 * enum nfb_xmit
				 */
	NFB_STATS_A_DRAINS,	/* u64: declines that sent queued packets
				 * of their flow ahead of themselves
				 */
	__NFB_STATS_A_MAX,
};

#define NFB_STATS_A_MAX (__NFB_STATS_A_MAX - 1)

/* Bulk-size histogram buckets: bucket i counts bulks of 2^i .. 2^(i+1)-1. */
#define NFB_HIST_BUCKETS	8	/* 1, 2-3, 4-7, ..., 64-127, 128+ */

/* Why a packet was left to the stock flowtable / normal stack. */
enum nfb_decline_reason {
#define NFB_DECLINE_REASON(e, name, value) e,
#include "nf_flow_bulk_names.h"
#undef NFB_DECLINE_REASON
	__NFB_DECLINE_MAX,
};

/* Why a taken packet was transmitted one by one instead of in a list. */
enum nfb_fallback_reason {
#define NFB_FALLBACK_REASON(e, name, value) e,
#include "nf_flow_bulk_names.h"
#undef NFB_FALLBACK_REASON
	__NFB_FALLBACK_MAX,
};

/* Why a taken packet was dropped. */
enum nfb_drop_reason {
#define NFB_DROP_REASON(e, name, value) e,
#include "nf_flow_bulk_names.h"
#undef NFB_DROP_REASON
	__NFB_DROP_MAX,
};

/*
 * Encapsulation a taken packet carried on receive (popped before transmit):
 * NFB_STATS_A_TAKEN_ENCAP. A tag the NIC or the core already moved out of
 * the packet (skb->vlan_tci) counts as a tag.
 */
enum nfb_encap {
#define NFB_ENCAP_TYPE(e, name, value) e,
#include "nf_flow_bulk_names.h"
#undef NFB_ENCAP_TYPE
	__NFB_ENCAP_MAX,
};

/* How the flow of a taken packet transmits: NFB_STATS_A_TAKEN_XMIT. */
enum nfb_xmit {
#define NFB_XMIT_TYPE(e, name, value) e,
#include "nf_flow_bulk_names.h"
#undef NFB_XMIT_TYPE
	__NFB_XMIT_MAX,
};

#endif /* _UAPI_LINUX_NF_FLOW_BULK_H */
