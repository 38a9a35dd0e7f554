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
#include "sync.h"
#include "store/spool.h"
#include "vt_meta.h"
#include "vt_pages.h"
#include "vt_time.h"
#include "vt_tsync.h"

#define LIVE_QUEUE_MAX		(8u << 20)	/* bytes of pages waiting for the thread */
#define LIVE_HELD_MAX		(16u << 20)	/* bytes of cut pages held: past it, the oldest go early */
/*
 * The view's thread runs at this nice value: when events flood (the view
 * prints about 300,000 lines a second), the recording's own thread comes first
 * and the view falls behind and skips pages instead.
 */
#define LIVE_NICE		10
/* After the recording, the view has this long to show what it holds; the rest is counted. */
#define LIVE_END_MAX_NS		(5ull * 1000000000ull)
#define LIVE_TICK_MS		50
/* How long a guest setting itself up (clock sync, kallsyms) may hold the view back. */
#define LIVE_PENDING_MAX_NS	(30ull * 1000000000ull)
/*
 * Bytes of pages all guests together may have waiting for their clock
 * mapping or their metadata bundle: past it a guest's oldest are dropped
 * from the view (counted; the files have them). A guest that streams and
 * never answers the META_REQ after START would otherwise grow the
 * collector by its whole data rate.
 */
#define LIVE_PENDING_BYTES_MAX	(16u << 20)
/*
 * An event is printed from a zeroed copy this large: libtraceevent and its
 * plugins read a field where the trace's format says (checked to lie inside
 * the largest event, vt_meta_format_check()) and a __data_loc or __rel_loc
 * string or array where its 16-bit offset and length say, neither checked
 * against the record's size: every such read stays inside the copy, and a
 * string runs into its zeroes.
 */
#define LIVE_PAD_SIZE		(VT_SUBBUF_MAX + 2 * 65536u + 4096u)
#define LIVE_FILE_MAX		(COLLECT_NAME_MAX + 16)
/*
 * A kernel's symbols parsed by libtraceevent take 10-20 MB: only this many
 * guests' are read (the others' addresses print as numbers), the host's always.
 */
#define LIVE_KALLSYMS_MAX	8

enum lmsg_kind { LM_PAGE, LM_META, LM_CLOCK, LM_VCPUS };

/* What the engine thread hands over; LM_PAGE carries a copy of the page. */
struct lmsg {
	struct lmsg *next;
	enum lmsg_kind kind;
	unsigned int trace;
	unsigned int cpu;
	uint32_t size;
	uint32_t events;
	uint64_t host_end;		/* LM_CLOCK */
	unsigned int nr_cpus;		/* LM_CLOCK */
	struct vt_tsync_cpu *cpus;	/* LM_CLOCK: copies of the epochs */
	uint8_t data[];			/* LM_PAGE; LM_VCPUS: the thread ids */
};

/* One event of a cut page: where it is, and its time as trace-cmd shows it. */
struct lev {
	uint64_t ts;			/* host nanoseconds */
	uint32_t off;			/* in the page */
	uint32_t size;
};

/* A page cut into events, waiting in its CPU's queue until the last is printed. */
struct lcut {
	struct lcut *next;
	uint32_t nr, next_ev;		/* events, and the first not printed */
	int missed;			/* the page's lost events, shown before its first event */
	uint32_t bytes;			/* what it holds, for LIVE_HELD_MAX */
	struct lev *ev;
	struct lmsg *page;		/* the message that brought the page: kept, not copied */
};

/* A CPU's queue of cut pages, in arrival order (which is its events' order). */
struct lcpu {
	unsigned int trace;
	unsigned int cpu;
	struct lcut *head, **tail;
	bool in_heap;
};

struct ltrace {
	char file[LIVE_FILE_MAX];	/* "host.dat", "guest-NAME.dat" */
	int dir;			/* its spool directory (owned by the caller) */
	bool host;
	struct tep_handle *tep;
	struct tep_plugin_list *plugins;
	bool tep_failed;		/* said once */
	bool formats_said;		/* its refused formats, said once */
	bool prints_said;		/* its unbounded print formats, said once */
	bool pending_said;		/* its pending pages dropped, said once */
	pthread_t loader;		/* the host's: reads its bundle while the guests set up */
	bool loading;
	int load_ret;
	bool kallsyms;			/* its kallsyms are read (LIVE_KALLSYMS_MAX) */
	struct ksyms *ksyms;		/* @tep's function resolver, when it has one */
	struct kbuffer *kbuf;
	bool clocked;			/* the host always; a guest once its mapping came */
	bool meta_ready;		/* the host always; a guest once its bundle to keep is spooled */
	struct vt_tsync_tshift *ts;	/* per vCPU */
	unsigned int nr_ts;
	bool interp;
	struct lmsg *pending, **pending_tail;	/* pages waiting for the clock */
	uint64_t pending_since;		/* engine-independent CLOCK_MONOTONIC ns */
	struct lcpu **cpus;		/* the queues, by CPU (made on first need) */
	unsigned int nr_cpus;
	bool stat_added;		/* its vCPUs are in --live-stat's table */
};

