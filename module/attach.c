// SPDX-License-Identifier: GPL-2.0
/*
 * nf_flow_bulk: finding nftables flowtables and hooking in front of them.
 *
 * nf_tables keeps its tables in per-netns data we cannot reach
 * (nf_tables_net_id is not exported). A flowtable is visible, though, as
 * an entry in the ingress hook list of each of its devices: the hook
 * function is the flowtable type's hook and priv is &nft_flowtable->data.
 * We walk the namespace's devices under RTNL and the RCU read lock, which
 * keeps the entries and the flowtables they point to alive (nf_tables frees
 * a deleted flowtable after unregistering its hooks and a grace period).
 *
 * For each device found we register an NFPROTO_NETDEV ingress hook at the
 * flowtable's own priority. nf_hook_entries_grow() puts a new hook in front
 * of every registered hook of the same or a higher priority, so ours lands
 * right before the flowtable's, behind every hook of a lower priority, and
 * a hook registered later at the same priority goes in front of ours, not
 * between. Only a hook of the flowtable's priority registered after the
 * flowtable and before our attach ends up between the two: the datapath
 * then leaves every packet to the stock path (that hook must see them) and
 * the attachment reports the device as not adjacent.
 *
 * Attachments and hooks change under RTNL only; the datapath reads struct
 * nfb_hook under RCU.
 *
 * Rescans converge: the datapath asks for one only when a device's hook
 * list changed since the last scan (struct nfb_hook.seen), at most ten a
 * second per namespace; an attachment that is not settled (flowtable gone,
 * hooks pending removal) is polled with a delay that doubles from
 * NFB_RESCAN_MIN to NFB_RESCAN_MAX; and every attachment is walked again
 * every sweep_interval seconds (the sweep), since an nft update that adds
 * devices to a flowtable changes no hook list the module's hooks see.
 * Nothing a user namespace can do makes the module take RTNL more often
 * than that on its own. What a walk costs grows with the namespace's
 * attachments (each walks the devices' hook lists under RTNL), so a
 * namespace holds at most max_attachments of them, a module parameter:
 * the host's root sets it, not the namespace's, as it sets sweep_interval.
 *
 * An attachment follows one flowtable, the one its attach found, known by
 * nf_tables' handles: through device changes and hook moves, not into a
 * flowtable of the same name created after it was deleted. The module
 * cannot tell a re-creation that wants the module (a flowbulk -f file
 * saying hook early_ingress) from one that does not (nft, or a file saying
 * hook ingress); flowbulk can, and attaches again in the first case.
 */
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/netdevice.h>
#include <linux/rtnetlink.h>
#include <linux/slab.h>
#include <net/netfilter/nf_flow_table.h>
#include <net/netfilter/nf_tables.h>

#include "nfb.h"

/* Room for devices a scan may find beyond those already hooked. */
#define NFB_FOUND_SPARE	8

/*
 * An unsigned parameter from 1 to @max: anything else is refused with
 * ERANGE (a number) or kstrtouint()'s error.
 */
static int nfb_param_set_range(const char *val, unsigned int *param,
			       unsigned int max)
{
	unsigned int n;
	int err;

	err = kstrtouint(val, 0, &n);
	if (err)
		return err;
	if (n < 1 || n > max)
		return -ERANGE;
	WRITE_ONCE(*param, n);
	return 0;
}

#define NFB_MAX_ATTACHMENTS_LIMIT	4096
static unsigned int nfb_max_attachments = 64;

static int nfb_max_attachments_set(const char *val,
				   const struct kernel_param *kp)
{
	return nfb_param_set_range(val, &nfb_max_attachments,
				   NFB_MAX_ATTACHMENTS_LIMIT);
}

static const struct kernel_param_ops nfb_max_attachments_ops = {
	.set	= nfb_max_attachments_set,
	.get	= param_get_uint,
};

module_param_cb(max_attachments, &nfb_max_attachments_ops,
		&nfb_max_attachments, 0644);
MODULE_PARM_DESC(max_attachments,
		 "flowtables one network namespace may attach (1..4096, default 64)");

/*
 * Seconds between sweeps; a new value counts from the last sweep, and
 * from the next time the rescan work is scheduled.
 */
