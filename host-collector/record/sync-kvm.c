// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The kvm clock method (see sync.c's top comment): each vCPU's offset from
 * KVM's debugfs, each change at its moment from kvm:kvm_write_tsc_offset
 * (tscwatch.c), or bounded between two debugfs reads without it.
 */
#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "collect.h"
#include "guest.h"
#include "hostclock.h"
#include "recording.h"
#include "stream.h"
#include "sync.h"
#include "sync-int.h"
#include "tscwatch.h"
#include "store/spool.h"
#include "vt_tsync.h"

/* A change saved to the spool at most this often (the file is rewritten whole). */
#define KVM_SAVE_NS		(1000 * 1000000ull)

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t abs_diff(int64_t a, int64_t b)
{
	return a > b ? (uint64_t)a - (uint64_t)b : (uint64_t)b - (uint64_t)a;
}

static void kvm_note(struct guest *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The first problem is kept for the manifest and said; later ones are only counted. */
static void kvm_note(struct guest *g, const char *fmt, ...)
{
	va_list ap;

	if (g->sync.kvm.note[0])
		return;
	va_start(ap, fmt);
	vsnprintf(g->sync.kvm.note, sizeof(g->sync.kvm.note), fmt, ap);
	va_end(ap);
	guest_log(g, GMSG_SYNC, L_WARN, "guest %s: %s", g->name, g->sync.kvm.note);
}

/*
 * The stretch before @e's start held another offset for a while that was
 * not seen: the epoch before it covers those events with a bound.
 */
static void unseen_change(struct vt_tsync_epoch *before, int64_t offset)
{
	uint64_t d = abs_diff(before->map.offset, offset);

	if (d > before->error)
		before->error = d;
	before->flags |= VT_TSYNC_EPOCH_UNSEEN;
}

static void drop_epoch(struct vt_tsync_cpu *c, uint32_t i)
{
	memmove(&c->epochs[i], &c->epochs[i + 1], (c->nr - i - 1) * sizeof(c->epochs[0]));
	c->nr--;
}

/* The vCPU a kvm_write_tsc_offset is for, NULL when it is not one of the guest's. */
static struct vt_tsync_cpu *kvm_cpu(struct guest *g, const struct tscwatch_change *ch)
{
	if (ch->vcpu >= g->agent.nr_cpus || ch->vcpu >= COLLECT_MAX_CPUS || !ch->tsc)
		return NULL;
	return &g->sync.cpus[ch->vcpu];
}

/* The epoch in force just before @tsc, NULL when none starts before it. */
static struct vt_tsync_epoch *epoch_before(struct vt_tsync_cpu *c, uint64_t tsc)
{
	if (!c->nr || c->epochs[0].host_from >= tsc)
		return NULL;
	return &c->epochs[sync_epoch_index(c, tsc - 1)];
}

/*
 * One kvm_write_tsc_offset: from its moment on, @ch->next. Writes arrive in
 * order per read but may come a read late (another CPU's buffer), so the
 * epoch is put in its place, and a debugfs read after it that says the
 * same is dropped (the event has the exact moment).
 */
void sync_kvm_apply(struct guest *g, const struct tscwatch_change *ch)
{
	uint64_t lost = g->sync.watch ? tscwatch_lost(g->sync.watch) : 0;
	struct vt_tsync_cpu *c = kvm_cpu(g, ch);
	struct vt_tsync_epoch ep, *b;
	int idx;

	if (!c)
		return;
	g->sync.kvm.changes++;
	g->sync.kvm_dirty = true;
	ep = (struct vt_tsync_epoch){
		.host_from = ch->tsc, .source = VT_TSYNC_SRC_KVM_EVENT,
		.map = { .offset = ch->next, .ratio = g->sync.kvm_scale[ch->vcpu].ratio,
			 .frac_bits = g->sync.kvm_scale[ch->vcpu].frac_bits },
	};
	if (!ep.map.ratio)
		ep.map.ratio = 1;
	/*
	 * Full: the chain of offsets cannot be followed (the epoch in force
	 * keeps its offset), so every later write would look like a change
	 * not seen. Each is merged into the bound instead, and counted so.
	 */
	if (c->nr >= VT_TSYNC_MAX_EPOCHS)
		goto full;
again:
	b = epoch_before(c, ch->tsc);
	if (!b) {
		/* Nothing known before it: what it replaced held since the watch began. */
		struct vt_tsync_epoch first = ep;
		uint64_t from = g->sync.watch ? tscwatch_from(g->sync.watch) : 0;

		first.host_from = from && from < ch->tsc ? from : ch->tsc - 1;
		first.map.offset = ch->prev;
		if (vt_tsync_cpu_insert(c, &first) == -ENOSPC)
			goto full;
	} else if (b->map.offset != ch->prev) {
		if (b->source == VT_TSYNC_SRC_KVM && ch->tsc <= b->first_reply &&
		    b->map.offset == ch->next) {
			/* The read raced this write and saw its result: before it, prev held. */
			b->map.offset = ch->prev;
		} else if (b->source == VT_TSYNC_SRC_KVM && !lost) {
			/*
			 * A debugfs read the writes do not chain through, and
			 * the instance lost none: the read was stamped on a
			 * CPU whose TSC is not the writers' (in a nested L1 a
			 * read gave the value of a write stamped 1-1.5 ms
			 * after it). The writes have the moments: the read
			 * goes, and what this write replaced held before it
			 * (from the epoch before the read, or from the watch's
			 * start). debugfs is compared with the writes again at
			 * the stop (kvm_final_check()).
			 */
			log_debug("guest %s vCPU %u: a debugfs read the writes do not chain through "
				  "is left out", g->name, ch->vcpu);
			drop_epoch(c, (uint32_t)(b - c->epochs));
			goto again;
		} else {
			g->sync.kvm.breaks++;
			unseen_change(b, ch->prev);
			kvm_note(g, "vCPU %u: an offset change was not seen before host TSC %" PRIu64
				 " (%" PRIu64 " events lost by the instance): the epoch before it is "
				 "bounded by the change", ch->vcpu, ch->tsc,
				 g->sync.watch ? tscwatch_lost(g->sync.watch) : 0);
		}
	}
	idx = vt_tsync_cpu_insert(c, &ep);
	if (idx == -ENOSPC)
		goto full;
	if (idx < 0)
		return;
	if ((uint32_t)idx + 1 < c->nr && c->epochs[idx + 1].source == VT_TSYNC_SRC_KVM &&
	    vt_tsc_map_equal(&c->epochs[idx + 1].map, &c->epochs[idx].map))
		drop_epoch(c, idx + 1);
	return;
full:
	/* Past VT_TSYNC_MAX_EPOCHS: the epoch in force takes the change as a bound. */
	g->sync.kvm.merged++;
	unseen_change(&c->epochs[sync_epoch_index(c, ch->tsc)], ch->next);
	kvm_note(g, "vCPU %u: more than %u offset changes: later ones are merged into the last "
		 "epoch's bound", ch->vcpu, VT_TSYNC_MAX_EPOCHS);
}

/*
 * Two writes for one vCPU made on two host CPUs whose TSCs are not in step
 * can be stamped out of order (the nested L1 of the tests marks its TSCs
 * unsynchronized, and KVM writes an offset at every vCPU load there; one run
 * saw a 570 ns change "not seen" so). Each write names the offset it
 * replaced, and that chain puts them back: a write whose previous offset is
 * not the one in force, followed within KVM_REORDER_NS by a write for the
 * same vCPU whose previous offset is, trades places with it. The stamps stay
 * in order where they were, so the offset that held between the two holds
 * for that stretch instead. Counted (manifest: reordered).
 */
#define KVM_REORDER_NS		1000000ull

static void kvm_apply_all(struct guest *g, struct tscwatch_change *ch, size_t n)
{
	uint64_t khz = g->rec ? g->rec->tsc.khz : 0, window = khz * (KVM_REORDER_NS / 1000000);
	size_t k, j;

	for (k = 0; k < n; k++) {
		struct vt_tsync_cpu *c = kvm_cpu(g, &ch[k]);
		const struct vt_tsync_epoch *b;

		if (!c)
			continue;
		b = epoch_before(c, ch[k].tsc);
		/* In force already as its result: a debugfs read raced it (sync_kvm_apply()). */
		if (!b || b->map.offset == ch[k].prev || b->map.offset == ch[k].next)
			goto apply;
		for (j = k + 1; j < n && ch[j].tsc - ch[k].tsc <= window; j++) {
			struct tscwatch_change t;

			if (ch[j].vcpu != ch[k].vcpu || ch[j].prev != b->map.offset)
				continue;
			t = ch[k];
			ch[k].prev = ch[j].prev;
			ch[k].next = ch[j].next;
			ch[j].prev = t.prev;
			ch[j].next = t.next;
			g->sync.kvm.reordered++;
			log_debug("guest %s vCPU %u: two kvm_write_tsc_offset events %" PRIu64
				  " ticks apart were stamped out of order: put back by their offsets",
				  g->name, ch[k].vcpu, ch[j].tsc - ch[k].tsc);
			break;
		}
apply:
		sync_kvm_apply(g, &ch[k]);
	}
}

/*
 * Read every vCPU's offset. @t0 and @t1 bracket the read. The ratios are
 * kept for the events, which carry none.
 */
static int kvm_read(struct guest *g, struct vt_kvm_vcpu *v, uint32_t *nr, uint64_t *t0,
		    uint64_t *t1)
{
	uint32_t i;
	int ret;

	*t0 = vt_tsc_read();
	ret = vt_kvm_read_vm(g->sync.kvm_dir, v, COLLECT_MAX_CPUS, nr);
	*t1 = vt_tsc_read();
	if (ret < 0)
		return ret;
	for (i = 0; i < *nr; i++)
		if (v[i].id < COLLECT_MAX_CPUS)
			g->sync.kvm_scale[v[i].id] = v[i].map;
	return 0;
}

/*
 * A debugfs read: the first gives each vCPU its first epoch, which holds
 * from the read on (and for earlier events too, as trace-cmd applies the
 * first epoch before it). With the events, that is all reads are for (and
 * the check at the end); without, a value that differs from the last read's
 * opens an epoch at this read, and the one before it gets the change as its
 * bound: the change happened at some moment between the two reads.
 */
static int kvm_reread(struct guest *g, bool first)
{
	struct vt_kvm_vcpu *v = calloc(COLLECT_MAX_CPUS, sizeof(*v));
	uint64_t t0, t1;
	uint32_t nr = 0, i;
	int ret;

	if (!v)
		return -ENOMEM;
	ret = kvm_read(g, v, &nr, &t0, &t1);
	for (i = 0; ret == 0 && i < nr; i++) {
		struct vt_tsync_epoch ep = {
			.host_from = t0, .map = v[i].map, .source = VT_TSYNC_SRC_KVM, .first_reply = t1,
		};
		struct vt_tsync_cpu *c;

		if (v[i].id >= g->agent.nr_cpus || v[i].id >= COLLECT_MAX_CPUS)
			continue;
		c = &g->sync.cpus[v[i].id];
		if (c->nr && (first || g->sync.watch))
			continue;
		if (c->nr && vt_tsc_map_equal(&c->epochs[c->nr - 1].map, &ep.map))
			continue;
		if (c->nr) {
			ep.since = g->sync.kvm_last_read;
			unseen_change(&c->epochs[c->nr - 1], ep.map.offset);
			g->sync.kvm.changes++;
		}
		ret = vt_tsync_cpu_update(c, &ep);
		if (ret == -ENOSPC) {
			g->sync.kvm.merged++;
			unseen_change(&c->epochs[c->nr - 1], ep.map.offset);
			ret = 0;
		}
		if (ret == 1 && c->nr > 1)
			log_debug("guest %s vCPU %u: KVM changed the TSC offset between two reads: "
				  "new epoch", g->name, v[i].id);
		ret = ret < 0 ? ret : 0;
	}
	if (ret == 0)
		g->sync.kvm_last_read = t0;
	free(v);
	return ret == 0 && !nr ? -ENOENT : ret;
}

/*
 * With the events: debugfs at the end must say what the events say at the
 * moment of the read (either end of it, in case a write fell inside). On a
 * host whose TSC KVM distrusts it writes an offset every few ms, and a write
 * just before the read can look later than it: its event is stamped by the
 * writing CPU's TSC, the read by this CPU's (the nested L1 of the tests
 * marks its TSCs unsynchronized; one run saw debugfs one write ahead of the
 * events, the write's event the very next epoch). So a disagreement is read
 * again, FINAL_CHECK_TRIES times FINAL_CHECK_WAIT_US apart, before it is
 * called a change not seen.
 */
#define FINAL_CHECK_TRIES	4
#define FINAL_CHECK_WAIT_US	20000

/* One comparison: the vCPUs that disagree, the first's note in @what. */
static unsigned int kvm_compare(struct guest *g, char *what, size_t len)
{
	struct vt_kvm_vcpu *v = calloc(COLLECT_MAX_CPUS, sizeof(*v));
	struct tscwatch_change *ch = NULL;
	unsigned int bad = 0;
	uint64_t t0, t1;
	uint32_t nr = 0, i;
	size_t n = 0;

	if (!v)
		return 0;
	if (kvm_read(g, v, &nr, &t0, &t1) < 0)
		goto out;
	if (tscwatch_read(g->sync.watch, &ch, &n) == 0)
		kvm_apply_all(g, ch, n);
	for (i = 0; i < nr; i++) {
		const struct vt_tsync_cpu *c;
		const struct vt_tsync_epoch *a, *b;

		if (v[i].id >= g->agent.nr_cpus || v[i].id >= COLLECT_MAX_CPUS)
			continue;
		c = &g->sync.cpus[v[i].id];
		a = vt_tsync_cpu_at(c, t0);
		b = vt_tsync_cpu_at(c, t1);
		if (!a || vt_tsc_map_equal(&a->map, &v[i].map) || vt_tsc_map_equal(&b->map, &v[i].map))
			continue;
		if (bad++)
			continue;
		if (a->map.offset == v[i].map.offset || b->map.offset == v[i].map.offset)
			snprintf(what, len, "vCPU %u: KVM's debugfs gives scaling ratio %" PRIu64 " >> %u "
				 "at the end, %" PRIu64 " >> %u at the start: the ratio changed (the events "
				 "carry none)", v[i].id, v[i].map.ratio, v[i].map.frac_bits, a->map.ratio,
				 a->map.frac_bits);
		else
			snprintf(what, len, "vCPU %u: KVM's debugfs says offset %" PRId64 " at the end, "
				 "the kvm_write_tsc_offset events %" PRId64 ": a change was not seen", v[i].id,
				 v[i].map.offset, a->map.offset);
	}
out:
	free(ch);
	free(v);
	return bad;
}

static void kvm_final_check(struct guest *g)
{
	char what[320] = "";
	unsigned int bad = 0, tries;

	for (tries = 0; tries < FINAL_CHECK_TRIES; tries++) {
		if (tries)
			usleep(FINAL_CHECK_WAIT_US);
		bad = kvm_compare(g, what, sizeof(what));
		if (!bad)
			return;
	}
	g->sync.kvm.mismatch += bad;
	kvm_note(g, "%s", what);
}


/* Take what the instance recorded; check the replies it now covers. */
void sync_kvm_poll(struct guest *g)
{
	struct tscwatch_change *ch = NULL;
	uint64_t t = vt_tsc_read(), settle = g->rec && g->rec->tsc.khz ?
		g->rec->tsc.khz * (CHECK_SETTLE_NS / 1000000) : 0;
	size_t n = 0;
	int ret;

	if (!g->sync.watch)
		return;
	ret = tscwatch_read(g->sync.watch, &ch, &n);
	if (ret < 0) {
		kvm_note(g, "reading kvm_write_tsc_offset failed (%s): later changes are not seen",
			 strerror(-ret));
		return;
	}
	kvm_apply_all(g, ch, n);
	free(ch);
	g->sync.kvm.lost = tscwatch_lost(g->sync.watch);
	sync_check_eval(g, t > settle ? t - settle : 0);
}

/*
 * What the host says of its TSC: the flags of a constant rate that runs in
 * every C-state, and whether the kernel keeps time with it (it does not
 * when it found the TSCs of its CPUs out of step, or unstable: KVM then
 * writes each vCPU's offset at every load, and host events stamped on
 * different CPUs may disagree).
 */
static void host_tsc(struct spool_kvm *k)
{
	char line[4096], *nl;
	FILE *f;

	f = fopen("/proc/cpuinfo", "re");
	while (f && fgets(line, sizeof(line), f)) {
		if (strncmp(line, "flags", 5))
			continue;
		snprintf(k->host_flags, sizeof(k->host_flags), "%s%s",
			 strstr(line, " constant_tsc") ? "constant_tsc " : "",
			 strstr(line, " nonstop_tsc") ? "nonstop_tsc" : "");
		if (!k->host_flags[0])
			snprintf(k->host_flags, sizeof(k->host_flags), "none");
		break;
	}
	if (f)
		fclose(f);
	f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "re");
	if (f && fgets(k->clocksource, sizeof(k->clocksource), f)) {
		nl = strchr(k->clocksource, '\n');
		if (nl)
			*nl = '\0';
	}
	if (f)
		fclose(f);
}