struct live {
	FILE *out;
	uint64_t window;		/* in the unit events are compared in (ns, or ticks) */
	struct vt_tsc2nsec conv;
	bool have_conv;			/* TSC2NSEC: trace-cmd prints microseconds, else ticks */
	struct ltrace *traces;
	unsigned int nr_traces;
	int width;			/* of the file names, as trace-cmd pads them */
	pthread_t thread;
	bool running;
	/* shared with the engine thread, under @lock */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct lmsg *head, **tail;
	uint64_t queued;		/* bytes of pages in the queue */
	uint64_t not_shown;		/* events of pages the full queue refused */
	bool end;
	/* the thread's */
	struct lcpu **heap;		/* the CPUs with events, earliest head first */
	size_t nr, cap;
	uint64_t held;			/* bytes of cut and pending pages */
	uint64_t pending_bytes;		/* of pending pages, with their messages (LIVE_PENDING_BYTES_MAX) */
	uint64_t pending_dropped;	/* events of pending pages dropped past it */
	uint8_t *pad;			/* LIVE_PAD_SIZE zeroes, an event copied in to be printed */
	uint64_t last_ts;
	uint64_t shown, late, unreadable;
	_Atomic uint64_t end_deadline;	/* CLOCK_MONOTONIC ns: past it, the rest is only counted */
	uint64_t skipped;		/* events the end's deadline left out */
	unsigned int nr_kallsyms;	/* guests whose kallsyms are read */
	bool kallsyms_said;
	bool out_broken;
	struct trace_seq s;
	char *line;
	size_t line_cap;
	struct live_quiet *quiet;	/* host tasks left out: ours and the terminal's */
	uint64_t quiet_left;		/* their events */
	uint64_t per_sec, per_us;	/* timestamp units, for --live-stat */
	struct livestat *stat;		/* --live-stat's table, fed the host's events */
	const struct livestat_ops *stat_ops;
	bool stat_only;			/* the table instead of the event lines */
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

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
struct live *live_new(unsigned int window_ms, const struct sync_tsc *tsc, FILE *out)
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
static void stat_guest(struct live *l, struct lmsg *m)
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

static void *worker(void *arg);
static int load_tep(struct live *l, struct ltrace *t);

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
	p->t->load_ret = load_tep(p->l, p->t);
	free(p);
	return NULL;
}

/* A trace whose bundle cannot be read: its events are not shown, said once. */
static void load_failed(struct ltrace *t, int err)
{
	t->tep_failed = true;
	log_warn("live view: cannot read the event formats of %s (%s): its events are not "
		 "shown (they are in the file)", t->file, strerror(-err));
}

/* The host's bundle, read by its own thread since live_start(): wait for it. */
static void loaded(struct ltrace *t)
{
	if (!t->loading)
		return;
	pthread_join(t->loader, NULL);
	t->loading = false;
	if (t->load_ret < 0)
		load_failed(t, t->load_ret);
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
	ret = -pthread_create(&l->thread, NULL, worker, l);
	l->running = ret == 0;
	for (i = 0; !l->running && i < l->nr_traces; i++)
		loaded(&l->traces[i]);
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

static void free_cpus(struct vt_tsync_cpu *c, unsigned int nr)
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
		free_cpus(m->cpus, nr_cpus);
		free(m);
		return;
	}
	pthread_mutex_lock(&l->lock);
	post(l, m);
	pthread_mutex_unlock(&l->lock);
}

/* --- the view's thread --- */

/*
 * A trace's kallsyms, for libtraceevent to resolve kernel addresses with
 * (tep_set_function_resolver()). tep_parse_kallsyms() sscanf()s each line and
 * duplicates each name into a list: 5.4 MB of the host's took 0.2 s idle and
 * seconds on a busy machine, and the view's first line waited for it. Here
 * the text is cut in place, one pass, into the very table libtraceevent
 * makes of that list (func_map_init(): the functions in the reverse of their
 * order in the text, its struct's layout, qsort() by address with its
 * comparison) and searched as it searches it (bsearch() with its
 * comparison, a zero entry past the end): of several names at one address
 * (aliases) the same one is picked, so the lines stay trace-cmd report's.
 * A line it does not take as libtraceevent would (anything but
 * "HEX TYPE NAME[\t[MODULE]]") leaves the text to tep_parse_kallsyms().
 */
struct kfunc {			/* libtraceevent's struct func_map, field for field */
	unsigned long long addr;
	char *func;
	char *mod;
};

struct ksyms {
	char *text;		/* the kallsyms, cut into the names */
	struct kfunc *map;	/* @nr functions and a zero entry */
	size_t nr;
};

static void ksyms_free(struct ksyms *k)
{
	if (!k)
		return;
	free(k->map);
	free(k->text);
	free(k);
}