#define NFB_SWEEP_INTERVAL_LIMIT	3600
static unsigned int nfb_sweep_interval = 64;

static int nfb_sweep_interval_set(const char *val,
				  const struct kernel_param *kp)
{
	return nfb_param_set_range(val, &nfb_sweep_interval,
				   NFB_SWEEP_INTERVAL_LIMIT);
}

static const struct kernel_param_ops nfb_sweep_interval_ops = {
	.set	= nfb_sweep_interval_set,
	.get	= param_get_uint,
};

module_param_cb(sweep_interval, &nfb_sweep_interval_ops,
		&nfb_sweep_interval, 0644);
MODULE_PARM_DESC(sweep_interval,
		 "seconds between walks of every attachment, which find devices an nft update added (1..3600, default 64)");

/* When the next sweep of @nn is due. Caller holds RTNL. */
static unsigned long nfb_sweep_at(const struct nfb_net *nn)
{
	return nn->swept_at + READ_ONCE(nfb_sweep_interval) * HZ;
}

struct nfb_found {
	struct net_device	*dev;
	const void		*cookie;
	const void		*entries;	/* dev->nf_hooks_ingress scanned */
	int			priority;
	u64			table_handle;
	u64			ft_handle;
};

/*
 * Hook functions found not to be the inet flowtable's, so that a walk does
 * not run sprint_symbol() on every foreign hook it passes (every netdev
 * chain's, say) for as long as no inet flowtable has been seen. Under RTNL.
 * A module going away takes its functions with it, and another module's
 * could later sit at the same address: nfb_modules_gone, moved by a module
 * notifier before the module's text is freed, empties the cache.
 */
#define NFB_REJECTED_MAX	8
static unsigned long nfb_rejected[NFB_REJECTED_MAX];	/* addresses */
static unsigned int nfb_rejected_next;
static unsigned int nfb_rejected_gen;
static atomic_t nfb_modules_gone = ATOMIC_INIT(0);

static bool nfb_flowtable_hook_learn(nf_hookfn *fn, const void *priv)
{
	unsigned int gen = atomic_read(&nfb_modules_gone);
	unsigned int i;

	ASSERT_RTNL();
	if (nfb_is_flowtable_hook(fn))
		return true;
	if (gen != nfb_rejected_gen) {
		memset(nfb_rejected, 0, sizeof(nfb_rejected));
		nfb_rejected_gen = gen;
	}
	for (i = 0; i < NFB_REJECTED_MAX; i++)
		if (nfb_rejected[i] == (unsigned long)fn)
			return false;
	nfb_learn_inet_hook(fn, priv);
	if (nfb_is_flowtable_hook(fn))
		return true;
	nfb_rejected[nfb_rejected_next] = (unsigned long)fn;
	nfb_rejected_next = (nfb_rejected_next + 1) % NFB_REJECTED_MAX;
	return false;
}

static int nfb_module_event(struct notifier_block *nb, unsigned long state,
			    void *data)
{
	if (state == MODULE_STATE_GOING)
		atomic_inc(&nfb_modules_gone);
	return NOTIFY_DONE;
}

static struct notifier_block nfb_module_notifier = {
	.notifier_call	= nfb_module_event,
};

static const struct nft_flowtable *nfb_nft(const struct nf_flowtable *ft)
{
	return container_of(ft, struct nft_flowtable, data);
}

static bool nfb_ft_named(const struct nfb_attach *a,
			 const struct nft_flowtable *nft)
{
	return nft->table->family == a->family &&
	       !strcmp(nft->table->name, a->table) &&
	       !strcmp(nft->name, a->name);
}

/*
 * Whether @nft is the flowtable @a follows. Handles are never reused in a
 * namespace (the table's counts per namespace, the flowtable's per table),
 * so a flowtable deleted and created again, or its table, has other ones.
 */
static bool nfb_ft_same(const struct nfb_attach *a,
			const struct nft_flowtable *nft)
{
	return !a->bound || (nft->table->handle == a->table_handle &&
			     nft->handle == a->ft_handle);
}

