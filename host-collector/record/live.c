// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * record --live: the events of the host and of every guest, printed as they
 * arrive, merged in time order, in the lines `trace-cmd report -i host.dat
 * -i guest-A.dat ...` prints for the files the same run writes.
 *
 * The engine thread hands every good page a stream spools to live_page(),
 * which copies it into a queue and returns: the recording never waits for
 * the terminal. Past LIVE_QUEUE_MAX bytes queued a page is not shown (its
 * events are counted, and said at the end); the files have it. The view's
 * thread runs at a lower priority than the recording's.
 *
 * A thread of its own empties the queue. It cuts each page into events with
 * libtraceevent's kbuffer, as trace-cmd reads pages; maps each event's
 * timestamp to host nanoseconds as trace-cmd report does for the files (a
 * guest's: TIME_SHIFT built from the clock epochs the collector knows so
 * far, then TSC2NSEC); queues each CPU's events in their order and merges the
 * CPUs as trace-cmd merges files and CPUs (the earliest head first; equal
 * times by the file's place on its command line, then by CPU), through a
 * heap of the CPUs' queues, not of the events; and prints every event older
 * than the reorder window with the trace's own formats (the metadata bundle
 * in the spool) and tep_print_event(), in trace-cmd report's line format,
 * text made safe for a terminal. A page is cut once: its copy and an index of
 * its events wait in its CPU's queue until the last is printed.
 *
 * A guest's formats are hostile: the view reads them as the files get them
 * (vt_meta_sanitize(): a format whose fields lie past the largest event, or
 * whose print format reads a length or index the record gives, is left out;
 * should libtraceevent parse one so all the same, its fields are printed
 * instead), and prints each event from a zeroed copy large enough for every
 * field offset such a format can name and every 16-bit __data_loc reference
 * (LIVE_PAD_SIZE). libtraceevent's plugins stay loaded, for the guests too:
 * they print sched_switch, sched_wakeup, hrtimer... as trace-cmd report
 * does, and they read fields by the format's offsets, inside that copy.
 * Pages waiting for a guest's clock or bundle are bounded
 * (LIVE_PENDING_BYTES_MAX): past it the oldest are not shown (counted).
 *
 * Where the lines can differ from `trace-cmd report` of the files
 * (virtio-trace-collect-record(1), LIVE VIEW): an event that reaches the host
 * more than the window after it happened is printed when it comes, out of
 * order (counted); a guest's pages wait for its first clock mapping and its
 * whole metadata bundle (holding the view back up to LIVE_PENDING_MAX_NS), and
 * a later sync may move its timestamps within the mapping's bound; task names are the latest bundle's (the host's completed
 * from /proc), where the files have those of the end; control characters
 * print as '?'.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <event-parse.h>
#include <kbuffer.h>
#include <trace-seq.h>

#include "collect.h"
#include "live.h"
#include "livequiet.h"
#include "livestat.h"
#include "live-int.h"
#include "hostclock.h"
#include "store/spool.h"
#include "vt_meta.h"
#include "vt_pages.h"
#include "vt_time.h"
#include "vt_tsync.h"

/**
 * live_flush_ms() - how often agents and the host recorder send partial pages
 * for a reorder window
 * @window_ms: the window
 *
 * Return: half the window, 10 to 100 ms: an event reaches the host within
 * about that long, well inside the window.
 */
unsigned int live_flush_ms(unsigned int window_ms)
{
	unsigned int ms = window_ms / 2;

	return ms < 10 ? 10 : ms > 100 ? 100 : ms;
}

/**
 * live_new() - make the live view (traces are added next, then it starts)
 * @window_ms: the reorder window
 * @tsc: the host TSC rate (its TSC2NSEC numbers are the files')
 * @out: where the lines go (stdout)
 *
 * Return: the view, or NULL with errno set.
 */
struct live *live_new(unsigned int window_ms, const struct host_tsc *tsc, FILE *out)
{
	struct live *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	l->out = out;
	l->have_conv = tsc->mult != 0;
	l->conv.mult = tsc->mult;
	l->conv.shift = tsc->shift;
	l->window = l->have_conv ? window_ms * 1000000ull :
		    window_ms * (tsc->khz ? tsc->khz : 1000000ull);
	l->width = 0;
	l->per_sec = l->have_conv ? 1000000000ull : (tsc->khz ? tsc->khz : 1000000ull) * 1000ull;
	l->per_us = l->per_sec / 1000000ull;
	l->tail = &l->head;
	pthread_mutex_init(&l->lock, NULL);
	pthread_cond_init(&l->cond, NULL);
	trace_seq_init(&l->s);
	return l;
}