static int kfunc_cmp(const void *a, const void *b)
{
	const struct kfunc *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* libtraceevent's func_bcmp(): @b matches from its address up to the next entry's. */
static int kfunc_bcmp(const void *a, const void *b)
{
	const struct kfunc *x = a, *y = b;

	if (x->addr == y->addr || (x->addr > y->addr && x->addr < (y + 1)->addr))
		return 0;
	return x->addr < y->addr ? -1 : 1;
}

static bool hexval(char c, unsigned int *v)
{
	if (c >= '0' && c <= '9')
		*v = c - '0';
	else if (c >= 'a' && c <= 'f')
		*v = c - 'a' + 10;
	else if (c >= 'A' && c <= 'F')
		*v = c - 'A' + 10;
	else
		return false;
	return true;
}

static bool kspace(char c)
{
	return c == ' ' || c == '\t' || c == '\v' || c == '\f' || c == '\r';
}

/*
 * One line, NUL-terminated, cut in place: false for a line that is not
 * "HEX TYPE NAME[\t[MODULE]]" with at most 16 digits and single spaces.
 */
static bool ksyms_line(char *line, struct kfunc *f, bool *keep)
{
	unsigned long long addr = 0;
	unsigned int i, v;
	char *p = line, type, *name;

	for (i = 0; hexval(*p, &v); i++, p++)
		addr = addr << 4 | v;
	if (!i || i > 16 || p[0] != ' ' || !p[1] || kspace(p[1]) || p[2] != ' ')
		return false;
	type = p[1];
	name = p + 3;
	for (p = name; *p && !kspace(*p); p++)
		;
	if (p == name || (*p && *p != '\t'))
		return false;
	f->mod = NULL;
	if (*p == '\t') {
		*p++ = '\0';
		if (*p == '[' && p[1] && !kspace(p[1])) {
			char *m = ++p;

			while (*p && !kspace(*p))
				p++;
			if (*p)
				return false;
			p[-1] = '\0';	/* the ']' */
			f->mod = m;
		} else if (*p) {
			return false;
		}
	}
	f->addr = addr;
	f->func = name;
	*keep = name[0] != '$' && type != 'A' && type != 'a';
	return true;
}

/* The table of @text (NUL-terminated); NULL when it is not read here (see above). */
static struct ksyms *ksyms_read(const char *text, size_t len)
{
	struct ksyms *k = calloc(1, sizeof(*k));
	size_t cap = len / 24 + 16, i;
	char *line, *next;

	if (!k || !(k->text = malloc(len + 1)))
		goto err;
	memcpy(k->text, text, len);
	k->text[len] = '\0';
	k->map = malloc(cap * sizeof(*k->map));
	if (!k->map)
		goto err;
	for (line = k->text; *line; line = next) {
		struct kfunc f;
		bool keep;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		else
			next = line + strlen(line);
		if (!*line)
			continue;	/* strtok_r() skips empty lines */
		if (!ksyms_line(line, &f, &keep))
			goto err;
		if (!keep)
			continue;
		if (k->nr + 1 >= cap) {
			struct kfunc *map = realloc(k->map, cap * 2 * sizeof(*map));

			if (!map)
				goto err;
			k->map = map;
			cap *= 2;
		}
		k->map[k->nr++] = f;
	}
	/* libtraceevent's list: each function put in front of those before it. */
	for (i = 0; i < k->nr / 2; i++) {
		struct kfunc f = k->map[i];

		k->map[i] = k->map[k->nr - 1 - i];
		k->map[k->nr - 1 - i] = f;
	}
	qsort(k->map, k->nr, sizeof(*k->map), kfunc_cmp);
	k->map[k->nr] = (struct kfunc){ 0 };
	return k;
err:
	ksyms_free(k);
	return NULL;
}

static char *ksyms_resolve(void *priv, unsigned long long *addrp, char **modp)
{
	struct ksyms *k = priv;
	struct kfunc key = { .addr = *addrp }, *f;

	f = bsearch(&key, k->map, k->nr, sizeof(*k->map), kfunc_bcmp);
	if (!f)
		return NULL;
	*addrp = f->addr;
	*modp = f->mod;
	return f->func;
}

/* @tep resolves kernel addresses with @text: through a table of ours, else libtraceevent's. */
static struct ksyms *load_kallsyms(struct tep_handle *tep, const char *text, size_t len)
{
	struct ksyms *k = ksyms_read(text, len);

	if (k && tep_set_function_resolver(tep, ksyms_resolve, k) == 0)
		return k;
	ksyms_free(k);
	tep_parse_kallsyms(tep, text);
	return NULL;
}

static void drop_tep(struct ltrace *t)
{
	if (!t->tep)
		return;
	if (t->plugins)
		tep_unload_plugins(t->plugins, t->tep);
	tep_free(t->tep);
	ksyms_free(t->ksyms);
	t->tep = NULL;
	t->plugins = NULL;
	t->ksyms = NULL;
}

/* How deep a print format's arguments may nest before the walk gives up (unbounded then). */
#define LIVE_ARG_DEPTH		32
/* The largest constant index REC->field[N] may have: N longs stay inside LIVE_PAD_SIZE. */
#define LIVE_INDEX_MAX		4096

static bool args_bounded(const struct tep_print_arg *a, int depth);

/* A length or count that a 16-bit __data_loc word bounds: __get_dynamic_array_len(x) [/ N]. */
static bool dyn_len(const struct tep_print_arg *a)
{
	if (a && a->type == TEP_PRINT_OP && a->op.op && !strcmp(a->op.op, "/") && a->op.right &&
	    a->op.right->type == TEP_PRINT_ATOM && a->op.right->atom.atom &&
	    strtoul(a->op.right->atom.atom, NULL, 0) >= 1)
		a = a->op.left;
	return a && a->type == TEP_PRINT_DYNAMIC_ARRAY_LEN;
}

static bool small_atom(const struct tep_print_arg *a, unsigned long max)
{
	char *end;
	unsigned long v;

	if (!a || a->type != TEP_PRINT_ATOM || !a->atom.atom)
		return false;
	v = strtoul(a->atom.atom, &end, 0);
	return !*end && v <= max;
}

/*
 * Whether printing one argument reads only what a checked format's fields,
 * a 16-bit __data_loc word or a small constant bound: libtraceevent (1.7)
 * reads __print_hex(), __print_hex_str() and __print_array() for the length
 * they are given and REC->f[i] at any i, and those may come from the record.
 */
static bool arg_bounded(const struct tep_print_arg *a, int depth)
{
	if (!a)
		return true;
	if (depth > LIVE_ARG_DEPTH)
		return false;
	switch (a->type) {
	case TEP_PRINT_NULL:
	case TEP_PRINT_ATOM:
	case TEP_PRINT_FIELD:
	case TEP_PRINT_STRING:
	case TEP_PRINT_BSTRING:
	case TEP_PRINT_BITMASK:
	case TEP_PRINT_CPUMASK:
	case TEP_PRINT_DYNAMIC_ARRAY_LEN:
		return true;
	case TEP_PRINT_DYNAMIC_ARRAY:
		return !a->dynarray.index || arg_bounded(a->dynarray.index, depth + 1);
	case TEP_PRINT_TYPE:
		return arg_bounded(a->typecast.item, depth + 1);
	case TEP_PRINT_FLAGS:
		return arg_bounded(a->flags.field, depth + 1);
	case TEP_PRINT_SYMBOL:
		return arg_bounded(a->symbol.field, depth + 1);
	case TEP_PRINT_HEX:
	case TEP_PRINT_HEX_STR:
		return dyn_len(a->hex.size) && arg_bounded(a->hex.field, depth + 1);
	case TEP_PRINT_INT_ARRAY:
		return dyn_len(a->int_array.count) && small_atom(a->int_array.el_size, 8) &&
		       arg_bounded(a->int_array.field, depth + 1);
	case TEP_PRINT_OP:
		if (a->op.op && !strcmp(a->op.op, "[") && !small_atom(a->op.right, LIVE_INDEX_MAX))
			return false;
		return arg_bounded(a->op.left, depth + 1) && arg_bounded(a->op.right, depth + 1);
	case TEP_PRINT_FUNC:
		return args_bounded(a->func.args, depth + 1);
	}
	return false;	/* a kind this walk does not know */
}

static bool args_bounded(const struct tep_print_arg *a, int depth)
{
	for (; a; a = a->next)
		if (!arg_bounded(a, depth))
			return false;
	return true;
}

/* A guest event whose print format is not bounded: its fields, each read within the format. */
static int print_fields(struct trace_seq *s, struct tep_record *rec, struct tep_event *ev, void *ctx)
{
	(void)ctx;
	tep_record_print_fields(s, rec, ev);
	return 0;
}

/*
 * A guest's events whose print format could read past the record (its
 * arguments are not bounded) print their fields instead, name=value: said
 * once, with the first such event.
 */
static void bound_prints(struct ltrace *t, struct tep_handle *tep)
{
	struct tep_event **evs = tep_list_events(tep, TEP_EVENT_SORT_ID);
	unsigned int n = 0;
	const char *first = NULL, *first_sys = NULL;

	for (; evs && *evs; evs++) {
		struct tep_event *ev = *evs;

		if (args_bounded(ev->print_fmt.args, 0))
			continue;
		if (!n++) {
			first = ev->name;
			first_sys = ev->system;
		}
		tep_register_event_handler(tep, ev->id, ev->system, ev->name, print_fields, NULL);
	}
	if (n && !t->prints_said) {
		t->prints_said = true;
		log_warn("live view: %s: %u event print formats read lengths or indexes the record "
			 "gives (the first: %s:%s): those events show their fields instead", t->file,
			 n, first_sys ? first_sys : "?", first ? first : "?");
	}
}

static void parse_system(struct tep_handle *tep, const struct vt_meta_system *sys, const char *name)
{
	uint32_t i;

	for (i = 0; i < sys->nr_events; i++)
		tep_parse_event(tep, sys->events[i].format.data, sys->events[i].format.len, name);
}

/* The trace's formats, kallsyms, printk formats and task names, from its spool. */
static int load_tep(struct live *l, struct ltrace *t)
{
	struct vt_meta_clean clean;
	struct ksyms *ksyms = NULL;
	struct tep_handle *tep;
	struct vt_meta m;
	uint32_t i;
	size_t len;
	void *blob;
	int ret;

	if (t->dir < 0)
		return -ENOENT;
	ret = spool_load_meta(t->dir, &blob, &len);
	if (ret < 0)
		return ret;
	ret = vt_meta_decode(&m, blob, len);
	free(blob);
	if (ret < 0)
		return ret;
	/*
	 * As the files are written (store/finish.c): a format whose fields lie
	 * outside the largest event, or that holds control characters, is left
	 * out; its events print as unknown. finish.c says the error for the file.
	 */
	if (t->host)
		vt_meta_sanitize_own(&m, &clean);
	else
		vt_meta_sanitize(&m, &clean);
	if ((clean.formats_out_of_bounds || clean.formats_dropped) && !t->formats_said) {
		t->formats_said = true;
		log_warn("live view: %s: %u event formats refused (the first: %s): their events "
			 "show as unknown", t->file, clean.formats_out_of_bounds + clean.formats_dropped,
			 clean.formats_out_of_bounds ? clean.out_of_bounds : clean.first_dropped);
	}
	tep = tep_alloc();
	if (!tep) {
		vt_meta_free(&m);
		return -ENOMEM;
	}
	/* As trace-cmd sets a handle up for a file of a 64-bit little-endian kernel. */
	tep_set_file_bigendian(tep, TEP_LITTLE_ENDIAN);
	tep_set_local_bigendian(tep, TEP_LITTLE_ENDIAN);
	tep_set_long_size(tep, 8);
	tep_set_page_size(tep, m.subbuf_size);
	if (tep_parse_header_page(tep, m.header_page.data, m.header_page.len, 8) < 0) {
		tep_free(tep);
		vt_meta_free(&m);
		return -EBADMSG;
	}
	parse_system(tep, &m.ftrace, "ftrace");
	for (i = 0; i < m.nr_systems; i++)
		parse_system(tep, &m.systems[i], m.systems[i].name);
	if (m.kallsyms.len && !t->host && !t->kallsyms) {
		if (l->nr_kallsyms < LIVE_KALLSYMS_MAX) {
			t->kallsyms = true;
			l->nr_kallsyms++;
		} else if (!l->kallsyms_said) {
			l->kallsyms_said = true;
			log_info("live view: the kallsyms of %u guests are read, no more: the others' "
				 "kernel addresses show as numbers (the files have their names)",
				 LIVE_KALLSYMS_MAX);
		}
	}
	if (m.kallsyms.len && (t->host || t->kallsyms))
		ksyms = load_kallsyms(tep, m.kallsyms.data, m.kallsyms.len);
	if (m.printk_formats.len)
		tep_parse_printk_formats(tep, m.printk_formats.data);
	if (m.saved_cmdlines.len)
		tep_parse_saved_cmdlines(tep, m.saved_cmdlines.data);
	vt_meta_free(&m);
	drop_tep(t);
	t->tep = tep;
	t->ksyms = ksyms;
	t->plugins = tep_load_plugins(tep);
	/* After the plugins: an unbounded print format is not used, whoever registered it. */
	if (!t->host)
		bound_prints(t, tep);
	return 0;
}

static const struct lev *head_of(const struct lcpu *q)
{
	return &q->head->ev[q->head->next_ev];
}

/* trace-cmd's merge: the earliest first; equal times by file (-i order), then CPU. */
static bool q_before(const struct lcpu *a, const struct lcpu *b)
{
	uint64_t x = head_of(a)->ts, y = head_of(b)->ts;

	if (x != y)
		return x < y;
	if (a->trace != b->trace)
		return a->trace < b->trace;
	return a->cpu < b->cpu;
}

static void sift_down(struct live *l, size_t i)
{
	struct lcpu *q = l->heap[i];

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= l->nr)
			break;
		if (c + 1 < l->nr && q_before(l->heap[c + 1], l->heap[c]))
			c++;
		if (!q_before(l->heap[c], q))
			break;
		l->heap[i] = l->heap[c];
		i = c;
	}
	l->heap[i] = q;
}

