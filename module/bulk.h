/* SPDX-License-Identifier: GPL-2.0 */
/*
 * nf_flow_bulk: a bulk, what the drain (queue.c) hands to transmit
 * (xmit.c): packets of one bulk key (nfb_key_match()), linked from @head
 * to @tail through skb->next, each holding a reference on @dev and counted
 * in flight in @nn until nfb_xmit_bulk() returns.
 */
#ifndef _NFB_BULK_H
#define _NFB_BULK_H

#include <linux/netdevice.h>

struct nfb_net;

struct nfb_bulk {
	struct sk_buff		*head;
	struct sk_buff		*tail;
	struct net_device	*dev;
	struct nfb_net		*nn;
	u64			flows;		/* bloom, NFB_BULK_BLOOM() */
	u32			serial;
	bool			slotted;	/* its packets in the slots */
	unsigned int		count;
	unsigned int		max;
	u16			txq;
	__be16			proto;
	u8			xmit;		/* enum nfb_xmit */
};

void nfb_xmit_bulk(struct nfb_bulk *b);

#endif /* _NFB_BULK_H */