/**
 * live_add_trace() - a trace whose events the view shows, in the order of
 * trace-cmd report's -i options (the host first, then the guests by name)
 * @l: the view, not started
 * @file: the file's name in the output directory
 * @host: the host's trace (its TSC is the timeline's; names from /proc)
 *
 * Return: the trace's index for live_page() and the others, or -errno.
 */
int live_add_trace(struct live *l, const char *file, bool host)
{
	struct ltrace *t, *n;

	if (l->running)
		return -EBUSY;
	n = realloc(l->traces, (l->nr_traces + 1) * sizeof(*n));
	if (!n)
		return -ENOMEM;
	l->traces = n;
	/* The array moved: an empty queue's tail points at its own head, in the new one. */
	for (unsigned int i = 0; i < l->nr_traces; i++)
		if (!n[i].pending)
			n[i].pending_tail = &n[i].pending;
	t = &l->traces[l->nr_traces];
	memset(t, 0, sizeof(*t));
	snprintf(t->file, sizeof(t->file), "%s", file);
	t->dir = -1;
	t->host = host;
	t->clocked = host;
	t->meta_ready = host;
	t->pending_tail = &t->pending;
	if ((int)strlen(t->file) > l->width)
		l->width = strlen(t->file);
	return l->nr_traces++;
}

/**
 * live_set_dir() - where a trace's metadata bundle is spooled
 * @l: the view, not started, or NULL
 * @trace: from live_add_trace()
 * @spool_dir: the trace's spool directory, open until live_end() (a trace
 *	without one shows no events)
 */
void live_set_dir(struct live *l, unsigned int trace, int spool_dir)
{
	if (l && !l->running && trace < l->nr_traces)
		l->traces[trace].dir = spool_dir;
}

/**
 * live_set_stat() - print --live-stat's table once a second of host time
 * @l: the view, not started
 * @ops: the table's functions (&livestat_ops)
 * @lines: the event lines too (the table's lines begin with '#', theirs never)
 *
 * Return: 0, or -EBUSY, -ENOMEM.
 */
int live_set_stat(struct live *l, const struct livestat_ops *ops, bool lines)
{
	if (l->running)
		return -EBUSY;
	l->stat_ops = ops;
	l->stat = ops->new(l->out, l->per_sec, l->per_us);
	l->stat_only = !lines;
	return l->stat ? 0 : -ENOMEM;
}

static void post(struct live *l, struct lmsg *m);

/**
 * live_set_vcpus() - a guest's vCPU threads, for --live-stat's rows
 * @l: the view, or NULL
 * @trace: the guest's, from live_add_trace()
 * @tids: its vCPU threads' ids, in vCPU order
 * @nr: how many
 *
 * Return: 0 (also without --live-stat), or -errno.
 */
int live_set_vcpus(struct live *l, unsigned int trace, const uint32_t *tids, unsigned int nr)
{
	struct lmsg *m;

	if (!l || !l->stat || !nr || trace >= l->nr_traces || l->traces[trace].host)
		return 0;
	m = malloc(sizeof(*m) + nr * sizeof(*tids));
	if (!m)
		return -ENOMEM;
	m->kind = LM_VCPUS;
	m->trace = trace;
	m->size = nr * sizeof(*tids);
	memcpy(m->data, tids, m->size);
	/* Through the queue: the view's thread is the only one that touches the table. */
	pthread_mutex_lock(&l->lock);
	post(l, m);
	pthread_mutex_unlock(&l->lock);
	return 0;
}

/* A guest's name, from its file's: "guest-NAME.dat". */
void live_stat_guest(struct live *l, struct lmsg *m)
{
	const char *f = l->traces[m->trace].file;
	char name[LIVE_FILE_MAX];
	size_t n;

	if (!strncmp(f, "guest-", 6))
		f += 6;
	n = strlen(f);
	if (n > 4 && !strcmp(f + n - 4, ".dat"))
		n -= 4;
	snprintf(name, sizeof(name), "%.*s", (int)n, f);
	if (l->traces[m->trace].stat_added)
		return;		/* a guest's threads are its QEMU's: the first list holds */
	l->traces[m->trace].stat_added = true;
	if (l->stat_ops->add_guest(l->stat, name, (const uint32_t *)m->data, m->size / sizeof(uint32_t)) < 0)
		log_warn("live view: %s: its vCPUs are not in the --live-stat table (past its bounds)",
			 l->traces[m->trace].file);
}

struct preload {
	struct live *l;
	struct ltrace *t;
};

static void *preload(void *arg)
{
	struct preload *p = arg;

	/*
	 * Not at the view's nice level: the view's first lines wait for it, and
	 * on a busy machine (two busy loops on two cores) it took seconds there.
	 * It runs once, for a bounded bundle, while the guests set up.
	 */
	p->t->load_ret = live_load_tep(p->l, p->t);
	free(p);
	return NULL;
}