static int heap_add(struct live *l, struct lcpu *q)
{
	size_t i;

	if (l->nr == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64;
		struct lcpu **h = realloc(l->heap, cap * sizeof(*h));

		if (!h)
			return -ENOMEM;
		l->heap = h;
		l->cap = cap;
	}
	for (i = l->nr++; i; ) {
		size_t p = (i - 1) / 2;

		if (!q_before(q, l->heap[p]))
			break;
		l->heap[i] = l->heap[p];
		i = p;
	}
	l->heap[i] = q;
	q->in_heap = true;
	return 0;
}

/* The queue of @cpu in @t, made on first need. */
static struct lcpu *queue_of(struct live *l, struct ltrace *t, unsigned int cpu)
{
	if (cpu >= COLLECT_MAX_CPUS)
		return NULL;
	if (cpu >= t->nr_cpus) {
		struct lcpu **c = realloc(t->cpus, (cpu + 1) * sizeof(*c));

		if (!c)
			return NULL;
		memset(c + t->nr_cpus, 0, (cpu + 1 - t->nr_cpus) * sizeof(*c));
		t->cpus = c;
		t->nr_cpus = cpu + 1;
	}
	if (!t->cpus[cpu] && (t->cpus[cpu] = calloc(1, sizeof(**t->cpus)))) {
		t->cpus[cpu]->trace = t - l->traces;
		t->cpus[cpu]->cpu = cpu;
		t->cpus[cpu]->tail = &t->cpus[cpu]->head;
	}
	return t->cpus[cpu];
}

