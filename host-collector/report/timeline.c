// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * report --html FILE: host and guests on one timeline, as one self-contained
 * HTML page (inline script and canvas, no network). Lanes: the host's CPUs,
 * then each guest's vCPUs. In each lane: task slices from sched_switch,
 * coloured per task; the other events as ticks coloured per event type;
 * trace markers as flags; stretches where pages reported lost events, shaded.
 * Each guest has a band with its clock-sync epochs and their error bound.
 *
 * The data goes into the page as base64 typed arrays (8-byte times, relative
 * to the first event, in ns) so a page of millions of items loads in a
 * second; the script draws at most a few rectangles per pixel column
 * (aggregating when zoomed out), so zoom and pan stay fluid.
 *
 * Everything from a trace is hostile: names and marker texts are bounded and
 * written as JSON strings in which every character that could end the script
 * element or the string is escaped.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <event-parse.h>
#include <trace-cmd.h>

#include "analyze.h"
#include "json.h"
#include "vt_grow.h"

#define TL_MAX_LANES	1024u
#define TL_MAX_TASKS	65536u
#define TL_MAX_TYPES	1024u
#define TL_MAX_ITEMS	(8u << 20)	/* slices + ticks, all lanes */
#define TL_MAX_MARKERS	100000u
#define TL_MAX_EPOCHS	4096u
#define TL_TEXT		120

struct f64v {
	double *v;
	size_t n, cap;
};

struct i32v {
	int32_t *v;
	size_t n, cap;
};

struct lane {
	char label[96];
	char group[80];
	int cpu;
	struct f64v s, e, ts, ls, le;	/* slices, ticks, lost spans */
	struct i32v k, tt;		/* slice task, tick type */
	int cur_task;			/* open slice, -1 none */
	double cur_start, last_ts;
	bool seen;
};

struct marker {
	uint32_t lane;
	double t;
	char text[TL_TEXT];
};

struct epoch {
	char group[80];
	uint64_t ns;
	double bound;
	char method[32];
};

/* Interned names (tasks, event types) with a hash index: thousands of tasks, a lookup per switch. */
struct names {
	char **v;
	unsigned int nr;
	uint32_t *idx;			/* open addressing, 2 * cap slots, UINT32_MAX empty */
	unsigned int cap;
};

