// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A guest's metadata bundle (session.c's part): asked for, checked, its
 * kallsyms kept in and taken from the cache (kcache.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "attach.h"
#include "collect.h"
#include "engine.h"
#include "hostrec.h"
#include "kcache.h"
#include "lastboot-file.h"
#include "live.h"
#include "qmp.h"
#include "recording.h"
#include "session.h"
#include "session-int.h"
#include "stream.h"
#include "sync.h"
#include "text.h"
#include "store/spool.h"
#include "vt_conn.h"

/*
 * The task names of the spooled bundle (@old) that the new one (@m) lacks
 * are added to it, the new bundle's name winning for a pid both name: the
 * kernel keeps saved_cmdlines_size names (128 on 6.1) in a ring, and a guest
 * whose boot filled it lets the names of tasks that ran early in the
 * recording go while it records, which trace-cmd then shows as "<...>". The
 * bytes it adds count against --max-size; without room, the new bundle's
 * names alone are kept. Return: the names added.
 */
static unsigned int keep_names(struct guest *g, struct vt_meta *m, const struct vt_meta *old)
{
	struct vt_meta names = { 0 };
	unsigned int before = 0, after = 0;
	size_t i;

	if (!old->saved_cmdlines.len ||
	    vt_meta_merge_cmdlines(&names, m->saved_cmdlines.data, m->saved_cmdlines.len) < 0)
		return 0;
	for (i = 0; i < names.saved_cmdlines.len; i++)
		before += names.saved_cmdlines.data[i] == '\n';
	if (vt_meta_merge_cmdlines(&names, old->saved_cmdlines.data, old->saved_cmdlines.len) == 0)
		for (i = 0; i < names.saved_cmdlines.len; i++)
			after += names.saved_cmdlines.data[i] == '\n';
	if (after > before && (names.saved_cmdlines.len <= m->saved_cmdlines.len ||
	    stream_budget_take(&g->figures.budget, names.saved_cmdlines.len - m->saved_cmdlines.len,
			       &g->figures.budget.meta))) {
		struct vt_blob t = m->saved_cmdlines;

		m->saved_cmdlines = names.saved_cmdlines;
		names.saved_cmdlines = t;
	} else {
		after = before;
	}
	vt_meta_free(&names);
	return after - before;
}

/*
 * A bundle fetched again (@m: while recording, or the final one) replaces
 * the spooled one, keeping the task names only the spooled one has
 * (keep_names()); and, when @keep_ks (the final bundle came without
 * kallsyms, asked for with KALLSYMS_IF_CHANGED: no module came or went),
 * the spooled one's kallsyms.
 */
static int refresh_meta(struct guest *g, struct vt_meta *m, bool keep_ks)
{
	struct vt_meta old;
	unsigned int kept;
	void *data;
	size_t len;
	int ret;

	/* Our own file: unreadable only if something outside broke it; keep what came then. */
	ret = collect_read_file(g->spool_fd, "meta.bin", &data, &len, VT_META_MAX_TOTAL);
	if (ret < 0)
		return spool_save_meta(g->spool_fd, g->meta.rx.data, g->meta.rx.len);
	ret = vt_meta_decode(&old, data, len);
	free(data);
	if (ret < 0)
		return spool_save_meta(g->spool_fd, g->meta.rx.data, g->meta.rx.len);
	kept = keep_names(g, m, &old);
	if (kept)
		log_info("guest %s: %u task names its kernel no longer holds are kept from the "
			 "earlier metadata", g->name, kept);
	if (keep_ks) {
		free(m->kallsyms.data);	/* an empty record's */
		m->kallsyms = old.kallsyms;
		old.kallsyms = (struct vt_blob){ 0 };
	}
	vt_meta_free(&old);
	if (!kept && !keep_ks)
		return spool_save_meta(g->spool_fd, g->meta.rx.data, g->meta.rx.len);
	return spool_encode_meta(g->spool_fd, m);
}

/*
 * Its VM's entry in the kallsyms cache (kcache.c), named by what the host
 * knows of the VM and looked up once. Return: whether the guest has one
 * (an agent that reports no key has none).
 */
static bool cache_lookup(struct guest *g)
{
	int r;

	if (g->rec->kcache_fd < 0 || !(g->agent.caps & VT_PROTO_CAP_KALLSYMS_KEY))
		return false;
	if (g->kcache.tried)
		return g->kcache.saved.vm[0];
	g->kcache.tried = true;
	if (kcache_vm_id(&g->link, g->qemu.uuid, g->kcache.saved.vm, sizeof(g->kcache.saved.vm)) < 0) {
		snprintf(g->kcache.saved.why, sizeof(g->kcache.saved.why), "nothing the host knows tells its VM "
			 "apart (--domain, --qemu-pid, or --qmp with QEMU's -uuid): not cached");
		log_debug("guest %s: kallsyms cache: %s", g->name, g->kcache.saved.why);
		return false;
	}
	r = kcache_key(g->rec->kcache_fd, g->kcache.saved.vm, &g->kcache.key);
	if (r < 0)
		g->kcache.key = 0;
	if (r < 0 && r != -ENOENT)
		log_warn("guest %s: its VM's entry %s in the kallsyms cache is not used: %s", g->name,
			 g->kcache.saved.vm, strerror(-r));
	log_debug("guest %s: kallsyms cache entry %s (%s)", g->name, g->kcache.saved.vm,
		  g->kcache.key ? "filled" : "empty");
	return true;
}

/* A guest's kallsyms kept for its VM's next recording in this boot (kcache.c). */
static void cache_kallsyms(struct guest *g, const struct vt_meta *m)
{
	int ret;

	if (!m->kallsyms_key || !cache_lookup(g) || m->kallsyms_key == g->kcache.key)
		return;
	ret = kcache_store(g->rec->kcache_fd, g->kcache.saved.vm, m->kallsyms_key, &m->kallsyms);
	if (ret < 0) {
		log_warn("guest %s: cannot keep its kallsyms in the cache: %s", g->name, strerror(-ret));
		return;
	}
	g->kcache.key = m->kallsyms_key;
	log_debug("guest %s: kallsyms (%zu bytes) kept in the cache as %s", g->name,
		  m->kallsyms.len, g->kcache.saved.vm);
}

/*
 * The setup's bundle left kallsyms out. Its VM's cache entry has them when
 * the key the guest reported in that bundle is the entry's: compared here,
 * never sent to the guest. Then they join the spooled bundle, counted
 * against --max-size as the guest's would be. Return: true when they did.
 */
bool sess_kallsyms_from_cache(struct guest *g)
{
	struct vt_blob ks = { 0 };
	struct vt_meta m;
	size_t len;
	void *data;
	int ret;

	if (!cache_lookup(g) || !g->kcache.guest_key || g->kcache.guest_key != g->kcache.key)
		return false;
	ret = kcache_load(g->rec->kcache_fd, g->kcache.saved.vm, g->kcache.guest_key, &ks);
	if (ret < 0) {
		log_warn("guest %s: the cached kallsyms cannot be used (%s): asking the guest",
			 g->name, strerror(-ret));
		g->kcache.key = 0;
		return false;
	}
	if (!stream_budget_take(&g->figures.budget, ks.len, &g->figures.budget.meta)) {
		free(ks.data);
		return false;
	}
	ret = collect_read_file(g->spool_fd, "meta.bin", &data, &len, VT_META_MAX_TOTAL);
	if (ret == 0) {
		ret = vt_meta_decode(&m, data, len);
		free(data);
	}
	if (ret < 0) {
		free(ks.data);
		return false;
	}
	free(m.kallsyms.data);
	m.kallsyms = ks;
	ret = spool_encode_meta(g->spool_fd, &m);
	vt_meta_free(&m);
	if (ret < 0)
		return false;
	g->meta.full = g->kcache.saved.hit = true;
	g->kcache.held_key = g->kcache.guest_key;
	log_info("guest %s: kallsyms (%zu bytes) from the cache, not read in the guest", g->name,
		 ks.len);
	return true;
}

static void meta_received(struct guest *g, int err)
{
	void (*done)(struct guest *g, int err) = g->meta.done;
	/*
	 * A fetch while recording or at the end only refreshes what the setup
	 * spooled (a session taken over, --incoming, has spooled none yet).
	 */
	bool refresh = (g->state == G_RUNNING || g->state == G_FINISHING) && g->meta.len;
	const char *which = g->state == G_RUNNING ? "full" : "final";
	struct vt_meta m;
	int ret;

	if (err < 0 && refresh) {
		log_warn("guest %s: the agent cannot send its %s metadata: %s (%s); the metadata "
			 "of the setup is kept", g->name, which,
			 g->reply_text[0] ? g->reply_text : "refused", strerror(-err));
		done(g, 0);
		return;
	}
	if (err < 0) {
		session_fail(g, "the agent cannot send its metadata: %s (%s)",
			     g->reply_text[0] ? g->reply_text : "refused", strerror(-err));
		return;
	}
	ret = vt_meta_decode(&m, g->meta.rx.data, g->meta.rx.len);
	if (ret < 0) {
		session_fail(g, "the metadata bundle is malformed (%s)", strerror(-ret));
		return;
	}
	/*
	 * HELLO gives the top level's sub-buffer size; the metadata gives the
	 * size of the buffer actually recorded (an instance's own, or what
	 * --subbuf-size made it), which is what the data ports will carry.
	 * Once the streams are open it must not change.
	 */
	if (!g->nr_streams && m.subbuf_size != g->agent.subbuf && m.subbuf_size >= VT_SUBBUF_MIN &&
	    m.subbuf_size <= VT_SUBBUF_MAX && !(m.subbuf_size & (m.subbuf_size - 1))) {
		log_info("guest %s: the recorded buffer has %u-byte sub-buffers", g->name, m.subbuf_size);
		g->agent.subbuf = m.subbuf_size;
	}
	if (m.subbuf_size != g->agent.subbuf || m.nr_cpus != g->agent.nr_cpus) {
		session_fail(g, "the metadata says %u CPUs and %u-byte pages, the recording has %u and %u",
			     m.nr_cpus, m.subbuf_size, g->agent.nr_cpus, g->agent.subbuf);
		vt_meta_free(&m);
		return;
	}
	if (g->agent.caps & VT_PROTO_CAP_KALLSYMS_KEY)
		g->kcache.guest_key = m.kallsyms_key;
	/*
	 * The final bundle without kallsyms, after kallsyms came from the
	 * cache: the agent never read them this session, so only the key it
	 * reports says whether a module came or went. If one did, ask again.
	 */
	if (g->kcache.final_key_check && !m.kallsyms.len &&
	    (!m.kallsyms_key || m.kallsyms_key != g->kcache.held_key)) {
		log_info("guest %s: its kallsyms changed while it recorded: asking for them again",
			 g->name);
		g->kcache.final_key_check = false;
		vt_meta_free(&m);
		vt_proto_meta_rx_release(&g->meta.rx);
		sess_fetch_meta(g, 0, done);
		return;
	}
	/* Metadata counts against --max-size like pages (sess_fetch_meta() asked for no more than fits). */
	if (!stream_budget_take(&g->figures.budget, g->meta.rx.len, &g->figures.budget.meta)) {
		vt_meta_free(&m);
		vt_proto_meta_rx_release(&g->meta.rx);
		if (!refresh) {
			session_fail(g, "its metadata is over --max-size (%llu bytes)",
				     (unsigned long long)g->figures.budget.max);
			return;
		}
		log_warn("guest %s: the %s metadata is over --max-size: the metadata of the setup "
			 "is kept", g->name, which);
		done(g, 0);
		return;
	}
	if (((g->meta.req_flags & VT_PROTO_META_REQ_KALLSYMS_IF_CHANGED) || g->kcache.final_key_check) &&
	    !m.kallsyms.len) {
		ret = refresh_meta(g, &m, true);
	} else {
		ret = refresh ? refresh_meta(g, &m, false) :
			spool_save_meta(g->spool_fd, g->meta.rx.data, g->meta.rx.len);
		if (ret == 0)
			g->meta.full = !(g->meta.req_flags & VT_PROTO_META_REQ_NO_KALLSYMS);
		if (ret == 0 && m.kallsyms.len) {
			g->kcache.held_key = m.kallsyms_key;
			cache_kallsyms(g, &m);
		}
	}
	vt_meta_free(&m);
	g->meta.len = g->meta.rx.len;
	vt_proto_meta_rx_release(&g->meta.rx);
	if (ret < 0) {
		session_fail(g, "cannot spool the metadata: %s", strerror(-ret));
		return;
	}
	done(g, 0);
}

/* An answer to META_REQ: what the bundles cost, for the manifest (from asking to the last chunk). */
static void meta_answered(struct guest *g, int err)
{
	if (err >= 0) {
		g->figures.meta_fetches++;
		g->figures.meta_us += (engine_now_ns() - g->meta.asked_ns) / 1000;
	}
	meta_received(g, err);
}

/*
 * Ask for the metadata bundle (@flags: VT_PROTO_META_REQ_*, for an agent
 * that takes them); @done runs once it is checked and spooled.
 */
void sess_fetch_meta(struct guest *g, uint32_t flags, void (*done)(struct guest *g, int err))
{
	uint64_t limit = META_LIMIT;

	/* Never more than the budget has room for: nor in memory, nor in the spool. */
	if (g->figures.budget.max) {
		uint64_t left = g->figures.budget.reached ? 0 : g->figures.budget.max - g->figures.budget.used;

		limit = left < limit ? left : limit;
	}
	if ((g->state == G_RUNNING || g->state == G_FINISHING) && !flags && limit < g->meta.len) {
		/* Metadata only grows: a refreshed bundle cannot fit. */
		log_warn("guest %s: --max-size leaves no room for the %s metadata: the metadata "
			 "of the setup is kept", g->name, g->state == G_RUNNING ? "full" : "final");
		done(g, 0);
		return;
	}
	if (!limit) {
		session_fail(g, "--max-size leaves no room for its metadata");
		return;
	}
	vt_proto_meta_rx_release(&g->meta.rx);
	vt_proto_meta_rx_init(&g->meta.rx, limit);
	g->meta.done = done;
	g->meta.req_flags = flags;
	g->meta.asked_ns = engine_now_ns();
	/* An agent that can send kallsyms as it reads it never holds it whole. */
	if ((g->agent.caps & (VT_PROTO_CAP_META_FLAGS | VT_PROTO_CAP_META_OPEN)) ==
	    (VT_PROTO_CAP_META_FLAGS | VT_PROTO_CAP_META_OPEN))
		flags |= VT_PROTO_META_REQ_OPEN;
	/*
	 * Never KALLSYMS_UNLESS_KEY: a key the cache holds is never sent to a
	 * guest (sess_kallsyms_from_cache() compares keys on the host).
	 */
	sess_request(g, vt_proto_enc_meta_req_flags(vt_conn_frame(g->ctl.conn), VT_PROTO_FRAME_MAX,
					       vt_conn_next_seq(g->ctl.conn), limit, flags),
		VT_PROTO_META, meta_answered);
}

