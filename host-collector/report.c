// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * `report DIR`: a summary of a recorded run. Event counts come from the
 * trace.dat files themselves, read with libtracecmd (what trace-cmd and
 * KernelShark will show); loss, bad pages, problems and the clock mapping come
 * from manifest.json, which is read as untrusted input (json.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <event-parse.h>
#include <trace-cmd.h>

#include "collect.h"
#include "json.h"

#define MANIFEST_MAX	(64u << 20)

struct ev_count {
	int id;
	uint64_t n;
	char name[160];
};

struct ev_counter {
	struct ev_count *v;
	size_t nr, cap, last;
	uint64_t total;
	int err;
};

static void usage(FILE *f)
{
	fprintf(f,
"Usage: virtio-trace-collect report DIR\n"
"\n"
"Summarise a run recorded by `virtio-trace-collect record -o DIR`: for the\n"
"host and each guest, the events per type (counted in the trace.dat files\n"
"with libtracecmd), lost events, bad pages and problems (from manifest.json),\n"
"and for each guest the time synchronisation method, its bound, the smallest\n"
"probe round trip and the clock-mapping epochs of every vCPU.\n"
"\n"
"  -h, --help   print this help and exit\n"
"\n"
"Exit status: 0 success; 1 DIR has no readable, well-formed manifest.json or\n"
"a trace file it names cannot be read; 2 usage error.\n");
}

/* Text from the manifest goes to a terminal: no control characters. */
static void put_safe(const char *s)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");

	for (; *p; p++) {
		if (*p < 0x20 || *p == 0x7f)
			putchar('?');
		else if (p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f)	/* C1 controls */
			putchar('?'), p++;
		else
			putchar(*p);
	}
}

static uint64_t u64_field(const struct json_value *obj, const char *key, bool *bad)
{
	const struct json_value *v = json_get(obj, key);
	uint64_t x = 0;

	if (v && json_u64(v, &x) < 0)
		*bad = true;
	return x;
}

static double num_field(const struct json_value *obj, const char *key, bool *bad)
{
	const struct json_value *v = json_get(obj, key);
	double d = 0;

	if (v && json_double(v, &d) < 0)
		*bad = true;
	return d;
}

static int count_record(struct tracecmd_input *handle, struct tep_record *rec, int cpu, void *arg)
{
	struct ev_counter *c = arg;
	struct tep_handle *tep = tracecmd_get_tep(handle);
	int id = tep_data_type(tep, rec);
	size_t i;

	c->total++;
	if (c->nr && c->v[c->last].id == id) {
		c->v[c->last].n++;
		return 0;
	}
	for (i = 0; i < c->nr; i++)
		if (c->v[i].id == id)
			break;
	if (i == c->nr) {
		struct tep_event *ev = tep_find_event(tep, id);

		if (c->nr == c->cap) {
			size_t cap = c->cap ? c->cap * 2 : 64;
			struct ev_count *v = realloc(c->v, cap * sizeof(*v));

			if (!v) {
				c->err = -ENOMEM;
				return -1;
			}
			c->v = v;
			c->cap = cap;
		}
		c->v[i].id = id;
		c->v[i].n = 0;
		if (ev)
			snprintf(c->v[i].name, sizeof(c->v[i].name), "%s:%s", ev->system, ev->name);
		else
			snprintf(c->v[i].name, sizeof(c->v[i].name), "unknown:id%d", id);
		c->nr++;
	}
	c->v[i].n++;
	c->last = i;
	return 0;
}

static int by_count(const void *a, const void *b)
{
	const struct ev_count *x = a, *y = b;

	if (x->n != y->n)
		return x->n < y->n ? 1 : -1;
	return strcmp(x->name, y->name);
}

/* Events per type in one trace.dat file, as libtracecmd reads them. */
static int count_events(const char *path, struct ev_counter *c)
{
	struct tracecmd_input *h;

	h = tracecmd_open(path, TRACECMD_FL_LOAD_NO_PLUGINS);
	if (!h)
		return -EBADMSG;
	if (tracecmd_iterate_events(h, NULL, 0, count_record, c) < 0 && !c->err)
		c->err = -EIO;
	tracecmd_close(h);
	if (c->err)
		return c->err;
	qsort(c->v, c->nr, sizeof(*c->v), by_count);
	return 0;
}