/*
 * Whether the flowtable of @a hooks in on @dev; if so, where, in @out.
 * @other is set when another flowtable of that name does. Caller holds
 * RTNL and the RCU read lock.
 */
static bool nfb_find_on(const struct nfb_attach *a, struct net_device *dev,
			struct nfb_found *out, bool *other)
{
	const struct nf_hook_entries *e;
	const struct nft_flowtable *nft;
	struct nf_hook_ops **ops;
	unsigned int i;

	e = rcu_dereference(dev->nf_hooks_ingress);
	if (!e)
		return false;
	ops = nf_hook_entries_get_hook_ops(e);
	for (i = 0; i < e->num_hook_entries; i++) {
		nf_hookfn *fn = e->hooks[i].hook;

		if (fn == nfb_hook_fn ||
		    !nfb_flowtable_hook_learn(fn, e->hooks[i].priv))
			continue;
		nft = nfb_nft(e->hooks[i].priv);
		if (!nfb_ft_named(a, nft))
			continue;
		if (!nfb_ft_same(a, nft)) {
			*other = true;
			continue;
		}
		out->dev = dev;
		out->cookie = e->hooks[i].priv;
		out->entries = e;
		out->priority = ops[i]->priority;
		out->table_handle = nft->table->handle;
		out->ft_handle = nft->handle;
		return true;
	}
	return false;
}

/*
 * Where the flowtable of @a hooks in now: the first @max devices go to
 * @out; returns how many there are. A flowtable
 * can have any number of devices (nf_tables takes at most 256 per request,
 * but an update adds more). @other as for nfb_find_on(). Caller holds RTNL.
 */
static unsigned int nfb_find(struct net *net, const struct nfb_attach *a,
			     struct nfb_found *out, unsigned int max,
			     bool *other)
{
	struct net_device *dev;
	struct nfb_found f;
	unsigned int n = 0;

	ASSERT_RTNL();
	rcu_read_lock();
	for_each_netdev(net, dev) {
		if (!nfb_find_on(a, dev, &f, other))
			continue;
		if (n < max)
			out[n] = f;
		n++;
	}
	rcu_read_unlock();
	return n;
}

/*
 * The scan has looked at @h's device: remember its hook list as it was
 * before the walk (nfb_sync() takes it first). nf_tables changes hook
 * lists under its own mutex, not RTNL: a list that changed during or after
 * the walk then differs from the one remembered, and the next packet asks
 * for another scan instead of trusting a stale one.
 */
static void nfb_hook_mark_seen(struct nfb_hook *h)
{
	WRITE_ONCE(h->seen, h->scan_seen);
}

static void nfb_hook_del(struct nfb_hook *h)
{
	nf_unregister_net_hook(h->nn->net, &h->ops);
	list_del(&h->list);
	kfree_rcu(h, rcu);
}

static struct nfb_hook *nfb_hook_by_dev(const struct nfb_attach *a,
					const struct net_device *dev)
{
	struct nfb_hook *h;

	list_for_each_entry(h, &a->hooks, list)
		if (h->dev == dev)
			return h;
	return NULL;
}

static int nfb_hook_add(struct nfb_attach *a, const struct nfb_found *f,
			struct netlink_ext_ack *extack)
{
	struct nfb_hook *h;
	int err;

	h = kzalloc(sizeof(*h), GFP_KERNEL);
	if (!h)
		return -ENOMEM;

	h->nn = a->nn;
	h->dev = f->dev;
	h->ft_priority = f->priority;
	h->ft_cookie = f->cookie;
	h->seen = f->entries;
	h->ops = (struct nf_hook_ops) {
		.hook		= nfb_hook_fn,
		.dev		= f->dev,
		.priv		= h,
		.pf		= NFPROTO_NETDEV,
		.hooknum	= NF_NETDEV_INGRESS,
		.priority	= f->priority,
	};

	err = nf_register_net_hook(a->nn->net, &h->ops);
	if (err) {
		NL_SET_ERR_MSG(extack,
			       "cannot register an ingress hook on a flowtable device");
		kfree(h);
		return err;
	}
	list_add_tail(&h->list, &a->hooks);
	return 0;
}

