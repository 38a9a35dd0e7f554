// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * report --exits: VM exits from the host's kvm:kvm_exit and kvm:kvm_entry, in
 * kvm_stat's shape (events per exit reason, their share) plus the time from
 * each exit to the next entry of the same vCPU thread. Exits are counted per
 * guest and per vCPU through the host file's GUEST option (vCPU -> host
 * thread), and per guest function: guest_rip resolved with that guest's
 * kallsyms (from its trace.dat, modules included). Reason names come from the
 * event's own print format (__print_symbolic), so they are the kernel's.
 * The handling times (exit to the next entry of the thread) go into a
 * log-linear histogram per thread and reason, for their p50 and p99 within
 * 1/EXIT_HIST_SUB of the exact values, whatever the number of exits.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <event-parse.h>

#include "analyze.h"

#define MAX_GUESTS	64u
#define MAX_THREADS	4096u
#define MAX_REASONS	512u
#define MAX_FUNCS	(1u << 16)
#define REASON_LEN	48
/*
 * Handling-time histograms: values below EXIT_HIST_SUB ns each have a bucket,
 * above that every power of two is cut into EXIT_HIST_SUB buckets (a bucket
 * spans less than 1/EXIT_HIST_SUB of its values); times of 2^EXIT_HIST_BITS
 * ns (18 minutes) and more share the last one. 17.5 KiB each, one per thread
 * and reason seen, at most MAX_HISTS (past that the times still count in the
 * totals, not in the percentiles, and are reported as past a bound).
 */
#define EXIT_HIST_SUB_BITS	6u
#define EXIT_HIST_SUB		(1u << EXIT_HIST_SUB_BITS)
#define EXIT_HIST_BITS		40u
#define EXIT_HIST_NR		((EXIT_HIST_BITS - EXIT_HIST_SUB_BITS + 1) * EXIT_HIST_SUB)
#define MAX_HISTS		2048u

struct reason {
	uint32_t isa, code;
	char name[REASON_LEN];
};

struct counts {
	uint64_t n, ns;
	uint64_t *hist;			/* EXIT_HIST_NR buckets, or NULL */
	uint64_t timed, max_ns;		/* exits with a handling time, the longest */
};

struct thread {
	int tid;
	int guest, vcpu;		/* -1: not in any GUEST option */
	struct counts *c;		/* per reason */
	unsigned int nr_c;
	bool pending;
	uint64_t exit_ts;
	unsigned int exit_reason;
};

/* A guest whose vCPU threads the host file names (its GUEST option). */
struct exits_guest {
	char name[64];
	struct tep_handle *tep;		/* its kallsyms, while the host file is read */
	int nr_vcpus;
};

struct func {
	int guest;
	uint64_t start;
	unsigned int reason;
	char *name;
	uint64_t n;
};

struct exits_an {
	struct exits_guest guests[MAX_GUESTS];
	unsigned int nr_guests;
	struct thread *threads;
	unsigned int nr_threads;
	struct reason *reasons;
	unsigned int nr_reasons;
	struct func *funcs;
	unsigned int nr_funcs;
	uint64_t exits, entries, unresolved, bad, dropped;
	unsigned int nr_hists;
	struct tep_handle *tep;
	int exit_id, entry_id;
	struct tep_format_field *f_reason, *f_isa, *f_rip;
	struct tep_event *exit_ev;
};

/**
 * exits_an_new() - an empty VM-exit analysis
 *
 * Return: the analysis, or NULL.
 */
struct exits_an *exits_an_new(void)
{
	return calloc(1, sizeof(struct exits_an));
}

/**
 * exits_an_free() - free an analysis
 * @a: the analysis, or NULL
 */
void exits_an_free(struct exits_an *a)
{
	unsigned int i;

	if (!a)
		return;
	for (i = 0; i < a->nr_threads; i++) {
		unsigned int r;

		for (r = 0; r < a->threads[i].nr_c; r++)
			free(a->threads[i].c[r].hist);
		free(a->threads[i].c);
	}
	for (i = 0; i < a->nr_funcs; i++)
		free(a->funcs[i].name);
	free(a->threads);
	free(a->reasons);
	free(a->funcs);
	free(a);
}

static struct thread *thread_get(struct exits_an *a, int tid)
{
	struct thread *t;
	unsigned int i;