/* An event's time as trace-cmd shows it: the guest's through its TIME_SHIFT, then TSC2NSEC. */
static uint64_t map_ts(const struct live *l, const struct ltrace *t, unsigned int cpu, uint64_t raw)
{
	uint64_t host = raw;

	if (!t->host && cpu < t->nr_ts && t->ts[cpu].nr &&
	    vt_tsync_tshift_apply(&t->ts[cpu], t->interp, raw, &host) < 0)
		host = raw;
	return l->have_conv ? vt_tsc2nsec_apply(&l->conv, host) : host;
}

/* A page into its CPU's queue, cut into events (the message's copy is kept). */
static void cut_page(struct live *l, struct ltrace *t, struct lmsg *m)
{
	struct lcpu *q = queue_of(l, t, m->cpu);
	unsigned long long ts;
	struct lcut *c;
	void *data;

	if (!t->kbuf)
		t->kbuf = kbuffer_alloc(KBUFFER_LSIZE_8, KBUFFER_ENDIAN_LITTLE);
	c = calloc(1, sizeof(*c));
	if (c)
		c->ev = malloc((m->events ? m->events : 1) * sizeof(*c->ev));
	if (!q || !c || !c->ev || !t->kbuf || kbuffer_load_subbuffer(t->kbuf, m->data) < 0) {
		l->unreadable += m->events;
		if (c)
			free(c->ev);
		free(c);
		free(m);
		return;
	}
	c->missed = kbuffer_missed_events(t->kbuf);
	for (data = kbuffer_read_event(t->kbuf, &ts); data; data = kbuffer_next_event(t->kbuf, &ts)) {
		int size = kbuffer_event_size(t->kbuf);

		/* The stream counted these events when it checked the page; no more fit. */
		if (c->nr >= m->events || size < 0 || (uint8_t *)data < m->data ||
		    (uint8_t *)data + size > m->data + m->size) {
			l->unreadable++;
			continue;
		}
		c->ev[c->nr].ts = map_ts(l, t, m->cpu, ts);
		c->ev[c->nr].off = (uint8_t *)data - m->data;
		c->ev[c->nr].size = size;
		c->nr++;
	}
	if (!c->nr) {
		free(c->ev);
		free(c);
		free(m);
		return;
	}
	c->page = m;
	c->bytes = sizeof(*m) + m->size + c->nr * sizeof(*c->ev);
	l->held += c->bytes;
	c->next = NULL;
	*q->tail = c;
	q->tail = &c->next;
	if (!q->in_heap && heap_add(l, q) < 0) {
		l->unreadable += c->nr;	/* left in the queue, freed at the end */
		return;
	}
}

