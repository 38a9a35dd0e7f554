/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the parts of the live view share (live.c: what the engine thread
 * calls, live-view.c: the view's thread, live-tep.c: the traces' formats).
 * Not an interface: nothing outside record/ may use it (record/'s CPPFLAGS
 * define VT_RECORD_INTERNAL, no other folder's do).
 */
#ifndef RECORD_LIVE_INT_H
#define RECORD_LIVE_INT_H

#ifndef VT_RECORD_INTERNAL
#error "live-int.h is record/'s own: include record/live.h"
#endif

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include <trace-seq.h>

#include "collect.h"
#include "live.h"
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

static inline uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* live.c */
void live_free_cpus(struct vt_tsync_cpu *c, unsigned int nr);
void live_loaded(struct ltrace *t);
void live_load_failed(struct ltrace *t, int err);
void live_stat_guest(struct live *l, struct lmsg *m);

/* live-tep.c */
int live_load_tep(struct live *l, struct ltrace *t);
void live_drop_tep(struct ltrace *t);

/* live-view.c */
void *live_worker(void *arg);
void live_free_cut(struct lcut *c);

#endif
