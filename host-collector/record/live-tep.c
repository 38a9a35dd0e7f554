// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The live view's formats (see live.c's top comment): a trace's kallsyms in
 * a table of ours, its print formats checked to stay within an event's copy,
 * and its libtraceevent handle made from its spool's bundle.
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
		/* One more than this one: the NUL function that ends the table. */
		if (vt_grow((void **)&k->map, &cap, k->nr + 2, sizeof(*k->map)) < 0)
			goto err;
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

void live_drop_tep(struct ltrace *t)
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
int live_load_tep(struct live *l, struct ltrace *t)
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
	live_drop_tep(t);
	t->tep = tep;
	t->ksyms = ksyms;
	t->plugins = tep_load_plugins(tep);
	/* After the plugins: an unbounded print format is not used, whoever registered it. */
	if (!t->host)
		bound_prints(t, tep);
	return 0;
}