/*
 * Whether @h runs after the flowtable entry @cookie on its device: a
 * flowtable re-created at the priority of an existing hook goes in front
 * of it (new hooks go before hooks of equal priority). Registering the
 * hook again puts it back in front. A hook in front but not adjacent
 * (another hook of that priority between) is not "behind": registering it
 * again would change nothing and only cause another scan.
 */
static bool nfb_hook_behind(const struct nfb_hook *h, const void *cookie)
{
	const struct nf_hook_entries *e;
	int i, ours = -1, ft = -1;

	rcu_read_lock();
	e = rcu_dereference(h->dev->nf_hooks_ingress);
	for (i = 0; e && i < e->num_hook_entries; i++) {
		if (e->hooks[i].priv == h)
			ours = i;
		else if (e->hooks[i].priv == cookie && ft < 0)
			ft = i;
	}
	rcu_read_unlock();
	return ours >= 0 && ft >= 0 && ours > ft;
}

/*
 * Bring @h, the hook of @a on @f's device (NULL: none yet), in line with
 * where the flowtable is on that device: kept when it runs at the
 * flowtable's priority and in front of it, else replaced, the new hook
 * registered before the old one goes so that no packet misses both.
 * Returns the hook in use, or an ERR_PTR (the old hook then stays).
 */
static struct nfb_hook *nfb_hook_refresh(struct nfb_attach *a,
					 struct nfb_hook *h,
					 const struct nfb_found *f,
					 struct netlink_ext_ack *extack)
{
	struct nfb_hook *added;
	int err;

	a->priority = f->priority;
	if (h && h->ft_priority == f->priority &&
	    !nfb_hook_behind(h, f->cookie)) {
		WRITE_ONCE(h->ft_cookie, f->cookie);
		WRITE_ONCE(h->seen, f->entries);
		return h;
	}
	err = nfb_hook_add(a, f, extack);
	if (err)
		return ERR_PTR(err);
	added = list_last_entry(&a->hooks, struct nfb_hook, list);
	if (h) {
		added->checks = h->checks;
		nfb_hook_del(h);
	}
	return added;
}

/*
 * nfb_sync(), first stage: the flowtable's devices, in a kvcalloc()ed array
 * of *@max entries the caller frees, *@n of them found (more than *@max when
 * the flowtable grew meanwhile). NULL when out of memory.
 *
 * Room for the devices hooked so far and a few more: one walk, as a
 * rescan mostly finds what the last one did. A flowtable with more
 * devices than that gets a second walk with room for all it has.
 * Devices cannot come or go under RTNL, but nf_tables adds hooks
 * under its own mutex: a flowtable that grew between the two walks is
 * handled up to what was counted, and the rest at the next scan: the
 * attachment stays unsettled, so it is polled (no packet of the new
 * devices reaches a hook of ours to ask).
 */
static struct nfb_found *nfb_sync_walk(struct nfb_attach *a, unsigned int *n,
				       unsigned int *max, bool *other)
{
	struct nfb_found *found;
	struct nfb_hook *h;

	*max = NFB_FOUND_SPARE;
	a->scans++;
	list_for_each_entry(h, &a->hooks, list) {
		WRITE_ONCE(h->dirty, false);
		h->scan_seen = rcu_access_pointer(h->dev->nf_hooks_ingress);
		(*max)++;
	}
	found = kvcalloc(*max, sizeof(*found), GFP_KERNEL);
	if (!found)
		return NULL;
	*n = nfb_find(a->nn->net, a, found, *max, other);
	if (*n && !a->bound) {
		/*
		 * An attach binds to the first flowtable of the name it finds
		 * and walks again for that one alone: during an nf_tables
		 * transaction that deletes and re-creates it, both hook in.
		 */
		a->table_handle = found[0].table_handle;
		a->ft_handle = found[0].ft_handle;
		a->bound = true;
		*n = nfb_find(a->nn->net, a, found, *max, other);
	}
	if (*n > *max) {
		kvfree(found);
		*max = *n;
		found = kvcalloc(*max, sizeof(*found), GFP_KERNEL);
		if (!found)
			return NULL;
		*n = nfb_find(a->nn->net, a, found, *max, other);
	}
	return found;
}