	for (i = 0; i < a->nr_threads; i++)
		if (a->threads[i].tid == tid)
			return &a->threads[i];
	if (a->nr_threads >= MAX_THREADS)
		return NULL;
	t = realloc(a->threads, (a->nr_threads + 1) * sizeof(*t));
	if (!t)
		return NULL;
	a->threads = t;
	t = &a->threads[a->nr_threads++];
	memset(t, 0, sizeof(*t));
	t->tid = tid;
	t->guest = t->vcpu = -1;
	return t;
}

/**
 * exits_an_add_guest() - a guest of the host file's GUEST option
 * @a: the analysis
 * @name: its name
 * @nr_vcpus: vCPUs in @tids
 * @tids: the host thread of each vCPU (from the file: bounded by the caller)
 * @tep: the guest trace's event handle, for its kallsyms (NULL: none); it must
 *	 stay open until the host file has been read
 *
 * Return: 0, -ENOSPC, or -ENOMEM.
 */
int exits_an_add_guest(struct exits_an *a, const char *name, int nr_vcpus, const int *tids,
		       struct tep_handle *tep)
{
	struct exits_guest *g;
	int i;

	if (a->nr_guests >= MAX_GUESTS)
		return -ENOSPC;
	g = &a->guests[a->nr_guests];
	snprintf(g->name, sizeof(g->name), "%s", name);
	an_sanitize(g->name);
	g->tep = tep;
	g->nr_vcpus = nr_vcpus;
	for (i = 0; i < nr_vcpus; i++) {
		struct thread *t = thread_get(a, tids[i]);

		if (!t)
			return -ENOMEM;
		t->guest = a->nr_guests;
		t->vcpu = i;
	}
	a->nr_guests++;
	return 0;
}

static void ids_init(struct exits_an *a, struct tep_handle *tep)
{
	struct tep_event *ev;

	a->tep = tep;
	ev = tep_find_event_by_name(tep, "kvm", "kvm_exit");
	a->exit_ev = ev;
	a->exit_id = ev ? ev->id : -1;
	a->f_reason = an_field(ev, "exit_reason");
	a->f_isa = an_field(ev, "isa");
	a->f_rip = an_field(ev, "guest_rip");
	ev = tep_find_event_by_name(tep, "kvm", "kvm_entry");
	a->entry_id = ev ? ev->id : -1;
}

/* The reason's name as the event's print format gives it: "... reason NAME rip 0x...". */
static void reason_name(struct exits_an *a, struct tep_record *rec, char *buf, size_t size)
{
	struct trace_seq s;
	const char *p, *e;

	buf[0] = '\0';
	trace_seq_init(&s);
	tep_print_event(a->tep, &s, rec, "%s", TEP_PRINT_INFO);
	trace_seq_terminate(&s);
	p = s.buffer ? strstr(s.buffer, "reason ") : NULL;
	if (p) {
		p += 7;
		e = strstr(p, " rip ");
		if (!e)
			e = p + strcspn(p, " ");
		if ((size_t)(e - p) < size && e > p) {
			memcpy(buf, p, e - p);
			buf[e - p] = '\0';
		}
	}
	trace_seq_destroy(&s);
	an_sanitize(buf);
}

static int reason_index(struct exits_an *a, struct tep_record *rec, uint32_t isa, uint32_t code)
{
	struct reason *r;
	unsigned int i;

	for (i = 0; i < a->nr_reasons; i++)
		if (a->reasons[i].isa == isa && a->reasons[i].code == code)
			return i;
	if (a->nr_reasons >= MAX_REASONS)
		return -ENOSPC;
	r = realloc(a->reasons, (a->nr_reasons + 1) * sizeof(*r));
	if (!r)
		return -ENOMEM;
	a->reasons = r;
	r = &a->reasons[a->nr_reasons];
	r->isa = isa;
	r->code = code;
	reason_name(a, rec, r->name, sizeof(r->name));
	if (!r->name[0])
		snprintf(r->name, sizeof(r->name), "%u", code);
	return a->nr_reasons++;
}

static struct counts *thread_counts(struct thread *t, unsigned int reason)
{
	if (reason >= t->nr_c) {
		struct counts *c = realloc(t->c, (reason + 1) * sizeof(*c));

		if (!c)
			return NULL;
		memset(c + t->nr_c, 0, (reason + 1 - t->nr_c) * sizeof(*c));
		t->c = c;
		t->nr_c = reason + 1;
	}
	return &t->c[reason];
}