/* A file name from the manifest: a plain name inside DIR, nothing else. */
static bool file_name_ok(const char *s)
{
	return s && s[0] && s[0] != '.' && !strchr(s, '/') && strlen(s) < 256;
}

static void print_sync(const struct json_value *sync, bool *bad)
{
	const struct json_value *v, *ep;

	if (!json_is(sync, JSON_OBJECT)) {
		printf("  sync: not recorded\n");
		return;
	}
	printf("  sync method: ");
	put_safe(json_string(json_get(sync, "method")));
	if (json_string(json_get(sync, "why"))) {
		printf(" (");
		put_safe(json_string(json_get(sync, "why")));
		printf(")");
	}
	printf("\n  sync bound: %.1f ns\n", num_field(sync, "bound_ns", bad));
	v = json_get(sync, "probes");
	if (json_is(v, JSON_ARRAY) && v->count) {
		const struct json_value *p, *best = NULL;
		double min = 0;

		for (p = v->child; p; p = p->next) {
			double rtt = num_field(p, "min_rtt_ns", bad);

			if (!best || rtt < min) {
				best = p;
				min = rtt;
			}
		}
		printf("  min RTT: %.1f ns (cpu%" PRIu64 ")\n", min, u64_field(best, "cpu", bad));
		for (p = v->child; p; p = p->next)
			printf("    cpu%" PRIu64 ": %" PRIu64 " probes, min RTT %.1f ns\n",
			       u64_field(p, "cpu", bad), u64_field(p, "samples", bad),
			       num_field(p, "min_rtt_ns", bad));
	} else {
		printf("  min RTT: none (no probes)\n");
	}
	v = json_get(sync, "epochs");
	printf("  epochs: %zu\n", json_is(v, JSON_ARRAY) ? v->count : 0);
	for (ep = json_is(v, JSON_ARRAY) ? v->child : NULL; ep; ep = ep->next) {
		bool drift = false;
		int64_t off = 0;

		if (json_i64(json_get(ep, "offset"), &off) < 0 ||
		    json_bool(json_get(ep, "drift"), &drift) < 0)
			*bad = true;
		printf("    cpu%" PRIu64 ": from host TSC %" PRIu64 " offset %" PRId64 " ratio %"
		       PRIu64 "/2^%" PRIu64 " source ", u64_field(ep, "cpu", bad),
		       u64_field(ep, "host_tsc_from", bad), off, u64_field(ep, "ratio", bad),
		       u64_field(ep, "frac_bits", bad));
		put_safe(json_string(json_get(ep, "source")));
		printf(" drift %s bound %.1f ns\n", drift ? "yes" : "no", num_field(ep, "bound_ns", bad));
	}
}

/* Every CPU's figures: what reached the host, and what the agent says it sent. */
static void print_cpus(const struct json_value *cpus, bool host, bool *bad)
{
	const struct json_value *c;

	if (!json_is(cpus, JSON_ARRAY) || !cpus->count)
		return;
	printf("  per CPU:\n");
	for (c = cpus->child; c; c = c->next) {
		printf("    cpu%" PRIu64 ": %" PRIu64 " events, %" PRIu64 " pages, %" PRIu64 " bytes",
		       u64_field(c, "cpu", bad), u64_field(c, "events", bad), u64_field(c, "pages", bad),
		       u64_field(c, "bytes", bad));
		if (!host)
			printf("; agent: %" PRIu64 " pages, %" PRIu64 " bytes",
			       u64_field(c, "agent_pages", bad), u64_field(c, "agent_bytes", bad));
		printf("\n");
	}
}

