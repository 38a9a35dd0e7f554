// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * report --mmiotrace-log and the mmiotrace summary.
 *
 * The log is the classic text format (VERSION 20070824) that mmiotrace tools
 * read, written the way the kernel's own trace_pipe reader writes it
 * (kernel/trace/trace_mmiotrace.c), from the guest's ftrace entries
 * mmiotrace_map and mmiotrace_rw and its trace markers:
 *
 *   VERSION 20070824
 *   PCIDEV bbdf vendevid irq start*7 size*7 [driver]  (the guest's /proc/bus/pci/devices)
 *   MAP sec.usec map_id 0xphys 0xvirt 0xlen 0x0 0
 *   UNMAP sec.usec map_id 0x0 0
 *   R|W width sec.usec map_id 0xphys 0xvalue 0xpc 0
 *   UNKNOWN sec.usec map_id 0xphys b2,b1,b0 0xpc 0
 *   MARK sec.usec text
 *
 * Timestamps are libtracecmd's, host-aligned (what trace-cmd report prints).
 * Where a page reports lost events, a line "MARK sec.usec Lost N events." is
 * written before the first entry after the loss (the kernel writes the same
 * line with a zero timestamp when its reader notices overruns).
 *
 * The summary counts accesses per guest function (the pc, which the guest
 * records only when booted with mmiotrace.trace_pc=1, resolved with the
 * guest's kallsyms carried in the trace, modules included) and per register
 * offset within each map.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <event-parse.h>

#include "analyze.h"

#define MMIO_READ	1
#define MMIO_WRITE	2
#define MMIO_PROBE	3
#define MMIO_UNPROBE	4
#define MMIO_UNKNOWN_OP	5

#define MAX_MAPS	65536u
#define MAX_FUNCS	65536u
#define MAX_REGS	(1u << 20)	/* distinct (map, offset, width) */
#define MAX_LISTED	64u

struct map {
	int64_t id;
	uint64_t phys, virt, len, ts;
	bool unmapped;
};

struct func {
	uint64_t start;
	char *name;
	uint64_t reads, writes, other;
};

/* One register: accesses of one width at one offset of one map. */
struct access {
	uint32_t map;		/* index into maps, or UINT32_MAX: made before the recording */
	uint32_t func;		/* the function of its latest access (UINT32_MAX: none) */
	uint64_t off;		/* offset in the map, or phys when the map is unknown */
	uint8_t op, width;
	uint64_t r, w, o;
};

struct mmio_ids {
	struct tep_handle *tep;
	int rw, map, print;
	struct tep_format_field *rw_phys, *rw_value, *rw_pc, *rw_id, *rw_op, *rw_width;
	struct tep_format_field *m_phys, *m_virt, *m_len, *m_id, *m_op, *p_buf;
};

struct mmio_an {
	FILE *log;
	struct map *maps;
	unsigned int nr_maps;
	struct func *funcs;
	unsigned int nr_funcs;
	struct access *acc;
	size_t nr_acc, cap_acc;
	uint32_t *hash;			/* open addressing into acc, 2 * cap_acc slots */
	bool acc_full;
	uint64_t reads, writes, unknown, nr_map, nr_unmap, marks, bad;
	uint64_t lost_lines, lost_events, lost_unknown, no_pc;
	int err;
	struct mmio_ids ids;
};

/* Split one /proc/bus/pci/devices line (tab-separated hex) into its fields. */
static int pci_fields(const char *line, char f[17][64], int *nf, char *driver, size_t dsize)
{
	const char *p = line;
	int n = 0;

	driver[0] = '\0';
	while (*p && *p != '\n' && n < 17) {
		size_t len = strcspn(p, "\t\n");
		const char *s = p;

		while (len && *s == ' ')
			s++, len--;
		if (len == 0 || len >= 64)
			return -EBADMSG;
		memcpy(f[n], s, len);
		f[n][len] = '\0';
		if (strspn(f[n], "0123456789abcdefABCDEF") != len)
			return -EBADMSG;
		n++;
		p = s + len;
		if (*p == '\t')
			p++;
	}
	if (n != 17)
		return -EBADMSG;
	if (*p && *p != '\n') {
		size_t len = strcspn(p, "\n");

		len = len < dsize - 1 ? len : dsize - 1;
		memcpy(driver, p, len);
		driver[len] = '\0';
		an_sanitize(driver);
		if (strchr(driver, ' '))
			*strchr(driver, ' ') = '\0';
	}
	*nf = n;
	return 0;
}

/**
 * mmio_pcidev_line() - a PCIDEV line from a line of /proc/bus/pci/devices
 * @buf: where the line goes (with its newline)
 * @size: size of @buf
 * @line: the guest's line: bus/devfn, vendor/device, irq, 7 starts, 7 sizes,
 *	  optional driver, tab-separated
 *
 * Return: 0, or -EBADMSG for a line that does not have that shape.
 */
int mmio_pcidev_line(char *buf, size_t size, const char *line)
{
	char f[17][64], driver[64];
	int i, n, len;

	if (pci_fields(line, f, &n, driver, sizeof(driver)) < 0 || strlen(f[0]) != 4 ||
	    strlen(f[1]) != 8)
		return -EBADMSG;
	len = snprintf(buf, size, "PCIDEV %s %s %s", f[0], f[1], f[2]);
	for (i = 3; i < 17 && len > 0 && (size_t)len < size; i++)
		len += snprintf(buf + len, size - len, " %" PRIx64, (uint64_t)strtoull(f[i], NULL, 16));
	if (len > 0 && (size_t)len < size)
		len += snprintf(buf + len, size - len, " %s\n", driver);
	return len < 0 || (size_t)len >= size ? -EBADMSG : 0;
}

/**
 * mmio_an_new() - an mmiotrace analysis
 * @log: where the classic log goes (NULL: none)
 * @pci_devices: the guest's /proc/bus/pci/devices (guest data), or NULL
 * @len: its length
 *
 * Writes the log's VERSION and PCIDEV lines at once.
 *
 * Return: the analysis, or NULL (errno set).
 */
struct mmio_an *mmio_an_new(FILE *log, const char *pci_devices, size_t len)
{
	struct mmio_an *a = calloc(1, sizeof(*a));
	const char *p = pci_devices, *end = pci_devices + (pci_devices ? len : 0);

	if (!a)
		return NULL;
	a->log = log;
	if (!log)
		return a;
	fprintf(log, "VERSION 20070824\n");
	while (p && p < end) {
		const char *nl = memchr(p, '\n', end - p);
		size_t n = (nl ? nl : end) - p;
		char line[1024], out[1024];

		if (n < sizeof(line)) {
			memcpy(line, p, n);
			line[n] = '\0';
			if (mmio_pcidev_line(out, sizeof(out), line) == 0)
				fputs(out, log);
		}
		p += n + 1;
	}
	return a;
}

/**
 * mmio_an_free() - free an analysis (the log is the caller's)
 * @a: the analysis, or NULL
 */
void mmio_an_free(struct mmio_an *a)
{
	unsigned int i;

	if (!a)
		return;
	for (i = 0; i < a->nr_funcs; i++)
		free(a->funcs[i].name);
	free(a->funcs);
	free(a->maps);
	free(a->acc);
	free(a->hash);
	free(a);
}

static void ids_init(struct mmio_ids *ids, struct tep_handle *tep)
{
	struct tep_event *ev;

	memset(ids, 0, sizeof(*ids));
	ids->tep = tep;
	ev = tep_find_event_by_name(tep, "ftrace", "mmiotrace_rw");
	ids->rw = ev ? ev->id : -1;
	ids->rw_phys = an_field(ev, "phys");
	ids->rw_value = an_field(ev, "value");
	ids->rw_pc = an_field(ev, "pc");
	ids->rw_id = an_field(ev, "map_id");
	ids->rw_op = an_field(ev, "opcode");
	ids->rw_width = an_field(ev, "width");
	ev = tep_find_event_by_name(tep, "ftrace", "mmiotrace_map");
	ids->map = ev ? ev->id : -1;
	ids->m_phys = an_field(ev, "phys");
	ids->m_virt = an_field(ev, "virt");
	ids->m_len = an_field(ev, "len");
	ids->m_id = an_field(ev, "map_id");
	ids->m_op = an_field(ev, "opcode");
	ev = tep_find_event_by_name(tep, "ftrace", "print");
	ids->print = ev ? ev->id : -1;
	ids->p_buf = an_field(ev, "buf");
}

static int map_find(const struct mmio_an *a, int64_t id)
{
	unsigned int i;

	/* The newest map of that id: ids are reused after an unmap. */
	for (i = a->nr_maps; i-- > 0;)
		if (a->maps[i].id == id)
			return i;
	return -1;
}

static uint32_t func_index(struct mmio_an *a, struct tep_handle *tep, uint64_t pc)
{
	uint64_t start = 0;
	const char *name;
	unsigned int i;
	struct func *f;

	if (!pc) {
		a->no_pc++;
		return UINT32_MAX;
	}
	name = an_func(tep, pc, &start);
	if (!name)
		return UINT32_MAX;
	for (i = 0; i < a->nr_funcs; i++)
		if (a->funcs[i].start == start)
			return i;
	if (a->nr_funcs >= MAX_FUNCS)
		return UINT32_MAX;
	f = realloc(a->funcs, (a->nr_funcs + 1) * sizeof(*f));
	if (!f)
		return UINT32_MAX;
	a->funcs = f;
	f = &a->funcs[a->nr_funcs];
	memset(f, 0, sizeof(*f));
	f->start = start;
	f->name = strndup(name, 128);
	if (!f->name)
		return UINT32_MAX;
	an_sanitize(f->name);
	return a->nr_funcs++;
}

static size_t reg_slot(const struct mmio_an *a, uint32_t map, uint64_t off, uint8_t width)
{
	uint64_t h = (off * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)map << 8) ^ width;
	size_t mask = 2 * a->cap_acc - 1, i = (h ^ (h >> 29)) & mask;

	while (a->hash[i] != UINT32_MAX) {
		const struct access *x = &a->acc[a->hash[i]];

		if (x->map == map && x->off == off && x->width == width)
			break;
		i = (i + 1) & mask;
	}
	return i;
}

static int reg_grow(struct mmio_an *a)
{
	size_t cap = a->cap_acc ? a->cap_acc * 2 : 1024, i;
	struct access *v;
	uint32_t *h;

	if (cap > MAX_REGS)
		return -ENOSPC;
	v = realloc(a->acc, cap * sizeof(*v));
	if (!v)
		return -ENOMEM;
	a->acc = v;
	h = malloc(2 * cap * sizeof(*h));
	if (!h)
		return -ENOMEM;
	free(a->hash);
	a->hash = h;
	a->cap_acc = cap;
	memset(h, 0xff, 2 * cap * sizeof(*h));
	for (i = 0; i < a->nr_acc; i++)
		h[reg_slot(a, a->acc[i].map, a->acc[i].off, a->acc[i].width)] = i;
	return 0;
}

static void put_access(struct mmio_an *a, const struct access *x)
{
	struct access *r;
	size_t i;

	if (a->nr_acc == a->cap_acc && reg_grow(a) < 0) {
		a->acc_full = true;
		return;
	}
	i = reg_slot(a, x->map, x->off, x->width);
	if (a->hash[i] == UINT32_MAX) {
		a->hash[i] = a->nr_acc;
		r = &a->acc[a->nr_acc++];
		*r = *x;
		r->r = r->w = r->o = 0;
	} else {
		r = &a->acc[a->hash[i]];
	}
	r->func = x->func;
	r->r += x->op == MMIO_READ;
	r->w += x->op == MMIO_WRITE;
	r->o += x->op != MMIO_READ && x->op != MMIO_WRITE;
}

static void log_lost(struct mmio_an *a, const struct tep_record *rec)
{
	char ts[32];

	a->lost_lines++;
	an_ts(ts, sizeof(ts), rec->ts);
	if (rec->missed_events > 0) {
		a->lost_events += rec->missed_events;
		if (a->log)
			fprintf(a->log, "MARK %s Lost %lld events.\n", ts, rec->missed_events);
	} else {
		a->lost_unknown++;
		if (a->log)
			fprintf(a->log, "MARK %s Lost an unknown number of events.\n", ts);
	}
}

static int on_rw(struct mmio_an *a, struct tep_handle *tep, const struct tep_record *rec,
		 const char *ts)
{
	const struct mmio_ids *ids = &a->ids;
	uint64_t phys, value, pc, op, width;
	struct access x = { 0 };
	int64_t id;
	int m;

	if (!an_u64(rec, ids->rw_phys, &phys) || !an_u64(rec, ids->rw_value, &value) ||
	    !an_u64(rec, ids->rw_pc, &pc) || !an_i64(rec, ids->rw_id, &id) ||
	    !an_u64(rec, ids->rw_op, &op) || !an_u64(rec, ids->rw_width, &width)) {
		a->bad++;
		return 0;
	}
	if (op == MMIO_READ || op == MMIO_WRITE) {
		if (a->log)
			fprintf(a->log, "%c %u %s %d 0x%" PRIx64 " 0x%" PRIx64 " 0x%" PRIx64 " 0\n",
				op == MMIO_READ ? 'R' : 'W', (unsigned int)width, ts, (int)id, phys,
				value, pc);
		if (op == MMIO_READ)
			a->reads++;
		else
			a->writes++;
	} else if (op == MMIO_UNKNOWN_OP) {
		if (a->log)
			fprintf(a->log, "UNKNOWN %s %d 0x%" PRIx64 " %02x,%02x,%02x 0x%" PRIx64 " 0\n",
				ts, (int)id, phys, (unsigned int)(value >> 16) & 0xff,
				(unsigned int)(value >> 8) & 0xff, (unsigned int)value & 0xff, pc);
		a->unknown++;
	} else {
		a->bad++;
		return 0;
	}
	m = map_find(a, id);
	x.map = m < 0 ? UINT32_MAX : (uint32_t)m;
	x.off = m < 0 || phys < a->maps[m].phys ? phys : phys - a->maps[m].phys;
	if (m >= 0 && phys < a->maps[m].phys)
		x.map = UINT32_MAX;
	x.op = op;
	x.width = width;
	x.func = func_index(a, tep, pc);
	if (x.func != UINT32_MAX) {
		if (op == MMIO_READ)
			a->funcs[x.func].reads++;
		else if (op == MMIO_WRITE)
			a->funcs[x.func].writes++;
		else
			a->funcs[x.func].other++;
	}
	put_access(a, &x);
	return 0;
}

static int on_map(struct mmio_an *a, const struct tep_record *rec, const char *ts)
{
	const struct mmio_ids *ids = &a->ids;
	uint64_t phys, virt, len, op;
	struct map *m;
	int64_t id;

	if (!an_u64(rec, ids->m_phys, &phys) || !an_u64(rec, ids->m_virt, &virt) ||
	    !an_u64(rec, ids->m_len, &len) || !an_i64(rec, ids->m_id, &id) ||
	    !an_u64(rec, ids->m_op, &op) || (op != MMIO_PROBE && op != MMIO_UNPROBE)) {
		a->bad++;
		return 0;
	}
	if (op == MMIO_UNPROBE) {
		int i = map_find(a, id);

		if (i >= 0)
			a->maps[i].unmapped = true;
		a->nr_unmap++;
		if (a->log)
			fprintf(a->log, "UNMAP %s %d 0x0 0\n", ts, (int)id);
		return 0;
	}
	a->nr_map++;
	if (a->log)
		fprintf(a->log, "MAP %s %d 0x%" PRIx64 " 0x%" PRIx64 " 0x%" PRIx64 " 0x0 0\n", ts, (int)id,
			phys, virt, len);
	if (a->nr_maps >= MAX_MAPS)
		return 0;
	m = realloc(a->maps, (a->nr_maps + 1) * sizeof(*m));
	if (!m)
		return -ENOMEM;
	a->maps = m;
	a->maps[a->nr_maps++] = (struct map){ .id = id, .phys = phys, .virt = virt, .len = len,
					      .ts = rec->ts };
	return 0;
}

/**
 * mmio_an_record() - feed one record (in timestamp order)
 * @a: the analysis
 * @tep: the trace's event handle
 * @rec: the record
 *
 * Return: 0 or -ENOMEM.
 */
int mmio_an_record(struct mmio_an *a, struct tep_handle *tep, struct tep_record *rec)
{
	char ts[32], buf[1024];
	int id;

	if (a->ids.tep != tep)
		ids_init(&a->ids, tep);
	if (rec->missed_events)
		log_lost(a, rec);
	id = tep_data_type(tep, rec);
	if (id < 0 || (id != a->ids.rw && id != a->ids.map && id != a->ids.print))
		return 0;
	an_ts(ts, sizeof(ts), rec->ts);
	if (id == a->ids.rw)
		return on_rw(a, tep, rec, ts);
	if (id == a->ids.map)
		return on_map(a, rec, ts);
	if (an_str(rec, a->ids.p_buf, buf, sizeof(buf))) {
		a->marks++;
		if (a->log)
			fprintf(a->log, "MARK %s %s\n", ts, buf);
	}
	return 0;
}

static int by_map_off(const void *x, const void *y)
{
	const struct access *a = x, *b = y;

	if (a->map != b->map)
		return a->map < b->map ? -1 : 1;
	if (a->off != b->off)
		return a->off < b->off ? -1 : 1;
	return (int)a->width - (int)b->width;
}

/**
 * mmio_an_finish() - sort the accesses by map and offset
 * @a: the analysis
 *
 * Return: 0.
 */
int mmio_an_finish(struct mmio_an *a)
{
	free(a->hash);
	a->hash = NULL;
	if (a->nr_acc)
		qsort(a->acc, a->nr_acc, sizeof(*a->acc), by_map_off);
	return 0;
}

/**
 * mmio_an_entries() - whether the trace had mmiotrace entries (its log aside)
 * @a: the analysis
 *
 * Return: true when a map, unmap, read, write or unknown entry was seen.
 */
bool mmio_an_entries(const struct mmio_an *a)
{
	return a->reads || a->writes || a->unknown || a->nr_map || a->nr_unmap;
}

/**
 * mmio_an_any() - whether the trace had mmiotrace entries, or its log was asked for
 * @a: the analysis
 *
 * Return: true when there is something to report.
 */
bool mmio_an_any(const struct mmio_an *a)
{
	return a->log || a->reads || a->writes || a->unknown || a->nr_map || a->nr_unmap;
}

static int by_func_total(const void *x, const void *y)
{
	const struct func *a = *(const struct func *const *)x, *b = *(const struct func *const *)y;
	uint64_t ta = a->reads + a->writes + a->other, tb = b->reads + b->writes + b->other;

	if (ta != tb)
		return ta < tb ? 1 : -1;
	return strcmp(a->name, b->name);
}

static const struct func **sorted_funcs(const struct mmio_an *a)
{
	const struct func **v = malloc((a->nr_funcs + 1) * sizeof(*v));
	unsigned int i;

	if (!v)
		return NULL;
	for (i = 0; i < a->nr_funcs; i++)
		v[i] = &a->funcs[i];
	qsort(v, a->nr_funcs, sizeof(*v), by_func_total);
	return v;
}

/* Calls @fn once per register, in map and offset order. */
static void each_register(const struct mmio_an *a, void (*fn)(const struct mmio_an *a,
			  const struct access *first, uint64_t reads, uint64_t writes,
			  uint64_t other, void *arg), void *arg)
{
	size_t i;

	for (i = 0; i < a->nr_acc; i++)
		fn(a, &a->acc[i], a->acc[i].r, a->acc[i].w, a->acc[i].o, arg);
}

struct print_ctx {
	FILE *f;
	uint32_t map;
	unsigned int listed, left;
	bool brief;
};

static void print_reg(const struct mmio_an *a, const struct access *x, uint64_t r, uint64_t w,
		      uint64_t o, void *arg)
{
	struct print_ctx *p = arg;

	if (x->map != p->map) {
		p->map = x->map;
		p->listed = 0;
		if (x->map == UINT32_MAX)
			fprintf(p->f, "    accesses through maps made before the recording (by address):\n");
		else
			fprintf(p->f, "    map %" PRId64 " (0x%" PRIx64 ", 0x%" PRIx64 " bytes) by "
				"register offset:\n", a->maps[x->map].id, a->maps[x->map].phys,
				a->maps[x->map].len);
	}
	if (p->listed++ >= (p->brief ? 8 : MAX_LISTED)) {
		p->left++;
		return;
	}
	fprintf(p->f, "      0x%06" PRIx64 " width %u: %" PRIu64 " reads, %" PRIu64 " writes",
		x->off, x->width, r, w);
	if (o)
		fprintf(p->f, ", %" PRIu64 " unknown", o);
	fprintf(p->f, "\n");
}

/**
 * mmio_an_print() - the summary
 * @a: a finished analysis
 * @f: where it goes
 * @brief: the short form of the default report
 */
void mmio_an_print(const struct mmio_an *a, FILE *f, bool brief)
{
	const struct func **v;
	struct print_ctx p = { .f = f, .map = UINT32_MAX - 1, .brief = brief };
	unsigned int i;

	fprintf(f, "  mmiotrace: %" PRIu64 " maps, %" PRIu64 " unmaps, %" PRIu64 " reads, %" PRIu64
		" writes, %" PRIu64 " unknown, %" PRIu64 " markers; lost: %" PRIu64 " events at %"
		PRIu64 " points%s\n", a->nr_map, a->nr_unmap, a->reads, a->writes, a->unknown,
		a->marks, a->lost_events, a->lost_lines,
		a->lost_unknown ? " (some of unknown count)" : "");
	for (i = 0; i < a->nr_maps && i < (brief ? 4u : MAX_MAPS); i++)
		fprintf(f, "    map %" PRId64 ": 0x%" PRIx64 " + 0x%" PRIx64 "%s\n", a->maps[i].id,
			a->maps[i].phys, a->maps[i].len, a->maps[i].unmapped ? " (unmapped)" : "");
	if (a->reads + a->writes + a->unknown) {
		if (a->no_pc == a->reads + a->writes + a->unknown) {
			fprintf(f, "    per function: no pc recorded (boot the guest with "
				"mmiotrace.trace_pc=1)\n");
		} else if ((v = sorted_funcs(a))) {
			fprintf(f, "    per guest function (pc resolved with the guest's kallsyms):\n");
			for (i = 0; i < a->nr_funcs && i < (brief ? 5u : MAX_LISTED); i++)
				fprintf(f, "      %-40s %9" PRIu64 " reads %9" PRIu64 " writes\n",
					v[i]->name, v[i]->reads, v[i]->writes);
			free(v);
		}
	}
	each_register(a, print_reg, &p);
	if (p.left)
		fprintf(f, "      (%u more registers not listed)\n", p.left);
	if (a->acc_full)
		fprintf(f, "    note: too many distinct registers; the per-register figures are partial\n");
	if (a->bad)
		fprintf(f, "    note: %" PRIu64 " entries could not be decoded\n", a->bad);
}

static void json_reg(const struct mmio_an *a, const struct access *x, uint64_t r, uint64_t w,
		     uint64_t o, void *arg)
{
	struct jw *jw = arg;

	jw_obj(jw, NULL);
	if (x->map == UINT32_MAX)
		jw_null(jw, "map_id");
	else
		jw_i64(jw, "map_id", a->maps[x->map].id);
	jw_u64(jw, x->map == UINT32_MAX ? "phys" : "offset", x->off);
	jw_u64(jw, "width", x->width);
	jw_u64(jw, "reads", r);
	jw_u64(jw, "writes", w);
	jw_u64(jw, "unknown", o);
	jw_end(jw, '}');
}

/**
 * mmio_an_json() - the summary as the member "mmiotrace"
 * @a: a finished analysis
 * @w: the writer, inside an object
 */
void mmio_an_json(const struct mmio_an *a, struct jw *w)
{
	const struct func **v = sorted_funcs(a);
	unsigned int i;

	jw_obj(w, "mmiotrace");
	jw_u64(w, "maps", a->nr_map);
	jw_u64(w, "unmaps", a->nr_unmap);
	jw_u64(w, "reads", a->reads);
	jw_u64(w, "writes", a->writes);
	jw_u64(w, "unknown", a->unknown);
	jw_u64(w, "markers", a->marks);
	jw_u64(w, "lost_events", a->lost_events);
	jw_u64(w, "lost_points", a->lost_lines);
	jw_u64(w, "accesses_without_pc", a->no_pc);
	jw_arr(w, "map_list");
	for (i = 0; i < a->nr_maps; i++) {
		jw_obj(w, NULL);
		jw_i64(w, "map_id", a->maps[i].id);
		jw_u64(w, "phys", a->maps[i].phys);
		jw_u64(w, "len", a->maps[i].len);
		jw_u64(w, "ts", a->maps[i].ts);
		jw_bool(w, "unmapped", a->maps[i].unmapped);
		jw_end(w, '}');
	}
	jw_end(w, ']');
	jw_arr(w, "functions");
	for (i = 0; v && i < a->nr_funcs; i++) {
		jw_obj(w, NULL);
		jw_str(w, "function", v[i]->name);
		jw_u64(w, "reads", v[i]->reads);
		jw_u64(w, "writes", v[i]->writes);
		jw_u64(w, "unknown", v[i]->other);
		jw_end(w, '}');
	}
	jw_end(w, ']');
	free(v);
	jw_arr(w, "registers");
	each_register(a, json_reg, w);
	jw_end(w, ']');
	jw_end(w, '}');
}