static unsigned int hist_index(uint64_t ns)
{
	unsigned int e;

	if (ns < EXIT_HIST_SUB)
		return ns;
	e = 63 - __builtin_clzll(ns);
	if (e >= EXIT_HIST_BITS)
		return EXIT_HIST_NR - 1;
	return (e - EXIT_HIST_SUB_BITS + 1) * EXIT_HIST_SUB +
	       (unsigned int)(ns >> (e - EXIT_HIST_SUB_BITS)) - EXIT_HIST_SUB;
}

/* The largest time bucket @i holds. */
static uint64_t hist_top(unsigned int i)
{
	unsigned int e, sub;

	if (i < EXIT_HIST_SUB)
		return i;
	if (i >= EXIT_HIST_NR - 1)
		return UINT64_MAX;
	e = i / EXIT_HIST_SUB + EXIT_HIST_SUB_BITS - 1;
	sub = i % EXIT_HIST_SUB;
	return (((uint64_t)(EXIT_HIST_SUB + sub + 1)) << (e - EXIT_HIST_SUB_BITS)) - 1;
}

/* One handling time of an exit of reason @c. */
static void count_time(struct exits_an *a, struct counts *c, uint64_t ns)
{
	c->ns += ns;
	if (!c->hist) {
		if (a->nr_hists >= MAX_HISTS || !(c->hist = calloc(EXIT_HIST_NR, sizeof(*c->hist)))) {
			a->dropped++;
			return;
		}
		a->nr_hists++;
	}
	c->hist[hist_index(ns)]++;
	c->timed++;
	if (ns > c->max_ns)
		c->max_ns = ns;
}

static void count_func(struct exits_an *a, const struct thread *t, unsigned int reason, uint64_t rip)
{
	const struct exits_guest *g = t->guest >= 0 ? &a->guests[t->guest] : NULL;
	const char *name = NULL;
	uint64_t start = 0;
	struct func *f;
	unsigned int i;

	if (g && g->tep)
		name = an_func(g->tep, rip, &start);
	if (!name) {
		a->unresolved++;
		return;
	}
	for (i = a->nr_funcs; i-- > 0;) {
		f = &a->funcs[i];
		if (f->guest == t->guest && f->start == start && f->reason == reason) {
			f->n++;
			return;
		}
	}
	if (a->nr_funcs >= MAX_FUNCS || !(f = realloc(a->funcs, (a->nr_funcs + 1) * sizeof(*f)))) {
		a->dropped++;
		return;
	}
	a->funcs = f;
	f = &a->funcs[a->nr_funcs];
	f->name = strndup(name, 128);
	if (!f->name) {
		a->dropped++;
		return;
	}
	an_sanitize(f->name);
	f->guest = t->guest;
	f->start = start;
	f->reason = reason;
	f->n = 1;
	a->nr_funcs++;
}

/**
 * exits_an_record() - feed one host record (in timestamp order)
 * @a: the analysis
 * @tep: the host file's event handle
 * @rec: the record
 *
 * Return: 0 or -ENOMEM.
 */
int exits_an_record(struct exits_an *a, struct tep_handle *tep, struct tep_record *rec)
{
	uint64_t code, isa = 0, rip;
	struct thread *t;
	struct counts *c;
	int id, r;

	if (a->tep != tep)
		ids_init(a, tep);
	id = tep_data_type(tep, rec);
	if (id < 0 || (id != a->exit_id && id != a->entry_id))
		return 0;
	t = thread_get(a, tep_data_pid(tep, rec));
	if (!t) {
		a->dropped++;
		return 0;
	}
	if (id == a->entry_id) {
		a->entries++;
		if (t->pending && rec->ts >= t->exit_ts && (c = thread_counts(t, t->exit_reason)))
			count_time(a, c, rec->ts - t->exit_ts);
		t->pending = false;
		return 0;
	}
	if (!an_u64(rec, a->f_reason, &code) || !an_u64(rec, a->f_rip, &rip)) {
		a->bad++;
		return 0;
	}
	an_u64(rec, a->f_isa, &isa);
	/* The basic reason: VMX keeps flags (failed VM entry) in the upper half. */
	if (isa == 1)
		code &= 0xffff;
	r = reason_index(a, rec, isa, code);
	if (r == -ENOMEM)
		return r;
	if (r < 0) {
		a->dropped++;
		return 0;
	}
	c = thread_counts(t, r);
	if (!c)
		return -ENOMEM;
	a->exits++;
	c->n++;
	t->pending = true;
	t->exit_ts = rec->ts;
	t->exit_reason = r;
	count_func(a, t, r, rip);
	return 0;
}

/**
 * exits_an_finish() - forget the guests' handles (they are closed next)
 * @a: the analysis
 */
