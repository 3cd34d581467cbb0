/* SPDX-License-Identifier: GPL-2.0 */
/*
 * nf_flow_bulk: the transmit queue of a packet, picked as the stack picks it
 * (netdev_core_pick_tx(), not exported). The drain puts it in the bulk key
 * (queue.c, nfb_txq_of()); transmit picks it for the packets whose queue
 * depends on their frame (xmit.c, nfb_pick_frame()). Both run per packet:
 * the picks are inline where they run.
 */
#ifndef _NFB_TXQ_H
#define _NFB_TXQ_H

#include <linux/netdevice.h>

#include "nfb.h"

/*
 * The bulk key's queue for packets whose queue is picked only once their
 * frame is built, in __nfb_xmit_bulk() (nfb_pick_txq()).
 */
#define NFB_TXQ_LATE	U16_MAX

/*
 * The transmit queue dev_queue_xmit() would pick, computed the same way
 * (netdev_core_pick_tx(), not exported) on the same skb, so that a packet
 * of a flow that falls back to dev_queue_xmit() lands on the queue its
 * list-path siblings use. skb->dev is already the output device. The skb's
 * queue_mapping (the receive queue, which skb_tx_hash() reads) is left as
 * it is; the list path sets it just before the driver. Or NFB_TXQ_LATE.
 */
static inline u16 nfb_pick_txq(struct net_device *dev, struct sk_buff *skb)
{
	const struct nfb_cb *cb = NFB_CB(skb);

	/*
	 * A device going away has no queues left to pick from; its packets
	 * are dropped (dev_down) before any queue is used. Closing it waits
	 * for an RCU grace period, so a device seen running here keeps its
	 * queues until this poll ends.
	 */
	if (unlikely(!netif_running(dev)))
		return 0;

	/*
	 * Here the packet is still its network packet: no Ethernet header at
	 * skb->data, no tag. A device's own pick may read them (mac80211
	 * without iTXQ the receiver address, sunvnet the destination address,
	 * a tun steering program the frame; the DCB picks of mlx5, otx2, fec
	 * and cxgb4 the tag's priority), and where the module pushes tags (a
	 * VLAN or PPPoE stand-in, 6.19's encapsulation) so does the flow hash
	 * netdev_pick_tx() falls back to. Those get their queue once their
	 * frame is built (nfb_pick_frame()), which also leaves the control
	 * block to the devices that keep a queue mapping there (bond, team,
	 * net_failover, netvsc; on 7.x in our part, nfb.h). netdev_pick_tx()
	 * on a bare network packet reads nothing of the frame (the socket,
	 * XPS, the receive queue, the priority, a flow hash from the network
	 * header on) and writes nothing in the control block: it picks here
	 * what it picks on the frame.
	 */
	if (dev->netdev_ops->ndo_select_queue || cb->stand_in ||
	    (nfb_flowtable_pushes_encap() && cb->encap[0].proto))
		return NFB_TXQ_LATE;

	nfb_skb_set_sender_cpu(skb);
	return netdev_cap_txqueue(dev, netdev_pick_tx(dev, skb, NULL));
}

/*
 * The queue of a packet of an NFB_TXQ_LATE bulk, its frame built, our part
 * of the control block cleared and the route dropped where the device
 * lets it go: as netdev_core_pick_tx() picks it at that point of
 * __dev_queue_xmit().
 */
static inline u16 nfb_pick_frame(struct net_device *dev, struct sk_buff *skb)
{
	const struct net_device_ops *ops = dev->netdev_ops;
	int q;

	nfb_skb_set_sender_cpu(skb);
	if (dev->real_num_tx_queues == 1)
		return 0;
	if (ops->ndo_select_queue)
		q = ops->ndo_select_queue(dev, skb, NULL);
	else
		q = netdev_pick_tx(dev, skb, NULL);
	return netdev_cap_txqueue(dev, q);
}

/*
 * nfb_pick_txq() inline for a single-queue device (veth on a one-CPU
 * host, most virtual devices, many NICs on small routers): queue 0, as
 * netdev_core_pick_tx() decides without asking the device, after the same
 * sender_cpu fix-up. Saves the call per packet. On 7.x too: no device is
 * asked, so the parked bytes stay as the packet came (nfb.h).
 */
static __always_inline u16 nfb_txq_of(struct net_device *dev,
				      struct sk_buff *skb)
{
	if (likely(dev->real_num_tx_queues == 1)) {
		nfb_skb_set_sender_cpu(skb);
		return 0;
	}
	return nfb_pick_txq(dev, skb);
}

#endif /* _NFB_TXQ_H */