static uint32_t str_hash(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

static int names_grow(struct names *n)
{
	unsigned int cap = n->cap ? n->cap * 2 : 256, i;
	uint32_t *idx = malloc(2 * (size_t)cap * sizeof(*idx));
	char **v = realloc(n->v, cap * sizeof(*v));

	if (!idx || !v) {
		free(idx);
		if (v)
			n->v = v;
		return -ENOMEM;
	}
	n->v = v;
	memset(idx, 0xff, 2 * (size_t)cap * sizeof(*idx));
	for (i = 0; i < n->nr; i++) {
		uint32_t j = str_hash(v[i]) & (2 * cap - 1);

		while (idx[j] != UINT32_MAX)
			j = (j + 1) & (2 * cap - 1);
		idx[j] = i;
	}
	free(n->idx);
	n->idx = idx;
	n->cap = cap;
	return 0;
}

static int intern(struct names *n, unsigned int max, const char *s)
{
	uint32_t j;

	if (n->nr == n->cap && n->nr < max && names_grow(n) < 0)
		return -ENOMEM;
	if (!n->cap)
		return -ENOMEM;
	for (j = str_hash(s) & (2 * n->cap - 1); n->idx[j] != UINT32_MAX; j = (j + 1) & (2 * n->cap - 1))
		if (!strcmp(n->v[n->idx[j]], s))
			return n->idx[j];
	if (n->nr >= max)
		return 0;	/* past the bound: the first name stands for the rest */
	n->v[n->nr] = strdup(s);
	if (!n->v[n->nr])
		return -ENOMEM;
	n->idx[j] = n->nr;
	return n->nr++;
}

static void names_free(struct names *n)
{
	unsigned int i;

	for (i = 0; i < n->nr; i++)
		free(n->v[i]);
	free(n->v);
	free(n->idx);
}

struct timeline {
	struct lane *lanes;
	unsigned int nr_lanes;
	struct names tasks, types;
	struct marker *markers;
	unsigned int nr_markers;
	struct epoch *epochs;
	unsigned int nr_epochs;
	uint64_t items, dropped;
	uint64_t t0, t1;
	bool have_t;
	/* per trace while reading */
	unsigned int base;
	struct tep_handle *tep;
	int switch_id, print_id;
	struct tep_format_field *f_prev_pid, *f_next_pid, *f_next_comm, *f_buf;
	char cur_group[80];
	/* vCPU state strips (report --vcpus' intervals), drawn under their vCPU's lane */
	struct vstrip *vs;
	unsigned int nr_vs;
	struct names vnames;		/* state names; vkinds[i] is the kind of vnames.v[i] */
	char (*vkinds)[12];
};

/* One vCPU's state strip: intervals, each a state name and how many shorter ones it holds. */
struct vstrip {
	char label[96];			/* the lane's: "guest NAME vcpuN" */
	struct f64v s, e;
	struct i32v k, m;
};

static int f64_push(struct f64v *a, double x)
{
	if (vt_grow((void **)&a->v, &a->cap, a->n + 1, sizeof(*a->v)) < 0)
		return -ENOMEM;
	a->v[a->n++] = x;
	return 0;
}

static int i32_push(struct i32v *a, int32_t x)
{
	if (vt_grow((void **)&a->v, &a->cap, a->n + 1, sizeof(*a->v)) < 0)
		return -ENOMEM;
	a->v[a->n++] = x;
	return 0;
}

/**
 * tl_new() - an empty timeline
 *
 * Return: the timeline, or NULL.
 */
struct timeline *tl_new(void)
{
	return calloc(1, sizeof(struct timeline));
}

/**
 * tl_free() - free a timeline
 * @tl: the timeline, or NULL
 */
void tl_free(struct timeline *tl)
{
	unsigned int i;

	if (!tl)
		return;
	for (i = 0; i < tl->nr_lanes; i++) {
		struct lane *l = &tl->lanes[i];

		free(l->s.v), free(l->e.v), free(l->ts.v), free(l->ls.v), free(l->le.v);
		free(l->k.v), free(l->tt.v);
	}
	for (i = 0; i < tl->nr_vs; i++) {
		struct vstrip *v = &tl->vs[i];

		free(v->s.v), free(v->e.v), free(v->k.v), free(v->m.v);
	}
	free(tl->vs);
	free(tl->vkinds);
	names_free(&tl->vnames);
	names_free(&tl->tasks);
	names_free(&tl->types);
	free(tl->lanes);
	free(tl->markers);
	free(tl->epochs);
	free(tl);
}

/**
 * tl_nr_items() - slices, ticks and markers collected
 * @tl: the timeline
 *
 * Return: the count.
 */
uint64_t tl_nr_items(const struct timeline *tl)
{
	return tl->items + tl->nr_markers;
}

static struct lane *lane_get(struct timeline *tl, int cpu)
{
	unsigned int idx;
	struct lane *l;

	if (cpu < 0 || cpu >= (int)TL_MAX_LANES || tl->base + cpu >= TL_MAX_LANES)
		return NULL;
	idx = tl->base + cpu;
	if (idx >= tl->nr_lanes) {
		l = realloc(tl->lanes, (idx + 1) * sizeof(*l));
		if (!l)
			return NULL;
		tl->lanes = l;
		memset(&l[tl->nr_lanes], 0, (idx + 1 - tl->nr_lanes) * sizeof(*l));
		for (unsigned int i = tl->nr_lanes; i <= idx; i++) {
			l[i].cur_task = -1;
			l[i].cpu = i - tl->base;
			snprintf(l[i].group, sizeof(l[i].group), "%s", tl->cur_group);
			snprintf(l[i].label, sizeof(l[i].label), "%s %s%u", tl->cur_group,
				 strcmp(tl->cur_group, "host") ? "vcpu" : "cpu", i - tl->base);
		}
		tl->nr_lanes = idx + 1;
	}
	return &tl->lanes[idx];
}

static int close_slice(struct timeline *tl, struct lane *l, double t)
{
	int ret = 0;

	if (l->cur_task >= 0 && t >= l->cur_start) {
		if (tl->items >= TL_MAX_ITEMS) {
			tl->dropped++;
		} else {
			ret = f64_push(&l->s, l->cur_start) ?: f64_push(&l->e, t) ?:
			      i32_push(&l->k, l->cur_task);
			tl->items++;
		}
	}
	l->cur_task = -1;
	return ret;
}

static int on_record(struct tracecmd_input *h, struct tep_record *rec, int cpu, void *arg)
{
	struct timeline *tl = arg;
	struct tep_handle *tep = tracecmd_get_tep(h);
	struct lane *l = lane_get(tl, cpu);
	double t = (double)rec->ts;
	int id = tep_data_type(tep, rec), ret = 0;

	if (!l)
		return 0;
	if (tl->tep != tep) {
		struct tep_event *ev = tep_find_event_by_name(tep, "sched", "sched_switch");

		tl->tep = tep;
		tl->switch_id = ev ? ev->id : -1;
		tl->f_prev_pid = an_field(ev, "prev_pid");
		tl->f_next_pid = an_field(ev, "next_pid");
		tl->f_next_comm = an_field(ev, "next_comm");
		ev = tep_find_event_by_name(tep, "ftrace", "print");
		tl->print_id = ev ? ev->id : -1;
		tl->f_buf = an_field(ev, "buf");
	}
	if (!tl->have_t || rec->ts < tl->t0)
		tl->t0 = rec->ts;
	if (!tl->have_t || rec->ts > tl->t1)
		tl->t1 = rec->ts;
	tl->have_t = true;
	if (rec->missed_events && l->seen)
		ret = f64_push(&l->ls, l->last_ts) ?: f64_push(&l->le, t);
	l->seen = true;
	l->last_ts = t;
	if (ret < 0)
		return -1;
	if (id == tl->switch_id && id >= 0) {
		char comm[32], name[96];
		uint64_t pid = 0;
		int task;

		if (close_slice(tl, l, t) < 0)
			return -1;
		if (!an_u64(rec, tl->f_next_pid, &pid) || !pid)
			return 0;	/* idle, or undecodable: a gap */
		an_str(rec, tl->f_next_comm, comm, sizeof(comm));
		snprintf(name, sizeof(name), "%s:%s-%" PRIu64, l->group, comm, pid);
		task = intern(&tl->tasks, TL_MAX_TASKS, name);
		if (task < 0)
			return -1;
		l->cur_task = task;
		l->cur_start = t;
		return 0;
	}
	if (id == tl->print_id && id >= 0) {
		struct marker *m;

		if (tl->nr_markers >= TL_MAX_MARKERS) {
			tl->dropped++;
			return 0;
		}
		m = realloc(tl->markers, (tl->nr_markers + 1) * sizeof(*m));
		if (!m)
			return -1;
		tl->markers = m;
		m = &m[tl->nr_markers++];
		m->lane = l - tl->lanes;
		m->t = t;
		an_str(rec, tl->f_buf, m->text, sizeof(m->text));
		return 0;
	}
	if (tl->items >= TL_MAX_ITEMS) {
		tl->dropped++;
		return 0;
	}
	{
		struct tep_event *ev = tep_find_event(tep, id);
		char name[160];
		int type;

		/* The scheduler's other events are in the slices already. */
		if (!ev || !strcmp(ev->system, "sched"))
			return 0;
		snprintf(name, sizeof(name), "%s:%s", ev->system, ev->name);
		an_sanitize(name);
		type = intern(&tl->types, TL_MAX_TYPES, name);
		if (type < 0 || f64_push(&l->ts, t) < 0 || i32_push(&l->tt, type) < 0)
			return -1;
		tl->items++;
	}
	return 0;
}

/**
 * tl_add_trace() - read one trace.dat into lanes of its own
 * @tl: the timeline
 * @label: "host" or "guest NAME"
 * @path: the file
 * @nr_cpus: its CPUs (from the manifest; lanes are added for CPUs seen beyond)
 *
 * Return: 0, -EBADMSG when libtracecmd cannot open it, -ENOMEM.
 */
int tl_add_trace(struct timeline *tl, const char *label, const char *path, unsigned int nr_cpus)
{
	struct tracecmd_input *h;
	unsigned int i, first = tl->nr_lanes;
	int ret = 0;

	h = tracecmd_open(path, TRACECMD_FL_LOAD_NO_PLUGINS);
	if (!h)
		return -EBADMSG;
	tl->base = tl->nr_lanes;
	tl->tep = NULL;
	snprintf(tl->cur_group, sizeof(tl->cur_group), "%s", label);
	an_sanitize(tl->cur_group);
	/* Every CPU gets its lane, events or not (mmiotrace leaves all but one idle). */
	if (nr_cpus && !lane_get(tl, (int)(nr_cpus < TL_MAX_LANES ? nr_cpus : TL_MAX_LANES) - 1)) {
		tracecmd_close(h);
		return -ENOMEM;
	}
	if (tracecmd_iterate_events(h, NULL, 0, on_record, tl) < 0)
		ret = -ENOMEM;
	for (i = first; i < tl->nr_lanes; i++)
		if (close_slice(tl, &tl->lanes[i], tl->lanes[i].last_ts) < 0)
			ret = -ENOMEM;
	tl->tep = NULL;
	tracecmd_close(h);
	return ret;
}

/**
 * tl_add_vstate() - an interval of a vCPU's state strip
 * @tl: the timeline
 * @guest: the guest's name (its lanes are "guest NAME")
 * @vcpu: the vCPU
 * @start: host ns, as the traces' timestamps
 * @end: host ns
 * @kind: guest, running, exit, qemu, halted, preempted or unknown (the colour)
 * @name: what hovering shows ("exit npf", "preempted by stress-ng")
 * @merged: how many shorter intervals it holds
 *
 * Intervals come in time order per vCPU (vcpus_an_each_strip()). They count
 * against the page's item bound like slices.
 *
 * Return: 0 or -ENOMEM.
 */
int tl_add_vstate(struct timeline *tl, const char *guest, int vcpu, uint64_t start, uint64_t end,
		  const char *kind, const char *name, unsigned int merged)
{
	char label[96], group[80];
	struct vstrip *v = NULL;
	unsigned int i;
	int k;

	snprintf(group, sizeof(group), "guest %s", guest);
	an_sanitize(group);
	snprintf(label, sizeof(label), "%s vcpu%d", group, vcpu);
	for (i = tl->nr_vs; i-- > 0;)
		if (!strcmp(tl->vs[i].label, label)) {
			v = &tl->vs[i];
			break;
		}
	if (!v) {
		if (tl->nr_vs >= TL_MAX_LANES)
			return 0;
		v = realloc(tl->vs, (tl->nr_vs + 1) * sizeof(*v));
		if (!v)
			return -ENOMEM;
		tl->vs = v;
		v = &v[tl->nr_vs++];
		memset(v, 0, sizeof(*v));
		snprintf(v->label, sizeof(v->label), "%s", label);
	}
	if (tl->items >= TL_MAX_ITEMS) {
		tl->dropped++;
		return 0;
	}
	i = tl->vnames.nr;
	k = intern(&tl->vnames, TL_MAX_TYPES, name);
	if (k < 0)
		return k == -ENOMEM ? k : 0;
	if ((unsigned int)k >= i) {
		char (*kinds)[12] = realloc(tl->vkinds, tl->vnames.nr * sizeof(*kinds));

		if (!kinds)
			return -ENOMEM;
		tl->vkinds = kinds;
		snprintf(kinds[k], sizeof(kinds[k]), "%s", kind);
	}
	tl->items++;
	return f64_push(&v->s, (double)start) ?: f64_push(&v->e, (double)end) ?: i32_push(&v->k, k) ?:
	       i32_push(&v->m, (int32_t)(merged < INT32_MAX ? merged : INT32_MAX));
}

/**
 * tl_add_epoch() - a clock-sync epoch of a guest
 * @tl: the timeline
 * @label: the guest's lane group ("guest NAME")
 * @ns: where it starts, host time in ns (what the traces' timestamps are)
 * @bound_ns: its error bound
 * @method: how it was measured
 *
 * Return: 0 or -ENOMEM.
 */
int tl_add_epoch(struct timeline *tl, const char *label, uint64_t ns, double bound_ns,
		 const char *method)
{
	struct epoch *e;

	if (tl->nr_epochs >= TL_MAX_EPOCHS)
		return 0;
	e = realloc(tl->epochs, (tl->nr_epochs + 1) * sizeof(*e));
	if (!e)
		return -ENOMEM;
	tl->epochs = e;
	e = &e[tl->nr_epochs++];
	snprintf(e->group, sizeof(e->group), "%s", label);
	an_sanitize(e->group);
	e->ns = ns;
	e->bound = bound_ns >= 0 && bound_ns < 1e15 ? bound_ns : 0;
	snprintf(e->method, sizeof(e->method), "%s", method ? method : "?");
	an_sanitize(e->method);
	return 0;
}

static void b64(FILE *f, const void *data, size_t len)
{
	static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const unsigned char *p = data;
	size_t i;

	fputc('"', f);
	for (i = 0; i + 2 < len; i += 3) {
		uint32_t v = p[i] << 16 | p[i + 1] << 8 | p[i + 2];

		fputc(tab[v >> 18], f), fputc(tab[(v >> 12) & 63], f);
		fputc(tab[(v >> 6) & 63], f), fputc(tab[v & 63], f);
	}
	if (len - i == 1) {
		uint32_t v = p[i] << 16;

		fprintf(f, "%c%c==", tab[v >> 18], tab[(v >> 12) & 63]);
	} else if (len - i == 2) {
		uint32_t v = p[i] << 16 | p[i + 1] << 8;

		fprintf(f, "%c%c%c=", tab[v >> 18], tab[(v >> 12) & 63], tab[(v >> 6) & 63]);
	}
	fputc('"', f);
}

/* Times relative to t0, in ns, as doubles. */
static void b64_times(FILE *f, const struct f64v *a, double t0)
{
	size_t i;

	for (i = 0; i < a->n; i++)
		a->v[i] -= t0;
	b64(f, a->v, a->n * sizeof(double));
	for (i = 0; i < a->n; i++)
		a->v[i] += t0;
}

extern const char tl_page_head[], tl_page_script[];

/**
 * tl_write_html() - the page
 * @tl: the timeline, every trace added
 * @f: where it goes
 * @title: shown at the top (sanitized)
 *
 * Return: 0, or -EIO when writing failed.
 */
int tl_write_html(struct timeline *tl, FILE *f, const char *title)
{
	double t0 = (double)tl->t0;
	unsigned int i;

	fputs(tl_page_head, f);
	fputs("<script id=\"vt-data\" type=\"application/json\">{\"title\":", f);
	json_write_string_html(f, title);
	fprintf(f, ",\"span\":%.0f,\"dropped\":%" PRIu64 ",\"lanes\":[", (double)(tl->t1 - tl->t0),
		tl->dropped);
	for (i = 0; i < tl->nr_lanes; i++) {
		const struct lane *l = &tl->lanes[i];

		fputs(i ? ",\n{\"label\":" : "\n{\"label\":", f);
		json_write_string_html(f, l->label);
		fputs(",\"group\":", f);
		json_write_string_html(f, l->group);
		fputs(",\"s\":", f);
		b64_times(f, &l->s, t0);
		fputs(",\"e\":", f);
		b64_times(f, &l->e, t0);
		fputs(",\"k\":", f);
		b64(f, l->k.v, l->k.n * sizeof(int32_t));
		fputs(",\"ts\":", f);
		b64_times(f, &l->ts, t0);
		fputs(",\"tt\":", f);
		b64(f, l->tt.v, l->tt.n * sizeof(int32_t));
		fputs(",\"ls\":", f);
		b64_times(f, &l->ls, t0);
		fputs(",\"le\":", f);
		b64_times(f, &l->le, t0);
		fputs("}", f);
	}
	fputs("],\n\"vstrips\":[", f);
	for (i = 0; i < tl->nr_vs; i++) {
		const struct vstrip *v = &tl->vs[i];

		fputs(i ? ",\n{\"label\":" : "\n{\"label\":", f);
		json_write_string_html(f, v->label);
		fputs(",\"s\":", f);
		b64_times(f, &v->s, t0);
		fputs(",\"e\":", f);
		b64_times(f, &v->e, t0);
		fputs(",\"k\":", f);
		b64(f, v->k.v, v->k.n * sizeof(int32_t));
		fputs(",\"m\":", f);
		b64(f, v->m.v, v->m.n * sizeof(int32_t));
		fputs("}", f);
	}
	fputs("],\n\"vstates\":[", f);
	for (i = 0; i < tl->vnames.nr; i++) {
		fputs(i ? ",[" : "[", f);
		json_write_string_html(f, tl->vkinds[i]);
		fputc(',', f);
		json_write_string_html(f, tl->vnames.v[i]);
		fputc(']', f);
	}
	fputs("],\n\"tasks\":[", f);
	for (i = 0; i < tl->tasks.nr; i++) {
		if (i)
			fputc(',', f);
		json_write_string_html(f, tl->tasks.v[i]);
	}
	fputs("],\n\"types\":[", f);
	for (i = 0; i < tl->types.nr; i++) {
		if (i)
			fputc(',', f);
		json_write_string_html(f, tl->types.v[i]);
	}
	fputs("],\n\"markers\":[", f);
	for (i = 0; i < tl->nr_markers; i++) {
		fprintf(f, "%s[%u,%.0f,", i ? ",\n" : "", tl->markers[i].lane, tl->markers[i].t - t0);
		json_write_string_html(f, tl->markers[i].text);
		fputc(']', f);
	}
	fputs("],\n\"epochs\":[", f);
	for (i = 0; i < tl->nr_epochs; i++) {
		fprintf(f, "%s[", i ? "," : "");
		json_write_string_html(f, tl->epochs[i].group);
		fprintf(f, ",%.0f,%.1f,", (double)tl->epochs[i].ns - t0, tl->epochs[i].bound);
		json_write_string_html(f, tl->epochs[i].method);
		fputc(']', f);
	}
	fputs("]}</script>\n", f);
	fputs(tl_page_script, f);
	fflush(f);
	return ferror(f) ? -EIO : 0;
}