void exits_an_finish(struct exits_an *a)
{
	unsigned int i;

	for (i = 0; i < a->nr_guests; i++)
		a->guests[i].tep = NULL;
}

/**
 * exits_an_any() - whether the host file had kvm_exit events
 * @a: the analysis
 *
 * Return: true when there is something to report.
 */
bool exits_an_any(const struct exits_an *a)
{
	return a->exits || a->entries;
}

static bool selected(const struct thread *t, int guest, int vcpu)
{
	return (guest == -2 || t->guest == guest) && (vcpu == -2 || t->vcpu == vcpu);
}

/* Sum the threads selected by (guest, vcpu); -2 selects any. */
static void sum(const struct exits_an *a, int guest, int vcpu, struct counts *out)
{
	unsigned int i, r;

	memset(out, 0, a->nr_reasons * sizeof(*out));
	for (i = 0; i < a->nr_threads; i++) {
		const struct thread *t = &a->threads[i];

		if (!selected(t, guest, vcpu))
			continue;
		for (r = 0; r < t->nr_c; r++) {
			out[r].n += t->c[r].n;
			out[r].ns += t->c[r].ns;
			out[r].timed += t->c[r].timed;
			if (t->c[r].max_ns > out[r].max_ns)
				out[r].max_ns = t->c[r].max_ns;
		}
	}
}

/*
 * The p50 and p99 handling times of @reason over the threads selected by
 * (guest, vcpu), nearest rank: the top of the bucket that holds the exit of
 * that rank, never more than the longest time seen. False when none was timed.
 */
static bool pcts(const struct exits_an *a, int guest, int vcpu, unsigned int reason,
		 uint64_t *p50, uint64_t *p99)
{
	uint64_t total = 0, max = 0, cum = 0, want[2], *out[2] = { p50, p99 };
	unsigned int i, b, k = 0;

	for (i = 0; i < a->nr_threads; i++) {
		const struct thread *t = &a->threads[i];
		const struct counts *c = reason < t->nr_c ? &t->c[reason] : NULL;
		uint64_t n = 0;

		if (!selected(t, guest, vcpu) || !c || !c->hist)
			continue;
		for (b = 0; b < EXIT_HIST_NR; b++)
			n += c->hist[b];
		total += n;
		if (n && c->max_ns > max)
			max = c->max_ns;
	}
	if (!total)
		return false;
	/* Nearest rank: ceil(p * total / 100), at least 1. */
	want[0] = (total * 50 + 99) / 100;
	want[1] = (total * 99 + 99) / 100;
	for (b = 0; b < EXIT_HIST_NR && k < 2; b++) {
		for (i = 0; i < a->nr_threads; i++) {
			const struct thread *t = &a->threads[i];

			if (selected(t, guest, vcpu) && reason < t->nr_c && t->c[reason].hist)
				cum += t->c[reason].hist[b];
		}
		while (k < 2 && cum >= want[k]) {
			uint64_t top = hist_top(b);

			*out[k++] = top < max ? top : max;
		}
	}
	return true;
}

static const struct counts *sort_base;

static int by_n(const void *x, const void *y)
{
	unsigned int a = *(const unsigned int *)x, b = *(const unsigned int *)y;

	if (sort_base[a].n != sort_base[b].n)
		return sort_base[a].n < sort_base[b].n ? 1 : -1;
	return a < b ? -1 : a > b;
}

static void table(const struct exits_an *a, FILE *f, const char *indent, int guest, int vcpu,
		  const struct counts *c)
{
	unsigned int *order = malloc(a->nr_reasons * sizeof(*order) + 1), i, n = 0;
	uint64_t total = 0, ns = 0;

	if (!order)
		return;
	for (i = 0; i < a->nr_reasons; i++) {
		total += c[i].n;
		ns += c[i].ns;
		if (c[i].n)
			order[n++] = i;
	}
	sort_base = c;
	qsort(order, n, sizeof(*order), by_n);
	fprintf(f, "%s%-32s %10s %7s %13s %10s %10s %10s\n", indent, "Event", "Total", "%Total",
		"Time(us)", "Avg(us)", "p50(us)", "p99(us)");
	for (i = 0; i < n; i++) {
		const struct counts *x = &c[order[i]];
		char ev[REASON_LEN + 16], p[2][24] = { "-", "-" };
		uint64_t p50, p99;

		snprintf(ev, sizeof(ev), "kvm_exit(%s)", a->reasons[order[i]].name);
		if (pcts(a, guest, vcpu, order[i], &p50, &p99)) {
			snprintf(p[0], sizeof(p[0]), "%.3f", p50 / 1000.0);
			snprintf(p[1], sizeof(p[1]), "%.3f", p99 / 1000.0);
		}
		fprintf(f, "%s%-32s %10" PRIu64 " %7.2f %13.3f %10.3f %10s %10s\n", indent, ev, x->n,
			total ? 100.0 * x->n / total : 0.0, x->ns / 1000.0,
			x->timed ? x->ns / 1000.0 / x->timed : 0.0, p[0], p[1]);
	}
	fprintf(f, "%s%-32s %10" PRIu64 " %7.2f %13.3f\n", indent, "Total", total, total ? 100.0 : 0.0,
		ns / 1000.0);
	free(order);
}