/* nfb_sync(), when the walk found no device: always -ENOENT. */
static int nfb_sync_none(struct nfb_attach *a, bool other)
{
	struct nfb_hook *h, *tmp;

	if (other) {
		/*
		 * Deleted, and one of that name made since: its hooks are the
		 * stock flowtable's and ours would only decline. Nothing brings
		 * this one back (handles are not reused), so nothing is polled.
		 */
		list_for_each_entry_safe(h, tmp, &a->hooks, list)
			nfb_hook_del(h);
		a->stale = true;
		a->unsettled = false;
		return -ENOENT;
	}
	/*
	 * The flowtable is gone (or without devices): the hooks stay
	 * and decline, and ask again only when a hook list changes.
	 */
	list_for_each_entry(h, &a->hooks, list)
		nfb_hook_mark_seen(h);
	return -ENOENT;
}

/*
 * nfb_sync(), when the walk found devices: a hook on each of the first @n
 * (@partial: the flowtable has more), then the hooks of the devices that
 * were not found.
 */
static int nfb_sync_hooks(struct nfb_attach *a, const struct nfb_found *found,
			  unsigned int n, bool partial,
			  struct netlink_ext_ack *extack)
{
	struct nfb_hook *h, *tmp;
	LIST_HEAD(keep);
	unsigned int i;
	int err = 0;

	for (i = 0; i < n; i++) {
		h = nfb_hook_refresh(a, nfb_hook_by_dev(a, found[i].dev),
				     &found[i], extack);
		if (IS_ERR(h)) {
			err = PTR_ERR(h);
			break;
		}
		list_move_tail(&h->list, &keep);
	}

	/*
	 * Devices that no longer carry the flowtable. nf_tables changes its
	 * hooks under its own mutex, not RTNL, so a scan can see a flowtable
	 * half (un)registered: a hook goes only after three scans in a row
	 * missed it. Until then it declines and asks for rescans.
	 */
	a->unsettled = partial;
	list_for_each_entry(h, &keep, list)
		h->missing = 0;
	list_for_each_entry_safe(h, tmp, &a->hooks, list) {
		if (!err && ++h->missing >= 3) {
			nfb_hook_del(h);
			continue;
		}
		nfb_hook_mark_seen(h);
		a->unsettled = true;
		list_move_tail(&h->list, &keep);
	}
	list_splice(&keep, &a->hooks);
	return err;
}

/*
 * Bring the hooks of @a in line with where its flowtable is now. A hook at
 * the wrong priority, or behind the flowtable, is replaced, registering the
 * new one first so that no packet misses both. When the flowtable is found
 * nowhere, the old hooks stay: they decline everything and keep asking for
 * a rescan, which finds the flowtable again once it has devices again.
 * When another flowtable of its name is found instead, this one was
 * deleted: the attachment is stale and loses its hooks (nfb_reattach()).
 */
static int nfb_sync(struct nfb_attach *a, struct netlink_ext_ack *extack)
{
	struct nfb_found *found;
	unsigned int n, max;
	bool other = false;
	int err;

	found = nfb_sync_walk(a, &n, &max, &other);
	if (!found)
		return -ENOMEM;
	if (n)
		err = nfb_sync_hooks(a, found, min(n, max), n > max, extack);
	else
		err = nfb_sync_none(a, other);
	kvfree(found);
	return err;
}

/*
 * The datapath found @h's device's hook list changed (struct nfb_hook.dirty):
 * look at that device alone. Most changes are another hook coming or going
 * (a netdev chain, say), after which the flowtable is where it was; what a
 * user namespace can cause at ten rescans a second is then one walk of one
 * device's hook list, not of every device for every attachment. Anything
 * else, the flowtable gone from the device or re-created, may have changed
 * other devices too: the attachment becomes unsettled and the next poll
 * (nfb_rescan_all()), which backs off, walks them all.
 */
