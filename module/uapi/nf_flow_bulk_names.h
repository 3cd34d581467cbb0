/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * nf_flow_bulk: the members of the uAPI's named sets, defined once. Each is
 * SET(ENUMERATOR, "name", value): nf_flow_bulk.h builds its enums from them,
 * the module (/proc/net/stat/nf_flow_bulk) and flowbulk (text and JSON) their
 * name tables, tools/check-names compares the netlink spec
 * (Documentation/netlink/nf_flow_bulk.yaml) and the documentation's reason
 * tables with them.
 *
 * Include it with SET defined (NFB_DECLINE_REASON, ...) for the members of
 * that set, in enum order; there is no include guard on purpose. The value is
 * the member's number, which is ABI: the module's build checks each
 * (netns.c), so that members can only be appended, never inserted, removed
 * or moved.
 */

#ifdef NFB_ATTACH_STATE
/* enum nfb_attach_state */
/* the flowtable was found on its devices */
NFB_ATTACH_STATE(NFB_ATTACH_ATTACHED, "attached", 0)
/* found on no device (deleted, or without devices); the hooks stay and
 * decline
 */
NFB_ATTACH_STATE(NFB_ATTACH_WAITING, "waiting", 1)
/* deleted, and a flowtable of that name created since is not taken (attach
 * it again); no hooks
 */
NFB_ATTACH_STATE(NFB_ATTACH_STALE, "stale", 2)
#endif

#ifdef NFB_DECLINE_REASON
/* enum nfb_decline_reason */
/* sysctl nf_flow_bulk_enable = 0 */
NFB_DECLINE_REASON(NFB_DECLINE_DISABLED, "disabled", 0)
/* not IPv4/IPv6 (or unsupported encap) */
NFB_DECLINE_REASON(NFB_DECLINE_NOT_IP, "not_ip", 1)
/* short or malformed header */
NFB_DECLINE_REASON(NFB_DECLINE_HEADER, "header", 2)
/* flowtable hook not found on device */
NFB_DECLINE_REASON(NFB_DECLINE_NO_FLOWTABLE, "no_flowtable", 3)
/* no flow entry */
NFB_DECLINE_REASON(NFB_DECLINE_MISS, "miss", 4)
/* fragment */
NFB_DECLINE_REASON(NFB_DECLINE_FRAG, "frag", 5)
/* IPv4 options / IPv6 ext headers */
NFB_DECLINE_REASON(NFB_DECLINE_OPTIONS, "options", 6)
/* TTL or hop limit <= 1 */
NFB_DECLINE_REASON(NFB_DECLINE_TTL, "ttl", 7)
/* larger than the egress MTU */
NFB_DECLINE_REASON(NFB_DECLINE_MTU, "mtu", 8)
/* FIN or RST (the stock hook tears the flow down, or after 6.12 marks it
 * closing); after 6.12 also a SYN on a closing flow
 */
NFB_DECLINE_REASON(NFB_DECLINE_TCP_FLAGS, "tcp_flags", 9)
/* cached route is no longer valid */
NFB_DECLINE_REASON(NFB_DECLINE_DST_STALE, "dst_stale", 10)
/* flow is offloaded to hardware */
NFB_DECLINE_REASON(NFB_DECLINE_HW_OFFLOAD, "hw_offload", 11)
/* XFRM or other xmit type, IPv4 via IPv6 gw */
NFB_DECLINE_REASON(NFB_DECLINE_XMIT_TYPE, "xmit_type", 12)
/* a flow the module never takes: an encapsulation the stock flowtable does
 * not parse either (three layers, inner protocol not IP), or (6.19 on) a
 * bridge flow into a tunnel
 */