/* A guest's functions grouped by reason, the reasons in the order of their index, most first. */
static int by_func(const void *x, const void *y)
{
	const struct func *a = x, *b = y;

	if (a->guest != b->guest)
		return a->guest - b->guest;
	if (a->reason != b->reason)
		return a->reason < b->reason ? -1 : 1;
	if (a->n != b->n)
		return a->n < b->n ? 1 : -1;
	return strcmp(a->name, b->name);
}

/* The text lists this many functions per guest and reason; --json has all. */
#define EXITS_TOP_FUNCS	10

/*
 * Guest @g's exits per function, per reason (most exits first): the top
 * EXITS_TOP_FUNCS with their share of the reason, then what the rest add up to.
 */
static void print_funcs(const struct exits_an *a, FILE *f, int g, const struct func *fs, unsigned int nr,
			const struct counts *c)
{
	unsigned int *order = malloc(a->nr_reasons * sizeof(*order) + 1), i, k, n = 0;

	if (!order)
		return;
	for (i = 0; i < a->nr_reasons; i++)
		if (c[i].n)
			order[n++] = i;
	sort_base = c;
	qsort(order, n, sizeof(*order), by_n);
	fprintf(f, "  guest %s, exits per guest function (guest_rip with the guest's kallsyms), the %d "
		"most of each reason:\n", a->guests[g].name, EXITS_TOP_FUNCS);
	for (k = 0; k < n; k++) {
		unsigned int r = order[k], shown = 0, more = 0;
		uint64_t resolved = 0, rest = 0;

		for (i = 0; i < nr; i++) {
			if (fs[i].guest != g || fs[i].reason != r)
				continue;
			resolved += fs[i].n;
		}
		fprintf(f, "    %s: %" PRIu64 " exits, %" PRIu64 " in a known function\n", a->reasons[r].name,
			c[r].n, resolved);
		for (i = 0; i < nr; i++) {
			if (fs[i].guest != g || fs[i].reason != r)
				continue;
			if (shown < EXITS_TOP_FUNCS) {
				fprintf(f, "      %-40s %10" PRIu64 " %6.2f%%\n", fs[i].name, fs[i].n,
					100.0 * fs[i].n / c[r].n);
				shown++;
			} else {
				more++;
				rest += fs[i].n;
			}
		}
		if (more)
			fprintf(f, "      (%u more functions, %" PRIu64 " exits)\n", more, rest);
	}
	free(order);
}

/**
 * exits_an_print() - the text report
 * @a: the analysis
 * @f: where it goes
 */