/**
 * sync_kvm_begin() - before the guest's START (with --incoming, as soon as
 * the session begins, before the guest arrives): find its VM and follow its
 * offsets from now on
 * @g: the guest
 * @o: options (--sync, --debugfs, --no-kvm-events)
 *
 * With the kvm method possible (auto or kvm, a QEMU pid whose VM debugfs
 * shows), kvm_write_tsc_offset is recorded from here (or why not is kept)
 * and debugfs read once: every vCPU has its epoch before the guest records.
 * Otherwise nothing: sync_prepare() says what the method is.
 *
 * Return: 0.
 */
int sync_kvm_begin(struct guest *g, const struct record_opts *o)
{
	const char *method = o->sync ? o->sync : "auto";
	const char *debugfs = o->debugfs ? o->debugfs : "/sys/kernel/debug";
	static unsigned int nr_watches;
	char why[160] = "", tag[16];
	struct spool_kvm *k = &g->sync.kvm;

	if ((strcmp(method, "kvm") && strcmp(method, "auto")) || !g->link.qemu_pid || g->sync.kvm_dir[0])
		return 0;
	if (vt_kvm_find_vm(debugfs, g->link.qemu_pid, g->sync.kvm_dir, sizeof(g->sync.kvm_dir)) < 0) {
		g->sync.kvm_dir[0] = '\0';
		return 0;
	}
	if (o->no_kvm_events) {
		snprintf(why, sizeof(why), "--no-kvm-events");
	} else {
		snprintf(tag, sizeof(tag), "%u", nr_watches++);
		g->sync.watch = tscwatch_start(g->link.qemu_pid, tag, why, sizeof(why));
	}
	if (g->sync.watch) {
		/*
		 * Read from now on, not only once the setup is over: under
		 * mmiotrace the guest's bundle came 7 s after START, and the
		 * instance, unread meanwhile, lost 1017-1808 writes.
		 */
		if (g->rec && g->rec->e)
			engine_timer_arm(g->rec->e, &g->sync.kvm_timer, KVM_POLL_NS, KVM_POLL_NS);
		snprintf(k->changes_from, sizeof(k->changes_from), "events");
		snprintf(k->instance, sizeof(k->instance), "%s", tscwatch_name(g->sync.watch));
		snprintf(k->why, sizeof(k->why), "each change at its moment from "
			 "kvm:kvm_write_tsc_offset (tracefs instance %.64s)", k->instance);
	} else {
		snprintf(k->changes_from, sizeof(k->changes_from), "reread");
		snprintf(k->why, sizeof(k->why), "debugfs re-read every %llu s (%.120s): a change is only "
			 "known to lie between two reads", KVM_REREAD_NS / 1000000000ull, why);
		log_info("guest %s: KVM TSC offset changes by re-reading debugfs: %s", g->name, why);
	}
	host_tsc(k);
	if (strcmp(k->clocksource, "tsc"))
		log_info("guest %s: the host keeps time with %s, not its TSC: KVM moves the guest's TSC "
			 "offsets at every vCPU load (each change is followed), and host events of "
			 "different CPUs may disagree", g->name, k->clocksource[0] ? k->clocksource : "?");
	if (kvm_reread(g, true) < 0)
		g->sync.kvm_dir[0] = '\0';
	return 0;
}

