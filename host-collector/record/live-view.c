// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The live view's thread (see live.c's top comment): pages cut into events,
 * each CPU's queue merged through a heap as trace-cmd merges, every event
 * older than the window printed in trace-cmd report's line.
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
#include "vt_grow.h"
#include "vt_meta.h"
#include "vt_pages.h"
#include "vt_time.h"
#include "vt_tsync.h"

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

	if (vt_grow((void **)&l->heap, &l->cap, l->nr + 1, sizeof(*l->heap)) < 0)
		return -ENOMEM;
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
	live_free_cpus(m->cpus, m->nr_cpus);
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

void live_free_cut(struct lcut *c)
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
			live_free_cut(c);
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
			live_free_cut(c);
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

	live_loaded(t);
	switch (m->kind) {
	case LM_PAGE:
		if (!t->tep && !t->tep_failed) {
			int ret = live_load_tep(l, t);

			if (ret < 0)
				live_load_failed(t, ret);
		}
		take_page(l, m);
		return;
	case LM_META:
		if (live_load_tep(l, t) == 0)
			t->tep_failed = false;
		t->meta_ready = true;
		if (t->clocked)
			take_pending(l, t);
		break;
	case LM_CLOCK:
		take_clock(l, m);
		break;
	case LM_VCPUS:
		live_stat_guest(l, m);
		break;
	}
	free(m);
}

void *live_worker(void *arg)
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

		live_loaded(t);
		if (t->clocked && t->meta_ready)
			continue;
		if (!t->meta_ready && live_load_tep(l, t) == 0)
			t->tep_failed = false;
		t->clocked = t->meta_ready = true;
		take_pending(l, t);
	}
	release(l, UINT64_MAX);
	return NULL;
}