NFB_DECLINE_REASON(NFB_DECLINE_ENCAP, "encap", 13)
/* could not make the header writable */
NFB_DECLINE_REASON(NFB_DECLINE_UNWRITABLE, "unwritable", 14)
/* neither TCP nor UDP */
NFB_DECLINE_REASON(NFB_DECLINE_L4PROTO, "l4proto", 15)
/* skb shared with another owner */
NFB_DECLINE_REASON(NFB_DECLINE_SHARED, "shared", 16)
/* truncated 802.1Q tag or PPPoE header */
NFB_DECLINE_REASON(NFB_DECLINE_ENCAP_HEADER, "encap_header", 17)
/* PPPoE version, type, code or length wrong */
NFB_DECLINE_REASON(NFB_DECLINE_PPPOE, "pppoe", 18)
/* PPP protocol neither IPv4 nor IPv6 */
NFB_DECLINE_REASON(NFB_DECLINE_PPP_PROTO, "ppp_proto", 19)
/* output device gone: direct xmit, or a neigh flow's real device (6.19 on) */
NFB_DECLINE_REASON(NFB_DECLINE_DIRECT_DEV, "direct_dev", 20)
/* 6.19 on: a GSO packet of a flow that leaves with PPPoE or two tags,
 * which the stock hook segments before the push; the flow's other packets
 * are taken
 */
NFB_DECLINE_REASON(NFB_DECLINE_ENCAP_GSO, "encap_gso", 21)
#endif

#ifdef NFB_FALLBACK_REASON
/* enum nfb_fallback_reason */
/* egress device has a qdisc */
NFB_FALLBACK_REASON(NFB_FALLBACK_QDISC, "qdisc", 0)
/* tc or nft egress hook on the device */
NFB_FALLBACK_REASON(NFB_FALLBACK_EGRESS_HOOK, "egress_hook", 1)
/* neighbour not connected: neigh_xmit */
NFB_FALLBACK_REASON(NFB_FALLBACK_NEIGH, "neigh", 2)
/* txq stopped or locked by this CPU, or the driver refused: requeued in
 * the qdisc
 */
NFB_FALLBACK_REASON(NFB_FALLBACK_BUSY, "busy", 3)
/* the queue picked on the built frame is not the bulk's */
NFB_FALLBACK_REASON(NFB_FALLBACK_TXQ, "txq", 4)
#endif

#ifdef NFB_DROP_REASON
/* enum nfb_drop_reason */
/* egress device down or gone */
NFB_DROP_REASON(NFB_DROP_DEV_DOWN, "dev_down", 0)
/* validate_xmit_skb_list() refused it */
NFB_DROP_REASON(NFB_DROP_VALIDATE, "validate", 1)
/* a noqueue driver refused it */
NFB_DROP_REASON(NFB_DROP_XMIT, "xmit", 2)
/* per-CPU queue full while the test_hold parameter is set, or during a
 * drain
 */
NFB_DROP_REASON(NFB_DROP_QUEUE_FULL, "queue_full", 3)
/* no headroom could be made */
NFB_DROP_REASON(NFB_DROP_NOMEM, "nomem", 4)
/* dev_hard_header() failed */
NFB_DROP_REASON(NFB_DROP_HEADER, "header", 5)
#endif

#ifdef NFB_ENCAP_TYPE
/* enum nfb_encap */
/* plain Ethernet */
NFB_ENCAP_TYPE(NFB_ENCAP_NONE, "none", 0)
/* one 802.1Q or 802.1ad tag */
NFB_ENCAP_TYPE(NFB_ENCAP_VLAN, "vlan", 1)
/* two tags (802.1ad + 802.1Q, or two 802.1Q) */
NFB_ENCAP_TYPE(NFB_ENCAP_VLAN2, "vlan2", 2)
/* PPPoE session, untagged */
NFB_ENCAP_TYPE(NFB_ENCAP_PPPOE, "pppoe", 3)
/* PPPoE session inside one tag */
NFB_ENCAP_TYPE(NFB_ENCAP_VLAN_PPPOE, "vlan_pppoe", 4)
#endif

#ifdef NFB_XMIT_TYPE
/* enum nfb_xmit */
/* route and neighbour (FLOW_OFFLOAD_XMIT_NEIGH) */
NFB_XMIT_TYPE(NFB_XMIT_NEIGH, "neigh", 0)
/* cached MAC addresses and output device (FLOW_OFFLOAD_XMIT_DIRECT: bridge
 * topologies)
 */
NFB_XMIT_TYPE(NFB_XMIT_DIRECT, "direct", 1)
#endif