/*
 * --incoming, at the takeover's first sync: the watch began before the guest
 * arrived (session_begin()), so that KVM's writes between QEMU's RESUME and
 * the takeover are epochs too (a nested host writes an offset at every vCPU
 * load: read at the takeover, the offset of that moment mapped the events
 * before it up to 17 ms apart from the host's, test-kvm-migrate). What the
 * vCPUs held before the guest's state came is no offset of the guest's, so
 * each vCPU's epochs begin with the one in force at the RESUME (QEMU's stamp;
 * without QMP, the takeover), which trace-cmd also applies to the events
 * from before it. A vCPU no write gave an epoch gets a debugfs read.
 */
static int kvm_arrive(struct guest *g)
{
	uint64_t cut = g->mig.seen.resume_tsc ? g->mig.seen.resume_tsc :
		       g->mig.seen.taken_tsc ? g->mig.seen.taken_tsc : vt_tsc_read();
	unsigned int cpu;

	g->sync.kvm_arrived = true;
	sync_kvm_poll(g);
	for (cpu = 0; cpu < g->agent.nr_cpus && cpu < COLLECT_MAX_CPUS; cpu++) {
		struct vt_tsync_cpu *c = &g->sync.cpus[cpu];
		uint32_t i = c->nr ? sync_epoch_index(c, cut) : 0;

		if (!i)
			continue;
		log_debug("guest %s vCPU %u: %u offsets from before the guest arrived left out",
			  g->name, cpu, i);
		memmove(c->epochs, &c->epochs[i], (c->nr - i) * sizeof(c->epochs[0]));
		c->nr -= i;
	}
	return kvm_reread(g, true);
}