static void nfb_sync_dev(struct nfb_attach *a, struct nfb_hook *h)
{
	bool found, other = false;
	struct nfb_found f;

	WRITE_ONCE(h->dirty, false);
	h->checks++;
	h->scan_seen = rcu_access_pointer(h->dev->nf_hooks_ingress);
	rcu_read_lock();
	found = nfb_find_on(a, h->dev, &f, &other);
	rcu_read_unlock();
	if (!found) {
		nfb_hook_mark_seen(h);
		a->unsettled = true;
		return;
	}
	if (f.cookie != READ_ONCE(h->ft_cookie))
		a->unsettled = true;
	if (IS_ERR(nfb_hook_refresh(a, h, &f, NULL))) {
		nfb_hook_mark_seen(h);
		a->unsettled = true;
	}
}

/* Run the rescan work at @when, or now if that has passed. */
static void nfb_rescan_at(struct nfb_net *nn, unsigned long when)
{
	schedule_delayed_work(&nn->rescan_work,
			      time_after(when, jiffies) ? when - jiffies : 0);
}

static struct nfb_attach *nfb_attach_find(struct nfb_net *nn, u32 family,
					  const char *table, const char *name)
{
	struct nfb_attach *a;

	list_for_each_entry(a, &nn->attachments, list)
		if (a->family == family && !strcmp(a->table, table) &&
		    !strcmp(a->name, name))
			return a;
	return NULL;
}

static void nfb_attach_free(struct nfb_attach *a)
{
	struct nfb_hook *h, *tmp;

	list_for_each_entry_safe(h, tmp, &a->hooks, list)
		nfb_hook_del(h);
	list_del(&a->list);
	a->nn->n_attachments--;
	kfree(a);
}

/*
 * Attach again what is already attached: an attachment whose flowtable is
 * still there stays as it is (EEXIST); one whose flowtable was deleted
 * takes the flowtable of that name there is now, the user's way to say a
 * re-created flowtable is to be taken too (flowbulk -f does after a load).
 * When there is none, the attachment stays as it was.
 */
static int nfb_reattach(struct nfb_attach *a, struct netlink_ext_ack *extack)
{
	u64 table_handle = a->table_handle, ft_handle = a->ft_handle;
	bool other = false, stale = a->stale;
	int err;

	if (!a->stale && nfb_find(a->nn->net, a, NULL, 0, &other)) {
		NL_SET_ERR_MSG(extack, "flowtable already attached");
		return -EEXIST;
	}
	a->bound = false;
	a->stale = false;
	err = nfb_sync(a, extack);
	if (err == -ENOENT && !a->bound) {
		a->table_handle = table_handle;
		a->ft_handle = ft_handle;
		a->bound = true;
		a->stale = stale;
		NL_SET_ERR_MSG(extack, "no such flowtable, or it has no device");
	}
	if (!err)
		nfb_rescan_at(a->nn, nfb_sweep_at(a->nn));
	return err;
}

/*
 * Room for one more attachment: under max_attachments, or in place of a
 * stale one (the oldest), which nothing will ever use again. Stale as
 * attach list shows it (nfb_attach_state()), not only as the last rescan
 * found it: a flowtable re-created since the last sweep is stale already.
 */
static int nfb_attach_room(struct nfb_net *nn, struct netlink_ext_ack *extack)
{
	struct nfb_attach *a;

	if (nn->n_attachments < READ_ONCE(nfb_max_attachments))
		return 0;
	list_for_each_entry(a, &nn->attachments, list) {
		if (nfb_attach_state(a) == NFB_ATTACH_STALE) {
			nfb_attach_free(a);
			return 0;
		}
	}
	NL_SET_ERR_MSG(extack,
		       "too many flowtables attached in this namespace (module parameter max_attachments)");
	return -ENOSPC;
}