/* The oldest page of @t that waits for its clock or bundle, out of the view (counted). */
static void drop_pending(struct live *l, struct ltrace *t)
{
	struct lmsg *m = t->pending;

	t->pending = m->next;
	if (!t->pending)
		t->pending_tail = &t->pending;
	l->held -= m->size;
	l->pending_bytes -= sizeof(*m) + m->size;
	l->pending_dropped += m->events;
	if (!t->pending_said) {
		t->pending_said = true;
		log_warn("live view: %s: its pages wait for its clock mapping or metadata bundle; past "
			 "%u MB waiting, its oldest are not shown (the file has them)", t->file,
			 LIVE_PENDING_BYTES_MAX >> 20);
	}
	free(m);
}

static void take_page(struct live *l, struct lmsg *m)
{
	struct ltrace *t = &l->traces[m->trace];

	if (!t->clocked || !t->meta_ready) {
		/*
		 * Its timestamps cannot be placed yet, or its kallsyms are on
		 * their way: held until both are there.
		 */
		if (!t->pending)
			t->pending_since = mono_ns();
		m->next = NULL;
		*t->pending_tail = m;
		t->pending_tail = &m->next;
		l->held += m->size;
		l->pending_bytes += sizeof(*m) + m->size;
		while (l->pending_bytes > LIVE_PENDING_BYTES_MAX && t->pending != m)
			drop_pending(l, t);
		return;
	}
	cut_page(l, t, m);
}

static void take_pending(struct live *l, struct ltrace *t)
{
	struct lmsg *m = t->pending, *next;

	t->pending = NULL;
	t->pending_tail = &t->pending;
	t->pending_since = 0;
	for (; m; m = next) {
		next = m->next;
		l->held -= m->size;
		l->pending_bytes -= sizeof(*m) + m->size;
		cut_page(l, t, m);
	}
}

static void take_clock(struct live *l, struct lmsg *m)
{
	struct ltrace *t = &l->traces[m->trace];
	struct vt_tsync_tshift *ts = calloc(m->nr_cpus ? m->nr_cpus : 1, sizeof(*ts));
	bool interp = vt_tsync_needs_interpolate(m->cpus, m->nr_cpus);
	unsigned int c;

	for (c = 0; ts && c < m->nr_cpus; c++)
		if (m->cpus[c].nr && vt_tsync_tshift_build(m->cpus[c].epochs,
							  vt_tsync_cpu_until(&m->cpus[c], m->host_end),
							  m->host_end, interp, &ts[c]) < 0)
			vt_tsync_tshift_free(&ts[c]);	/* unmapped, as in a file without it */
	free_cpus(m->cpus, m->nr_cpus);
	if (!ts)
		return;
	for (c = 0; c < t->nr_ts; c++)
		vt_tsync_tshift_free(&t->ts[c]);
	free(t->ts);
	t->ts = ts;
	t->nr_ts = m->nr_cpus;
	t->interp = interp;
	t->clocked = true;
	if (t->meta_ready)
		take_pending(l, t);
}