/* KVM debugfs: exact per-vCPU offsets (and scaling) for a QEMU we know the pid of. */
int sync_kvm(struct guest *g, const struct record_opts *o, const char *when)
{
	int ret;

	if (!g->sync.kvm_dir[0]) {
		sync_kvm_begin(g, o);
		if (!g->sync.kvm_dir[0])
			return g->link.qemu_pid ? -ENOENT : -ESRCH;
	}
	if (g->mig.incoming && !g->sync.kvm_arrived) {
		ret = kvm_arrive(g);
		if (ret < 0)
			return ret;
	} else if (!g->sync.watch) {
		ret = kvm_reread(g, false);
		if (ret < 0)
			return ret;
	} else if (!strcmp(when, "stop")) {
		kvm_final_check(g);
		sync_kvm_poll(g);
	} else {
		sync_kvm_poll(g);
	}
	if (g->sync.watch)
		sync_set_method(g, "kvm", "KVM debugfs %s (exact); changes from kvm_write_tsc_offset",
			   g->sync.kvm_dir);
	else
		sync_set_method(g, "kvm", "KVM debugfs %s; changes by re-reads (bounded)", g->sync.kvm_dir);
	g->sync.kvm_dirty = false;
	g->sync.kvm_saved_ns = mono_ns();
	return 0;
}