int nfb_attach(struct net *net, u32 family, const char *table,
	       const char *name, struct netlink_ext_ack *extack)
{
	struct nfb_net *nn = nfb_pernet(net);
	struct nfb_attach *a;
	int err;

	ASSERT_RTNL();
	if (nn->exiting) {
		NL_SET_ERR_MSG(extack, "network namespace or module going away");
		return -ENODEV;
	}
	a = nfb_attach_find(nn, family, table, name);
	if (a)
		return nfb_reattach(a, extack);
	err = nfb_attach_room(nn, extack);
	if (err)
		return err;

	a = kzalloc(sizeof(*a), GFP_KERNEL);
	if (!a)
		return -ENOMEM;
	a->nn = nn;
	a->family = family;
	strscpy(a->table, table, sizeof(a->table));
	strscpy(a->name, name, sizeof(a->name));
	INIT_LIST_HEAD(&a->hooks);
	list_add_tail(&a->list, &nn->attachments);
	nn->n_attachments++;
	WRITE_ONCE(nn->attached_once, true);

	err = nfb_sync(a, extack);
	if (err) {
		if (err == -ENOENT)
			NL_SET_ERR_MSG(extack,
				       "no such flowtable, or it has no device");
		nfb_attach_free(a);
		return err;
	}
	/* The sweep (a no-op when the work is pending: it re-arms itself). */
	nfb_rescan_at(nn, nfb_sweep_at(nn));
	return 0;
}

int nfb_detach(struct net *net, u32 family, const char *table,
	       const char *name, struct netlink_ext_ack *extack)
{
	struct nfb_net *nn = nfb_pernet(net);
	struct nfb_attach *a;

	ASSERT_RTNL();
	a = nfb_attach_find(nn, family, table, name);
	if (!a) {
		NL_SET_ERR_MSG(extack, "flowtable not attached");
		return -ENOENT;
	}
	nfb_attach_free(a);
	return 0;
}

void nfb_detach_all(struct nfb_net *nn)
{
	struct nfb_attach *a, *tmp;

	ASSERT_RTNL();
	list_for_each_entry_safe(a, tmp, &nn->attachments, list)
		nfb_attach_free(a);
}

/*
 * Whether @h runs right before the flowtable it was attached to. Caller
 * holds RTNL; the walk is the datapath's.
 */
bool nfb_hook_adjacent(const struct nfb_hook *h)
{
	const struct nf_hook_entries *e;
	bool adjacent = false;
	unsigned int i;

	ASSERT_RTNL();
	rcu_read_lock();
	e = rcu_dereference(h->dev->nf_hooks_ingress);
	for (i = 0; e && i + 1 < e->num_hook_entries; i++) {
		if (e->hooks[i].priv != h)
			continue;
		adjacent = e->hooks[i + 1].priv == h->ft_cookie &&
			   nfb_is_flowtable_hook(e->hooks[i + 1].hook);
		break;
	}
	rcu_read_unlock();
	return adjacent;
}

/*
 * enum nfb_attach_state of @a as its hooked devices show it now: a read,
 * which changes nothing and walks only the hook lists of the devices the
 * attachment hooks (as nfb_hook_adjacent() does), so that a flowtable
 * deleted or re-created shows before the module's next walk. Caller holds
 * RTNL.
 */
u8 nfb_attach_state(const struct nfb_attach *a)
{
	const struct nfb_hook *h;
	bool found = false, other = false;
	struct nfb_found f;

	ASSERT_RTNL();
	if (a->stale)
		return NFB_ATTACH_STALE;
	rcu_read_lock();
	list_for_each_entry(h, &a->hooks, list) {
		found = nfb_find_on(a, h->dev, &f, &other);
		if (found)
			break;
	}
	rcu_read_unlock();
	if (found)
		return NFB_ATTACH_ATTACHED;
	return other ? NFB_ATTACH_STALE : NFB_ATTACH_WAITING;
}

/*
 * Rescan the attachments of @nn: the devices the datapath marked dirty, one
 * by one; when a poll is due, every device for each attachment that is
 * not settled; every sweep_interval seconds, every device for every
 * attachment. Caller holds RTNL.
 */