void exits_an_print(const struct exits_an *a, FILE *f)
{
	struct counts *c = calloc(a->nr_reasons + 1, sizeof(*c));
	struct func *fs = NULL;
	unsigned int g, i, v;

	if (!c)
		return;
	fprintf(f, "\nVM exits (host kvm:kvm_exit, time to the next kvm:kvm_entry of the thread): "
		"%" PRIu64 " exits, %" PRIu64 " entries\n", a->exits, a->entries);
	fprintf(f, "  all guests:\n");
	sum(a, -2, -2, c);
	table(a, f, "    ", -2, -2, c);
	for (g = 0; g < a->nr_guests; g++) {
		fprintf(f, "  guest %s:\n", a->guests[g].name);
		sum(a, g, -2, c);
		table(a, f, "    ", g, -2, c);
		for (v = 0; v < (unsigned int)a->guests[g].nr_vcpus; v++) {
			for (i = 0; i < a->nr_threads; i++)
				if (a->threads[i].guest == (int)g && a->threads[i].vcpu == (int)v)
					break;
			fprintf(f, "    vcpu %u (host thread %d):\n", v,
				i < a->nr_threads ? a->threads[i].tid : -1);
			sum(a, g, v, c);
			table(a, f, "      ", g, v, c);
		}
	}
	sum(a, -1, -2, c);
	for (i = 0; i < a->nr_reasons && !c[i].n; i++)
		;
	if (i < a->nr_reasons) {
		fprintf(f, "  threads in no guest's GUEST option:\n");
		table(a, f, "    ", -1, -2, c);
	}
	if (a->nr_funcs && (fs = malloc(a->nr_funcs * sizeof(*fs)))) {
		memcpy(fs, a->funcs, a->nr_funcs * sizeof(*fs));
		qsort(fs, a->nr_funcs, sizeof(*fs), by_func);
		for (g = 0; g < a->nr_guests; g++) {
			for (i = 0; i < a->nr_funcs && fs[i].guest != (int)g; i++)
				;
			if (i == a->nr_funcs)
				continue;
			sum(a, g, -2, c);
			print_funcs(a, f, g, fs, a->nr_funcs, c);
		}
		free(fs);
	}
	fprintf(f, "  exits with an unresolved guest_rip: %" PRIu64 "\n", a->unresolved);
	if (a->bad || a->dropped)
		fprintf(f, "  note: %" PRIu64 " undecodable, %" PRIu64 " past a bound\n", a->bad, a->dropped);
	free(c);
}

static void table_json(const struct exits_an *a, struct jw *w, const char *key, int guest, int vcpu,
		       const struct counts *c)
{
	uint64_t p50, p99;
	unsigned int i;

	jw_arr(w, key);
	for (i = 0; i < a->nr_reasons; i++) {
		if (!c[i].n)
			continue;
		jw_obj(w, NULL);
		jw_str(w, "reason", a->reasons[i].name);
		jw_u64(w, "code", a->reasons[i].code);
		jw_u64(w, "count", c[i].n);
		jw_u64(w, "time_ns", c[i].ns);
		jw_u64(w, "timed", c[i].timed);
		if (pcts(a, guest, vcpu, i, &p50, &p99)) {
			jw_u64(w, "p50_ns", p50);
			jw_u64(w, "p99_ns", p99);
			jw_u64(w, "max_ns", c[i].max_ns);
		}
		jw_end(w, '}');
	}
	jw_end(w, ']');
}

/**
 * exits_an_json() - the analysis as the member "exits"
 * @a: the analysis
 * @w: the writer, inside an object
 */
void exits_an_json(const struct exits_an *a, struct jw *w)
{
	struct counts *c = calloc(a->nr_reasons + 1, sizeof(*c));
	unsigned int g, i, v;
	char start[24];

	if (!c)
		return;
	jw_obj(w, "exits");
	jw_u64(w, "exits", a->exits);
	jw_u64(w, "entries", a->entries);
	jw_u64(w, "unresolved_rip", a->unresolved);
	sum(a, -2, -2, c);
	table_json(a, w, "reasons", -2, -2, c);
	jw_arr(w, "guests");
	for (g = 0; g < a->nr_guests; g++) {
		jw_obj(w, NULL);
		jw_str(w, "name", a->guests[g].name);
		sum(a, g, -2, c);
		table_json(a, w, "reasons", g, -2, c);
		jw_arr(w, "vcpus");
		for (v = 0; v < (unsigned int)a->guests[g].nr_vcpus; v++) {
			jw_obj(w, NULL);
			jw_u64(w, "vcpu", v);
			for (i = 0; i < a->nr_threads; i++)
				if (a->threads[i].guest == (int)g && a->threads[i].vcpu == (int)v)
					jw_i64(w, "host_thread", a->threads[i].tid);
			sum(a, g, v, c);
			table_json(a, w, "reasons", g, v, c);
			jw_end(w, '}');
		}
		jw_end(w, ']');
		jw_arr(w, "functions");
		for (i = 0; i < a->nr_funcs; i++) {
			if (a->funcs[i].guest != (int)g)
				continue;
			snprintf(start, sizeof(start), "0x%016" PRIx64, a->funcs[i].start);
			jw_obj(w, NULL);
			jw_str(w, "function", a->funcs[i].name);
			jw_str(w, "start", start);
			jw_str(w, "reason", a->reasons[a->funcs[i].reason].name);
			jw_u64(w, "count", a->funcs[i].n);
			jw_end(w, '}');
		}
		jw_end(w, ']');
		jw_end(w, '}');
	}
	jw_end(w, ']');
	jw_end(w, '}');
	free(c);
}