/**
 * sync_kvm_period_ns() - how often sync_kvm_tick() is due
 * @g: the guest (method kvm)
 *
 * Return: nanoseconds.
 */
uint64_t sync_kvm_period_ns(const struct guest *g)
{
	return g->sync.watch ? KVM_POLL_NS : KVM_REREAD_NS;
}

/**
 * sync_kvm_tick() - follow the offsets while recording
 * @g: the guest (method kvm)
 *
 * The events read (or debugfs re-read), the replies of --sync-check they
 * now cover checked; the spool's sync file rewritten at most once a second.
 * While the reads find the watch's buffers filling (tscwatch_busy()), the
 * next one is due in KVM_BUSY_NS rather than a whole period.
 */
void sync_kvm_tick(struct guest *g)
{
	uint64_t now;

	if (!g->sync.kvm_dir[0])
		return;
	if (g->sync.watch) {
		sync_kvm_poll(g);
		/*
		 * Pages came out fast: read again before the timer would (a
		 * nested host under mmiotrace overran 256 KiB in 200 ms).
		 */
		if (g->sync.watch && tscwatch_busy(g->sync.watch) && g->rec && g->rec->e)
			engine_timer_arm(g->rec->e, &g->sync.kvm_timer, KVM_BUSY_NS, KVM_POLL_NS);
	} else {
		uint64_t t = g->sync.kvm_last_read;

		if (kvm_reread(g, false) == 0)
			g->sync.kvm_dirty = true;
		sync_check_eval(g, t);
	}
	now = mono_ns();
	if (g->sync.kvm_dirty && now - g->sync.kvm_saved_ns >= KVM_SAVE_NS) {
		g->sync.kvm_dirty = false;
		g->sync.kvm_saved_ns = now;
		sync_save(g);
	}
}