/* One trace (the host or a guest): Return: 0, or -errno if its file cannot be read. */
static int report_trace(const char *dir, const struct json_value *t, bool host)
{
	const struct json_value *cpus = json_get(t, "cpus"), *lost = json_get(t, "lost_events");
	const struct json_value *c, *file = json_get(t, "file");
	uint64_t man_events = 0, after_loss = 0, bad_pages = 0, frag = 0, dropped = 0;
	struct ev_counter cnt = { 0 };
	const char *problems;
	bool bad = false;
	size_t i;
	int ret = 0;

	if (!json_is(t, JSON_OBJECT)) {
		fprintf(stderr, "virtio-trace-collect report: %s/manifest.json: a trace entry is not "
			"an object\n", dir);
		return -EBADMSG;
	}
	if (host) {
		printf("host: ");
	} else {
		printf("guest ");
		put_safe(json_string(json_get(t, "name")));
		printf(": ");
	}
	for (c = json_is(cpus, JSON_ARRAY) ? cpus->child : NULL; c; c = c->next) {
		man_events += u64_field(c, "events", &bad);
		after_loss += u64_field(c, "pages_after_loss", &bad);
		bad_pages += u64_field(c, "bad_pages", &bad);
		frag += u64_field(c, "fragment_bytes", &bad);
		dropped += u64_field(c, "dropped_pages_max_size", &bad);
	}
	if (json_is(file, JSON_NULL) || !file) {
		printf("no trace file was written\n");
	} else if (!file_name_ok(json_string(file))) {
		printf("?\n");
		fprintf(stderr, "virtio-trace-collect report: %s/manifest.json: the file of '%s' is "
			"not a plain file name\n", dir, host ? "host" : "a guest");
		ret = -EBADMSG;
	} else {
		char path[4400];

		put_safe(json_string(file));
		printf(", %zu CPUs, clock ", json_is(cpus, JSON_ARRAY) ? cpus->count : 0);
		put_safe(json_string(json_get(t, "clock")));
		if (json_string(json_get(t, "agent"))) {
			printf(", agent ");
			put_safe(json_string(json_get(t, "agent")));
		}
		printf("\n");
		snprintf(path, sizeof(path), "%s/%s", dir, json_string(file));
		if (access(path, R_OK) < 0) {
			ret = -errno;
			fprintf(stderr, "virtio-trace-collect report: cannot read %s: %s\n", path,
				strerror(-ret));
		} else {
			ret = count_events(path, &cnt);
			if (ret < 0)
				fprintf(stderr, "virtio-trace-collect report: %s: libtracecmd cannot "
					"read it (%s)\n", path, strerror(-ret));
		}
		if (ret == 0) {
			printf("  events: %" PRIu64 "\n", cnt.total);
			for (i = 0; i < cnt.nr; i++)
				printf("    %12" PRIu64 "  %s\n", cnt.v[i].n, cnt.v[i].name);
			if (cnt.total != man_events)
				printf("  note: manifest.json counts %" PRIu64 " events\n", man_events);
		}
	}
	printf("  lost events in pages: %" PRIu64 "\n", u64_field(lost, "in_pages", &bad));
	printf("  pages after loss: %" PRIu64 "\n", after_loss);
	printf("  overrun (%s ring buffer): %" PRIu64 "\n", host ? "host" : "guest",
	       u64_field(lost, "overrun", &bad));
	printf("  bad pages: %" PRIu64 "\n", bad_pages);
	if (frag)
		printf("  fragment bytes: %" PRIu64 "\n", frag);
	if (dropped)
		printf("  pages dropped at --max-size: %" PRIu64 "\n", dropped);
	print_cpus(cpus, host, &bad);
	if (!host)
		print_sync(json_get(t, "sync"), &bad);
	problems = json_string(json_get(t, "problems"));
	printf("  problems: ");
	put_safe(problems && problems[0] ? problems : "none");
	printf("\n");
	if (bad)
		printf("  note: some manifest figures are not valid numbers (shown as 0)\n");
	free(cnt.v);
	return ret;
}