/* A trace whose bundle cannot be read: its events are not shown, said once. */
void live_load_failed(struct ltrace *t, int err)
{
	t->tep_failed = true;
	log_warn("live view: cannot read the event formats of %s (%s): its events are not "
		 "shown (they are in the file)", t->file, strerror(-err));
}

/* The host's bundle, read by its own thread since live_start(): wait for it. */
void live_loaded(struct ltrace *t)
{
	if (!t->loading)
		return;
	pthread_join(t->loader, NULL);
	t->loading = false;
	if (t->load_ret < 0)
		live_load_failed(t, t->load_ret);
}

/**
 * live_start() - start the view's thread, and the reading of the host's
 * metadata bundle: its kallsyms (all of /proc/kallsyms, 5 MB here) take
 * libtraceevent 0.2 s here, seconds at the view's nice level on a busy
 * machine: time the guests' setup hides
 * @l: the view
 *
 * Return: 0 or -errno.
 */
int live_start(struct live *l)
{
	unsigned int i;
	int ret;

	for (i = 0; i < l->nr_traces; i++) {
		struct ltrace *t = &l->traces[i];
		struct preload *p;

		if (!t->host || t->dir < 0 || !(p = malloc(sizeof(*p))))
			continue;
		*p = (struct preload){ .l = l, .t = t };
		t->loading = pthread_create(&t->loader, NULL, preload, p) == 0;
		if (!t->loading)
			free(p);
	}
	for (i = 0; i < l->nr_traces && !l->quiet; i++) {
		char who[256];

		if (!l->traces[i].host)
			continue;
		l->quiet = live_quiet_new(fileno(l->out));
		if (!l->quiet)
			continue;
		live_quiet_describe(l->quiet, who, sizeof(who));
		log_info("live view: host events of this collector and of the terminal that shows the "
			 "view (%s) are left out, as each line it prints causes some (host.dat has "
			 "them; --host-pid or fewer --host-events narrow the host's events)", who);
	}
	ret = -pthread_create(&l->thread, NULL, live_worker, l);
	l->running = ret == 0;
	for (i = 0; !l->running && i < l->nr_traces; i++)
		live_loaded(&l->traces[i]);
	return ret;
}

static void post(struct live *l, struct lmsg *m)
{
	m->next = NULL;
	*l->tail = m;
	l->tail = &m->next;
	pthread_cond_signal(&l->cond);
}

/**
 * live_page() - a good page a stream spooled (the engine thread): copied, or
 * counted when the view is too far behind
 * @l: the view, or NULL
 * @trace: from live_add_trace()
 * @cpu: the CPU in its trace
 * @page: the page
 * @size: its size (the trace's sub-buffer)
 * @events: how many events it holds (for the count of what was not shown)
 */
void live_page(struct live *l, unsigned int trace, unsigned int cpu, const uint8_t *page,
	       uint32_t size, uint32_t events)
{
	struct lmsg *m;

	if (!l || !l->running || trace >= l->nr_traces)
		return;
	pthread_mutex_lock(&l->lock);
	if (l->queued + size > LIVE_QUEUE_MAX || !(m = malloc(sizeof(*m) + size))) {
		l->not_shown += events;
		pthread_mutex_unlock(&l->lock);
		return;
	}
	m->kind = LM_PAGE;
	m->trace = trace;
	m->cpu = cpu;
	m->size = size;
	m->events = events;
	memcpy(m->data, page, size);
	l->queued += size;
	post(l, m);
	pthread_mutex_unlock(&l->lock);
}

/**
 * live_meta() - a guest's spool holds the metadata bundle to show its events
 * with (the whole one, with kallsyms and the task names seen since the setup,
 * or the setup's when no other comes): the view reads it, and shows the
 * guest's events from then on (they wait for it, and for its clock mapping)
 * @l: the view, or NULL
 * @trace: the trace
 */
void live_meta(struct live *l, unsigned int trace)
{
	struct lmsg *m;

	if (!l || !l->running || trace >= l->nr_traces || !(m = calloc(1, sizeof(*m))))
		return;
	m->kind = LM_META;
	m->trace = trace;
	pthread_mutex_lock(&l->lock);
	post(l, m);
	pthread_mutex_unlock(&l->lock);
}

void live_free_cpus(struct vt_tsync_cpu *c, unsigned int nr)
{
	unsigned int i;

	for (i = 0; c && i < nr; i++)
		free(c[i].epochs);
	free(c);
}

/**
 * live_clock() - a guest's clock mapping as it is now (the engine thread,
 * whenever it changes): copied for the view's thread
 * @l: the view, or NULL
 * @trace: the guest's trace
 * @cpus: its epochs per vCPU (none: its timestamps are shown unmapped, as
 *	trace-cmd shows a file without TIME_SHIFT)
 * @nr_cpus: its vCPUs
 * @host_end: where the last epoch ends (as the files take it)
 */