/**
 * sync_kvm_end() - the guest's clock is no longer followed
 * @g: the guest (done, failed, or reset by QEMU)
 *
 * What the instance holds is taken first (a reset's offset writes are there
 * by the time QEMU says RESET), every reply still waiting is checked, and
 * the instance removed; the sync file is written when there is a spool.
 */
void sync_kvm_end(struct guest *g)
{
	if (!g->sync.watch && !g->sync.nr_pend)
		return;
	sync_kvm_poll(g);
	sync_check_eval(g, UINT64_MAX);
	if (g->sync.watch) {
		struct tscwatch_stats st;

		/* A loss is said with what the reads saw: where the next fix must look. */
		tscwatch_get_stats(g->sync.watch, &st);
		collect_log(tscwatch_lost(g->sync.watch) ? L_WARN : L_INFO,
			    "guest %s: the offset watch: %" PRIu64 " reads (%" PRIu64 " found a buffer a "
			    "quarter full), at most %u pages from one CPU in a read, at most %" PRIu64
			    " ms between reads, buffers of up to %u KiB per CPU, %" PRIu64 " writes lost",
			    g->name, st.reads, st.busy, st.max_pages, st.max_gap_ns / 1000000, st.max_kb,
			    tscwatch_lost(g->sync.watch));
	}
	tscwatch_free(g->sync.watch);
	g->sync.watch = NULL;
	if (g->spool[0])
		sync_save(g);
}