void nfb_rescan_all(struct nfb_net *nn)
{
	bool again = false, progress = false, poll, sweep;
	unsigned long sweep_at;
	struct nfb_hook *h, *tmp;
	struct nfb_attach *a;

	ASSERT_RTNL();
	if (nn->exiting)
		return;
	poll = time_after_eq(jiffies, nn->poll_at);
	sweep = time_after_eq(jiffies, nfb_sweep_at(nn));
	if (sweep)
		nn->swept_at = jiffies;
	sweep_at = nfb_sweep_at(nn);
	list_for_each_entry(a, &nn->attachments, list) {
		bool was = list_empty(&a->hooks) || a->unsettled;

		if (a->stale)
			continue;

		if ((was && poll) || sweep) {
			nfb_sync(a, NULL);
		} else {
			list_for_each_entry_safe(h, tmp, &a->hooks, list)
				if (READ_ONCE(h->dirty))
					nfb_sync_dev(a, h);
		}
		if (list_empty(&a->hooks) || a->unsettled)
			again = true;
		else if (was)
			progress = true;
	}
	/*
	 * Nothing asks for a rescan of an attachment without hooks, nor
	 * finishes removing hooks on an idle device: poll for those, less
	 * and less often while nothing changes. A run the datapath asked for
	 * (mod_delayed_work() moves the poll's timer) leaves the poll where it
	 * was.
	 */
	if (progress || !nn->rescan_delay)
		nn->rescan_delay = NFB_RESCAN_MIN;
	if (!again) {
		nn->rescan_delay = NFB_RESCAN_MIN;
		if (!list_empty(&nn->attachments))
			nfb_rescan_at(nn, sweep_at);
		return;
	}
	if (poll) {
		nn->poll_at = jiffies + nn->rescan_delay;
		nn->rescan_delay = min(nn->rescan_delay * 2,
				       (unsigned long)NFB_RESCAN_MAX);
	}
	nfb_rescan_at(nn, time_before(nn->poll_at, sweep_at) ?
			  nn->poll_at : sweep_at);
}

void nfb_rescan_work(struct work_struct *work)
{
	struct nfb_net *nn = container_of(to_delayed_work(work),
					  struct nfb_net, rescan_work);

	rtnl_lock();
	nfb_rescan_all(nn);
	rtnl_unlock();
}

static int nfb_netdev_event(struct notifier_block *nb, unsigned long event,
			    void *ptr)
{
	struct net_device *dev = netdev_notifier_info_to_dev(ptr);
	struct nfb_attach *a;
	struct nfb_hook *h;
	struct nfb_net *nn;
	bool found = false;

	if (event != NETDEV_UNREGISTER)
		return NOTIFY_DONE;

	/*
	 * Under RTNL, like every change of nn->attachments. A namespace
	 * whose nfb_net_init() has not run yet (devices of a namespace being
	 * set up, or failing to) has nothing attached.
	 */
	nn = nfb_pernet(dev_net(dev));
	/* Pairs with the smp_store_release() at the end of nfb_net_init(). */
	if (!nn || !smp_load_acquire(&nn->ready))
		return NOTIFY_DONE;
	list_for_each_entry(a, &nn->attachments, list) {
		h = nfb_hook_by_dev(a, dev);
		if (h) {
			nfb_hook_del(h);
			found = true;
		}
	}
	if (found && !nn->exiting)
		schedule_delayed_work(&nn->rescan_work, HZ / 10);
	return NOTIFY_DONE;
}

static struct notifier_block nfb_netdev_notifier = {
	.notifier_call	= nfb_netdev_event,
};

int nfb_attach_init(void)
{
	int err;

	err = register_module_notifier(&nfb_module_notifier);
	if (err)
		return err;
	err = register_netdevice_notifier(&nfb_netdev_notifier);
	if (err)
		unregister_module_notifier(&nfb_module_notifier);
	return err;
}

/*
 * Module exit, before the pernet data goes: every namespace stops
 * attaching and rescanning and loses its hooks, then the notifier goes
 * (it has nothing left to remove). Only after that may
 * unregister_pernet_subsys() free the per-netns data the notifier reads.
 * A namespace that is not on the list (being created: nothing can be
 * attached in it yet; being dismantled: its own exit detaches) needs
 * nothing here.
 */
void nfb_attach_fini(void)
{
	struct net *net;

	rtnl_lock();
	down_read(&net_rwsem);
	for_each_net(net) {
		struct nfb_net *nn = nfb_pernet(net);

		if (!nn || !nn->ready)
			continue;
		WRITE_ONCE(nn->exiting, true);
		nfb_detach_all(nn);
	}
	up_read(&net_rwsem);
	rtnl_unlock();
	unregister_netdevice_notifier(&nfb_netdev_notifier);
	unregister_module_notifier(&nfb_module_notifier);
}
