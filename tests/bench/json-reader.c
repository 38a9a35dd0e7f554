// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * json-reader: one harness for bench-json.sh, built three times: with -DOURS
 * over the collector's host-collector/json.c, with -DJANSSON over jansson
 * (json_loadb(), any value at the top as ours takes, NUL in strings refused),
 * else over json-c (its strictest: JSON_TOKENER_STRICT |
 * JSON_TOKENER_VALIDATE_UTF8, a whole document with nothing after it).
 *
 *   json-reader FILE        parse 7 times: "MEDIAN MIN MAX" in ms
 *   json-reader FILE rss    parse once: the peak RSS in KiB
 *   json-reader -a FILE     "ACCEPTED" or "refused"
 *   json-reader -u FILE     FILE is [N]: N as the reader gives it back as a
 *                           64-bit unsigned integer, or "refused"
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>

#ifdef OURS
#include "json.h"

static int parse_u64(const char *b, size_t n, unsigned long long *out)
{
	struct json_limits lim = { 64, 1u << 24, 1u << 20 };
	struct json_doc *d = json_parse(b, n, &lim, NULL);
	uint64_t v = 0;
	int ret = -1;

	if (!d)
		return -1;
	if (out && json_u64(json_at(json_root(d), 0), &v) == 0) {
		*out = v;
		ret = 0;
	} else if (!out) {
		ret = 0;
	}
	json_free(d);
	return ret;
}
#elif defined(JANSSON)
#include <jansson.h>

static int parse_u64(const char *b, size_t n, unsigned long long *out)
{
	json_t *o = json_loadb(b, n, JSON_DECODE_ANY, NULL);
	json_t *e;
	int ret = -1;

	if (!o)
		return -1;
	if (!out) {
		ret = 0;
	} else if ((e = json_array_get(o, 0)) && json_is_integer(e)) {
		/* json_int_t is long long: past INT64_MAX there is nothing to give back */
		*out = (unsigned long long)json_integer_value(e);
		ret = 0;
	}
	json_decref(o);
	return ret;
}
#else
#include <json-c/json.h>

static int parse_u64(const char *b, size_t n, unsigned long long *out)
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
	if (o && out) {
		struct json_object *e = json_object_array_get_idx(o, 0);

		if (!e || !json_object_is_type(e, json_type_int))
			o = (json_object_put(o), NULL);
		else
			*out = json_object_get_uint64(e);
	}
	json_object_put(o);
	return o ? 0 : -1;
}
#endif

static int parse(const char *b, size_t n)
{
	return parse_u64(b, n, NULL);
}

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
	int u64 = argc == 3 && !strcmp(argv[1], "-u");
	unsigned long long v;
	struct rusage ru;
	double t[7];
	char *buf;
	long n;
	FILE *f;
	int i;

	if (argc < 2)
		return 2;
	f = fopen(argv[accept || u64 ? 2 : 1], "rb");
	if (!f || fseek(f, 0, SEEK_END) < 0 || (n = ftell(f)) < 0)
		return 1;
	rewind(f);
	buf = malloc(n + 1);
	if (!buf || fread(buf, 1, n, f) != (size_t)n)
		return 1;
	fclose(f);
	if (u64) {
		if (parse_u64(buf, n, &v))
			printf("refused\n");
		else
			printf("%llu\n", v);
		return 0;
	}
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