void live_clock(struct live *l, unsigned int trace, const struct vt_tsync_cpu *cpus,
		unsigned int nr_cpus, uint64_t host_end)
{
	struct lmsg *m;
	unsigned int i;

	if (!l || !l->running || trace >= l->nr_traces || !(m = calloc(1, sizeof(*m))))
		return;
	m->kind = LM_CLOCK;
	m->trace = trace;
	m->host_end = host_end;
	m->nr_cpus = nr_cpus;
	m->cpus = calloc(nr_cpus ? nr_cpus : 1, sizeof(*m->cpus));
	for (i = 0; m->cpus && i < nr_cpus; i++) {
		if (!cpus[i].nr)
			continue;
		m->cpus[i].epochs = malloc(cpus[i].nr * sizeof(*cpus[i].epochs));
		if (!m->cpus[i].epochs)
			break;
		memcpy(m->cpus[i].epochs, cpus[i].epochs, cpus[i].nr * sizeof(*cpus[i].epochs));
		m->cpus[i].nr = m->cpus[i].cap = cpus[i].nr;
	}
	if (!m->cpus || i < nr_cpus) {
		live_free_cpus(m->cpus, nr_cpus);
		free(m);
		return;
	}
	pthread_mutex_lock(&l->lock);
	post(l, m);
	pthread_mutex_unlock(&l->lock);
}

/**
 * live_end() - show everything still held, stop the thread, say what the
 * view did not show, and free the view
 * @l: the view, or NULL
 *
 * Call it once no stream delivers any more, before the spool's directories
 * are closed.
 */
void live_end(struct live *l)
{
	unsigned int i;

	if (!l)
		return;
	if (l->running) {
		/* Counted from now, whatever the thread is doing. */
		atomic_store(&l->end_deadline, mono_ns() + LIVE_END_MAX_NS);
		pthread_mutex_lock(&l->lock);
		l->end = true;
		pthread_cond_signal(&l->cond);
		pthread_mutex_unlock(&l->lock);
		pthread_join(l->thread, NULL);
		log_info("live view: %" PRIu64 " events shown%s", l->shown,
			 l->out_broken ? " (then its output failed)" : "");
		if (l->stat && !l->stat_ops->vcpus(l->stat))
			log_warn("live view: --live-stat had no vCPU threads to show: they are known "
				 "for guests given by --qemu-pid, --domain or --qmp");
		if (l->quiet_left)
			log_info("live view: %" PRIu64 " host events of this collector and its terminal "
				 "left out", l->quiet_left);
		if (l->late)
			log_info("live view: %" PRIu64 " events reached the host later than the window "
				 "and were shown out of order", l->late);
		if (l->not_shown || l->unreadable || l->skipped || l->pending_dropped)
			log_warn("live view: %" PRIu64 " events not shown (%" PRIu64 " while it could "
				 "not keep up, %" PRIu64 " while a guest's clock mapping or metadata "
				 "was awaited past %u MB, %" PRIu64 " left at the end after %llu s, %"
				 PRIu64 " unreadable); the files have them",
				 l->not_shown + l->pending_dropped + l->skipped + l->unreadable,
				 l->not_shown, l->pending_dropped, LIVE_PENDING_BYTES_MAX >> 20,
				 l->skipped, LIVE_END_MAX_NS / 1000000000ull, l->unreadable);
	}
	for (struct lmsg *m = l->head, *next; m; m = next) {
		next = m->next;
		if (m->kind == LM_CLOCK)
			live_free_cpus(m->cpus, m->nr_cpus);
		free(m);
	}
	for (i = 0; i < l->nr_traces; i++) {
		struct ltrace *t = &l->traces[i];

		for (struct lmsg *m = t->pending, *next; m; m = next) {
			next = m->next;
			free(m);
		}
		for (unsigned int c = 0; c < t->nr_ts; c++)
			vt_tsync_tshift_free(&t->ts[c]);
		free(t->ts);
		for (unsigned int c = 0; c < t->nr_cpus; c++) {
			for (struct lcut *x = t->cpus[c] ? t->cpus[c]->head : NULL, *next; x; x = next) {
				next = x->next;
				live_free_cut(x);
			}
			free(t->cpus[c]);
		}
		free(t->cpus);
		if (t->kbuf)
			kbuffer_free(t->kbuf);
		live_drop_tep(t);
	}
	live_quiet_free(l->quiet);
	if (l->stat)
		l->stat_ops->free(l->stat);
	free(l->heap);
	free(l->traces);
	free(l->line);
	free(l->pad);
	trace_seq_destroy(&l->s);
	pthread_cond_destroy(&l->cond);
	pthread_mutex_destroy(&l->lock);
	free(l);
}
