// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * json-reader: one harness for bench-json.sh, built twice: with -DOURS over
 * the collector's host-collector/json.c, else over json-c (its strictest:
 * JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8, a whole document with
 * nothing after it).
 *
 *   json-reader FILE        parse 7 times: "MEDIAN MIN MAX" in ms
 *   json-reader FILE rss    parse once: the peak RSS in KiB
 *   json-reader -a FILE     "ACCEPTED" or "refused"
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>

#ifdef OURS
#include "json.h"

static int parse(const char *b, size_t n)
{
	struct json_limits lim = { 64, 1u << 24, 1u << 20 };
	struct json_doc *d = json_parse(b, n, &lim, NULL);

	json_free(d);
	return d ? 0 : -1;
}
#else
#include <json-c/json.h>

static int parse(const char *b, size_t n)
{
	struct json_tokener *tok = json_tokener_new_ex(64);
	struct json_object *o;

	if (!tok)
		return -1;
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	o = json_tokener_parse_ex(tok, b, (int)n);
	if (o && json_tokener_get_parse_end(tok) != n) {
		json_object_put(o);
		o = NULL;
	}
	/* A bare number ends only at the end of the input: say that it has come. */
	if (!o && json_tokener_get_error(tok) == json_tokener_continue)
		o = json_tokener_parse_ex(tok, "", 1);
	json_tokener_free(tok);
	json_object_put(o);
	return o ? 0 : -1;
}
#endif

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	int accept = argc == 3 && !strcmp(argv[1], "-a");
	struct rusage ru;
	double t[7];
	char *buf;
	long n;
	FILE *f;
	int i;

	if (argc < 2)
		return 2;
	f = fopen(argv[accept ? 2 : 1], "rb");
	if (!f || fseek(f, 0, SEEK_END) < 0 || (n = ftell(f)) < 0)
		return 1;
	rewind(f);
	buf = malloc(n + 1);
	if (!buf || fread(buf, 1, n, f) != (size_t)n)
		return 1;
	fclose(f);
	if (accept) {
		printf("%s\n", parse(buf, n) ? "refused" : "ACCEPTED");
		return 0;
	}
	if (argc > 2) {
		if (parse(buf, n))
			return 1;
		getrusage(RUSAGE_SELF, &ru);
		printf("%ld\n", ru.ru_maxrss);
		return 0;
	}
	for (i = 0; i < 7; i++) {
		double t0 = now();

		if (parse(buf, n))
			return 1;
		t[i] = now() - t0;
	}
	qsort(t, 7, sizeof(t[0]), cmp);
	printf("%.1f %.1f %.1f\n", t[3] * 1e3, t[0] * 1e3, t[6] * 1e3);
	free(buf);
	return 0;
}
