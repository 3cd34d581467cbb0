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
	NFB_ATTACH_ATTACHED,	/* the flowtable was found on its devices */
	NFB_ATTACH_WAITING,	/* found on no device (deleted, or without
				 * devices); the hooks stay and decline
				 */
	NFB_ATTACH_STALE,	/* deleted, and a flowtable of that name
				 * created since is not taken (attach it
				 * again); no hooks
				 */
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
	NFB_DECLINE_DISABLED,	/* sysctl nf_flow_bulk_enable = 0 */
	NFB_DECLINE_NOT_IP,	/* not IPv4/IPv6 (or unsupported encap) */
	NFB_DECLINE_HEADER,	/* short or malformed header */
	NFB_DECLINE_NO_FLOWTABLE, /* flowtable hook not found on device */
	NFB_DECLINE_MISS,	/* no flow entry */
	NFB_DECLINE_FRAG,	/* fragment */
	NFB_DECLINE_OPTIONS,	/* IPv4 options / IPv6 ext headers */
	NFB_DECLINE_TTL,	/* TTL or hop limit <= 1 */
	NFB_DECLINE_MTU,	/* larger than the egress MTU */
	NFB_DECLINE_TCP_FLAGS,	/* FIN or RST (the stock hook tears the
				 * flow down, or after 6.12 marks it
				 * closing); after 6.12 also a SYN on a
				 * closing flow
				 */
	NFB_DECLINE_DST_STALE,	/* cached route is no longer valid */
	NFB_DECLINE_HW_OFFLOAD,	/* flow is offloaded to hardware */
	NFB_DECLINE_XMIT_TYPE,	/* XFRM or other xmit type, IPv4 via IPv6 gw */
	NFB_DECLINE_ENCAP,	/* a flow the module never takes: an
				 * encapsulation the stock flowtable does
				 * not parse either (three layers, inner
				 * protocol not IP), or (6.19 on) a bridge
				 * flow into a tunnel
				 */
	NFB_DECLINE_UNWRITABLE,	/* could not make the header writable */
	NFB_DECLINE_L4PROTO,	/* neither TCP nor UDP */
	NFB_DECLINE_SHARED,	/* skb shared with another owner */
	NFB_DECLINE_ENCAP_HEADER, /* truncated 802.1Q tag or PPPoE header */
	NFB_DECLINE_PPPOE,	/* PPPoE version, type, code or length wrong */
	NFB_DECLINE_PPP_PROTO,	/* PPP protocol neither IPv4 nor IPv6 */
	NFB_DECLINE_DIRECT_DEV,	/* output device gone: direct xmit, or a
				 * neigh flow's real device (6.19 on)
				 */
	NFB_DECLINE_ENCAP_GSO,	/* 6.19 on: a GSO packet of a flow that
				 * leaves with PPPoE or two tags, which the
				 * stock hook segments before the push; the
				 * flow's other packets are taken
				 */
	__NFB_DECLINE_MAX,
};

/* Why a taken packet was transmitted one by one instead of in a list. */
enum nfb_fallback_reason {
	NFB_FALLBACK_QDISC,	/* egress device has a qdisc */
	NFB_FALLBACK_EGRESS_HOOK, /* tc or nft egress hook on the device */
	NFB_FALLBACK_NEIGH,	/* neighbour not connected: neigh_xmit */
	NFB_FALLBACK_BUSY,	/* txq stopped or locked by this CPU, or the
				 * driver refused: requeued in the qdisc
				 */
	NFB_FALLBACK_TXQ,	/* the queue picked on the built frame is
				 * not the bulk's
				 */
	__NFB_FALLBACK_MAX,
};

/* Why a taken packet was dropped. */
enum nfb_drop_reason {
	NFB_DROP_DEV_DOWN,	/* egress device down or gone */
	NFB_DROP_VALIDATE,	/* validate_xmit_skb_list() refused it */
	NFB_DROP_XMIT,		/* a noqueue driver refused it */
	NFB_DROP_QUEUE_FULL,	/* per-CPU queue full while the test_hold
				 * parameter is set, or during a drain
				 */
	NFB_DROP_NOMEM,		/* no headroom could be made */
	NFB_DROP_HEADER,	/* dev_hard_header() failed */
	__NFB_DROP_MAX,
};

/*
 * Encapsulation a taken packet carried on receive (popped before transmit):
 * NFB_STATS_A_TAKEN_ENCAP. A tag the NIC or the core already moved out of
 * the packet (skb->vlan_tci) counts as a tag.
 */
enum nfb_encap {
	NFB_ENCAP_NONE,		/* plain Ethernet */
	NFB_ENCAP_VLAN,		/* one 802.1Q or 802.1ad tag */
	NFB_ENCAP_VLAN2,	/* two tags (802.1ad + 802.1Q, or two 802.1Q) */
	NFB_ENCAP_PPPOE,	/* PPPoE session, untagged */
	NFB_ENCAP_VLAN_PPPOE,	/* PPPoE session inside one tag */
	__NFB_ENCAP_MAX,
};

/* How the flow of a taken packet transmits: NFB_STATS_A_TAKEN_XMIT. */
enum nfb_xmit {
	NFB_XMIT_NEIGH,		/* route and neighbour (FLOW_OFFLOAD_XMIT_NEIGH) */
	NFB_XMIT_DIRECT,	/* cached MAC addresses and output device
				 * (FLOW_OFFLOAD_XMIT_DIRECT: bridge topologies)
				 */
	__NFB_XMIT_MAX,
};

#endif /* _UAPI_LINUX_NF_FLOW_BULK_H */