static int read_manifest(const char *dir, char **text, size_t *len)
{
	char path[4200];
	struct stat st;
	size_t have = 0;
	ssize_t n;
	int fd, ret = 0;

	snprintf(path, sizeof(path), "%s/manifest.json", dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		ret = -errno;
		goto err_close_fd;
	}
	if (!S_ISREG(st.st_mode) || st.st_size > MANIFEST_MAX) {
		ret = S_ISREG(st.st_mode) ? -EFBIG : -EINVAL;
		goto err_close_fd;
	}
	*text = malloc(st.st_size + 1);
	if (!*text) {
		ret = -ENOMEM;
		goto err_close_fd;
	}
	while (have < (size_t)st.st_size) {
		n = read(fd, *text + have, st.st_size - have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		have += n;
	}
	*len = have;
err_close_fd:
	close(fd);
	return ret;
}

/**
 * report_main() - the report subcommand
 * @argc: argument count
 * @argv: arguments, argv[0] is "report"
 *
 * Return: EXIT_OK, EXIT_FAIL (no manifest, or a file cannot be read) or
 * EXIT_USAGE.
 */
int report_main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const struct json_limits lim = { .max_depth = 16, .max_string = 1u << 16 };
	const struct json_value *root, *v, *g;
	struct json_error jerr;
	struct json_doc *doc;
	const char *dir;
	char *text = NULL;
	size_t len = 0;
	int c, ret, status = EXIT_OK;
	bool bad = false, flag;

	optind = 1;
	while ((c = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			usage(stdout);
			return EXIT_OK;
		default:
			fprintf(stderr, "Try 'virtio-trace-collect report --help'.\n");
			return EXIT_USAGE;
		}
	}
	if (argc - optind != 1) {
		usage(stderr);
		return EXIT_USAGE;
	}
	dir = argv[optind];
	ret = read_manifest(dir, &text, &len);
	if (ret < 0) {
		fprintf(stderr, "virtio-trace-collect report: cannot read %s/manifest.json: %s%s\n",
			dir, strerror(-ret), ret == -ENOENT ? " (is DIR the -o of a finished record? "
			"a killed run needs `virtio-trace-collect recover DIR` first)" : "");
		return EXIT_FAIL;
	}
	doc = json_parse(text, len, &lim, &jerr);
	free(text);
	if (!doc) {
		fprintf(stderr, "virtio-trace-collect report: %s/manifest.json:%u: %s (byte %zu)\n",
			dir, jerr.line, jerr.msg, jerr.offset);
		return EXIT_FAIL;
	}
	root = json_root(doc);
	v = json_get(root, "guests");
	if (!json_is(root, JSON_OBJECT) || !json_is(v, JSON_ARRAY)) {
		fprintf(stderr, "virtio-trace-collect report: %s/manifest.json is not a "
			"virtio-trace-collect manifest (no \"guests\" array)\n", dir);
		json_free(doc);
		return EXIT_FAIL;
	}

	printf("run: ");
	put_safe(dir);
	printf("\nrecorded by ");
	put_safe(json_string(json_get(root, "tool")));
	printf(" ");
	put_safe(json_string(json_get(root, "version")));
	printf(" at ");
	put_safe(json_string(json_get(root, "created")));
	if (json_bool(json_get(root, "recovered"), &flag) == 0 && flag)
		printf(" (recovered after a killed run)");
	printf("\nfile version %" PRIu64 ", compression ", u64_field(root, "file_version", &bad));
	put_safe(json_string(json_get(root, "compression")));
	printf("\nhost TSC: %" PRIu64 " kHz (", u64_field(json_get(root, "host_tsc"), "khz", &bad));
	put_safe(json_string(json_get(json_get(root, "host_tsc"), "method")));
	printf(")\n");

	if (json_is(json_get(root, "host"), JSON_OBJECT)) {
		printf("\n");
		if (report_trace(dir, json_get(root, "host"), true) < 0)
			status = EXIT_FAIL;
	}
	for (g = v->child; g; g = g->next) {
		printf("\n");
		if (report_trace(dir, g, false) < 0)
			status = EXIT_FAIL;
	}
	if (!v->count)
		printf("\nno guests were recorded\n");
	json_free(doc);
	return status;
}