/**
 * sync_reset() - QEMU reset the guest (QMP RESET): the trace's clock
 * mapping ends with the boot it recorded
 * @g: the guest
 * @at: QEMU's stamp of the RESET, as a host TSC
 *
 * QEMU pauses the vCPUs, says RESET, then writes each vCPU's TSC (0: KVM
 * restarts the guest's TSC from 0, or keeps it going when it takes the
 * write for a vCPU's initialisation). The old boot's events all come before
 * the stamp: the mapping ends there, and the epochs opened later (the reset
 * guest's, whose TSC may start below the trace's: trace-cmd, which picks the
 * mapping by guest time, would map the whole trace with them) stay listed,
 * not applied. The events are taken first, so that the list has them.
 */
void sync_reset(struct guest *g, uint64_t at)
{
	uint64_t now = vt_tsc_read();

	if (g->sync.head.reset_tsc || !at)
		return;
	sync_kvm_poll(g);
	g->sync.head.host_end = at < now ? at : now;
	g->sync.head.reset_tsc = g->sync.head.host_end;
	log_debug("guest %s: reset: the clock mapping ends at host TSC %" PRIu64, g->name,
		  g->sync.head.host_end);
}

/**
 * sync_reset_settled() - after a reset, QEMU's TSC writes are in: list them
 * @g: the guest
 *
 * QEMU writes each vCPU's TSC a few ms after its RESET; read at the RESET
 * alone, they were listed in one run and missing in the next.
 */
void sync_reset_settled(struct guest *g)
{
	sync_kvm_poll(g);
}