/* The host's task names the start's bundle lacks: /proc's, as the files' come from it at the end. */
static void host_comm(struct ltrace *t, struct tep_record *rec)
{
	char path[64], comm[64];
	int pid = tep_data_pid(t->tep, rec), fd;
	ssize_t n;

	if (pid <= 0 || tep_is_pid_registered(t->tep, pid))
		return;
	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	n = fd >= 0 ? read(fd, comm, sizeof(comm) - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (n <= 0) {
		snprintf(comm, sizeof(comm), "<...>");	/* asked once: what trace-cmd prints too */
	} else {
		comm[n] = '\0';
		comm[strcspn(comm, "\n")] = '\0';
		comm[VT_COMM_MAX] = '\0';	/* as the files' (vt_meta_scan_comms()) */
	}
	tep_register_comm(t->tep, comm, pid);
}

/* Text that goes to a terminal: printable ASCII and tabs, the rest '?'. */
static void put_safe(struct live *l, const char *p, size_t len)
{
	size_t i;

	if (l->line_cap < len + 2) {
		char *b = realloc(l->line, len + 64);

		if (!b)
			return;
		l->line = b;
		l->line_cap = len + 64;
	}
	for (i = 0; i < len; i++) {
		unsigned char c = p[i];

		l->line[i] = (c >= 0x20 && c < 0x7f) || c == '\t' ? c : '?';
	}
	l->line[i++] = '\n';
	if (!l->out_broken && fwrite(l->line, 1, i, l->out) != i)
		l->out_broken = true;
}

/*
 * A host event of the collector or of the view's terminal: one of theirs
 * runs it, or it switches to or wakes one. Our own markers (ftrace:print)
 * are kept: they say what the collector did, and cause nothing.
 */
static bool quiet_event(struct live *l, struct ltrace *t, struct tep_event *ev,
			struct tep_record *rec)
{
	static const char *const fields[] = { "next_pid", "pid" };
	unsigned long long v;
	unsigned int i;

	if (!ev || (!strcmp(ev->system, "ftrace") && !strcmp(ev->name, "print")))
		return false;
	if (live_quiet_has(l->quiet, tep_data_pid(t->tep, rec)))
		return true;
	for (i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		struct tep_format_field *f = tep_find_field(ev, fields[i]);

		if (f && f->size == 4 && tep_read_number_field(f, rec->data, &v) == 0 &&
		    live_quiet_has(l->quiet, (int)v))
			return true;
	}
	return false;
}

/* The head event of queue @q, printed in trace-cmd report's line. */
static void print_ev(struct live *l, struct lcpu *q)
{
	struct ltrace *t = &l->traces[q->trace];
	struct lcut *c = q->head;
	const struct lev *e = &c->ev[c->next_ev];
	int missed = c->next_ev ? 0 : c->missed;
	struct tep_record rec = {
		.ts = e->ts, .cpu = q->cpu, .data = l->pad, .size = e->size,
		.missed_events = missed,
	};
	struct trace_seq *s = &l->s;
	struct tep_event *ev;
	int len;

	if (!t->tep || !l->pad || e->size > VT_SUBBUF_MAX) {
		l->unreadable++;
		return;
	}
	memcpy(l->pad, c->page->data + e->off, e->size);
	if (e->ts < l->last_ts)
		l->late++;
	else
		l->last_ts = e->ts;
	if (t->host)
		host_comm(t, &rec);
	ev = tep_find_event_by_record(t->tep, &rec);
	if (t->host && l->stat)
		l->stat_ops->host(l->stat, t->tep, &rec, (int)q->cpu);
	if (l->stat_only) {
		memset(l->pad, 0, e->size);
		return;
	}
	if (t->host && l->quiet && !missed && quiet_event(l, t, ev, &rec)) {
		l->quiet_left++;
		memset(l->pad, 0, e->size);
		return;
	}
	trace_seq_reset(s);
	/* Exactly trace-cmd report's (3.1.6) line: file, task, CPU, time, event, its text. */
	if (missed) {
		fprintf(l->out, "%*s: ", l->width, t->file);
		if (missed > 0)
			fprintf(l->out, "CPU:%u [%d EVENTS DROPPED]\n", q->cpu, missed);
		else
			fprintf(l->out, "CPU:%u [EVENTS DROPPED]\n", q->cpu);
	} else {
		trace_seq_printf(s, "%*s: ", l->width, t->file);
	}
	tep_print_event(t->tep, s, &rec, "%16s-%-5d [%03d]", TEP_PRINT_COMM, TEP_PRINT_PID,
			TEP_PRINT_CPU);
	if (l->have_conv)
		tep_print_event(t->tep, s, &rec, " %6.1000d:", TEP_PRINT_TIME);
	else
		tep_print_event(t->tep, s, &rec, "%12d:", TEP_PRINT_TIME);
	len = ev ? strlen(ev->name) : 0;
	trace_seq_printf(s, " %s: %*s", ev ? ev->name : "", len < 20 ? 20 - len : 0, "");
	tep_print_event(t->tep, s, &rec, "%s", TEP_PRINT_INFO);
	trace_seq_terminate(s);
	len = s->len;
	if (len && s->buffer[len - 1] == '\n')
		len--;
	put_safe(l, s->buffer, len);
	l->shown++;
	memset(l->pad, 0, e->size);	/* zeroes again for the next */
}

static void free_cut(struct lcut *c)
{
	free(c->ev);
	free(c->page);
	free(c);
}

/* The end's deadline passed: what is held is counted, not shown. */
static void skip_rest(struct live *l)
{
	size_t i;

	for (i = 0; i < l->nr; i++) {
		struct lcpu *q = l->heap[i];

		while (q->head) {
			struct lcut *c = q->head;

			l->skipped += c->nr - c->next_ev;
			q->head = c->next;
			l->held -= c->bytes;
			free_cut(c);
		}
		q->tail = &q->head;
		q->in_heap = false;
	}
	l->nr = 0;
}

/* Print what is at or before @upto (and the oldest, past LIVE_HELD_MAX). */
static void release(struct live *l, uint64_t upto)
{
	bool any = false;

	while (l->nr && (head_of(l->heap[0])->ts <= upto || l->held > LIVE_HELD_MAX)) {
		struct lcpu *q = l->heap[0];

		if (!(l->shown & 1023) && atomic_load(&l->end_deadline) &&
		    mono_ns() > atomic_load(&l->end_deadline)) {
			skip_rest(l);
			break;
		}
		print_ev(l, q);
		any = true;
		if (++q->head->next_ev == q->head->nr) {
			struct lcut *c = q->head;

			q->head = c->next;
			if (!q->head)
				q->tail = &q->head;
			l->held -= c->bytes;
			free_cut(c);
		}
		if (q->head) {
			sift_down(l, 0);
			continue;
		}
		q->in_heap = false;
		if (--l->nr) {
			l->heap[0] = l->heap[l->nr];
			sift_down(l, 0);
		}
	}
	if (any && !l->out_broken && fflush(l->out) != 0)
		l->out_broken = true;
}

/*
 * Events up to this time can go, for a batch taken from the queue at host TSC
 * @grabbed: none while a guest's pages wait for their clock. The window is
 * counted from the moment the batch was taken, not from now: an event that
 * came after it (still in the queue) is no older than @grabbed less the
 * window, however long taking the batch took (a guest's or the host's
 * kallsyms take seconds to read at the view's nice level on a busy machine).
 */
static uint64_t frontier(struct live *l, uint64_t grabbed)
{
	uint64_t mono = mono_ns();
	unsigned int i;

	for (i = 0; i < l->nr_traces; i++)
		if (l->traces[i].pending && mono - l->traces[i].pending_since < LIVE_PENDING_MAX_NS)
			return 0;
	grabbed = l->have_conv ? vt_tsc2nsec_apply(&l->conv, grabbed) : grabbed;
	return grabbed > l->window ? grabbed - l->window : 0;
}

static void take(struct live *l, struct lmsg *m)
{
	struct ltrace *t = &l->traces[m->trace];

	loaded(t);
	switch (m->kind) {
	case LM_PAGE:
		if (!t->tep && !t->tep_failed) {
			int ret = load_tep(l, t);

			if (ret < 0)
				load_failed(t, ret);
		}
		take_page(l, m);
		return;
	case LM_META:
		if (load_tep(l, t) == 0)
			t->tep_failed = false;
		t->meta_ready = true;
		if (t->clocked)
			take_pending(l, t);
		break;
	case LM_CLOCK:
		take_clock(l, m);
		break;
	case LM_VCPUS:
		stat_guest(l, m);
		break;
	}
	free(m);
}

static void *worker(void *arg)
{
	struct live *l = arg;
	bool end = false;

	if (setpriority(PRIO_PROCESS, (id_t)gettid(), LIVE_NICE) < 0)
		log_debug("live view: cannot lower its thread's priority: %m");
	/* Untouched, its pages stay unallocated: about a page per event size is used. */
	l->pad = calloc(1, LIVE_PAD_SIZE);

	while (!end) {
		struct lmsg *batch, *m, *next;
		uint64_t bytes = 0, grabbed;

		pthread_mutex_lock(&l->lock);
		if (!l->head && !l->end) {
			struct timespec dl;

			vt_deadline_ms(&dl, LIVE_TICK_MS);
			pthread_cond_timedwait(&l->cond, &l->lock, &dl);
		}
		batch = l->head;
		grabbed = vt_tsc_read();	/* under the lock: what is posted later came later */
		l->head = NULL;
		l->tail = &l->head;
		for (m = batch; m; m = m->next)
			bytes += m->kind == LM_PAGE ? m->size : 0;
		l->queued -= bytes;
		end = l->end;
		pthread_mutex_unlock(&l->lock);
		if (l->quiet)
			live_quiet_note_threads(l->quiet);
		for (m = batch; m; m = next) {
			next = m->next;
			take(l, m);
		}
		if (!end)
			release(l, frontier(l, grabbed));
	}
	/* The end: what never got a clock is shown unmapped, as its file would be; then everything. */
	for (unsigned int i = 0; i < l->nr_traces; i++) {
		struct ltrace *t = &l->traces[i];

		loaded(t);
		if (t->clocked && t->meta_ready)
			continue;
		if (!t->meta_ready && load_tep(l, t) == 0)
			t->tep_failed = false;
		t->clocked = t->meta_ready = true;
		take_pending(l, t);
	}
	release(l, UINT64_MAX);
	return NULL;
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
			free_cpus(m->cpus, m->nr_cpus);
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
				free_cut(x);
			}
			free(t->cpus[c]);
		}
		free(t->cpus);
		if (t->kbuf)
			kbuffer_free(t->kbuf);
		drop_tep(t);
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
