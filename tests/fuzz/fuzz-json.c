// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * libFuzzer harness for the collector's JSON reader and writer (json.c), and
 * the QMP replies read through them (setup/qmp-reply.c): QEMU's monitor and
 * every manifest.json that `report` reads are input we did not write.
 *   - json_parse() with small limits, then every accessor on every value;
 *   - each string read is written back by json_write_string() (the one
 *     escaper of manifest.json and report --json) and read again: the same
 *     bytes, since what the reader accepts is valid UTF-8;
 *   - arbitrary bytes written by json_write_string() always read back as a
 *     JSON string: invalid UTF-8 only replaced (U+FFFD), nothing else changed;
 *   - and by json_write_string_html() (report --html's data block): no '<',
 *     '>', '&', U+2028 or U+2029 in what it writes, the same string read back;
 *   - qmp_parse_cpus_fast() and qmp_parse_uuid() on the input.
 * vt-fuzz-sources: host-collector/json.c host-collector/text.c host-collector/setup/qmp-reply.c
 * vt-fuzz-libs: -I host-collector -I host-collector/setup
 * vt-fuzz-args: -max_len=16384
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collect.h"
#include "json.h"
#include "qmp-reply.h"

int collect_quiet = 1;
int collect_verbose;
const char *collect_cmd;

void collect_log(int level, const char *fmt, ...)
{
}

/* Write @s as JSON and read it back: the reader's text, or NULL when it refused. */
static char *round_trip(const char *s, size_t *len)
{
	struct json_doc *d;
	char *out = NULL, *r = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&out, &n);

	if (!f)
		return NULL;
	json_write_string(f, s);
	fclose(f);
	d = json_parse(out, n, NULL, NULL);
	if (!d) {
		fprintf(stderr, "json_write_string() wrote what json_parse() refuses: %s\n", out);
		abort();
	}
	if (json_is(json_root(d), JSON_STRING)) {
		r = strdup(json_string(json_root(d)));
		*len = json_root(d)->len;
	}
	json_free(d);
	free(out);
	return r;
}

/* HTML mode: nothing in what it writes opens or ends markup in a <script>, and it reads back as @back. */
static void html_check(const char *s, const char *back, size_t len)
{
	struct json_doc *d;
	char *out = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&out, &n);

	if (!f)
		return;
	json_write_string_html(f, s);
	fclose(f);
	if (strpbrk(out, "<>&") || strstr(out, "\xe2\x80\xa8") || strstr(out, "\xe2\x80\xa9"))
		abort();
	d = json_parse(out, n, NULL, NULL);
	if (!d || !json_is(json_root(d), JSON_STRING) || json_root(d)->len != len ||
	    memcmp(json_string(json_root(d)), back, len))
		abort();
	json_free(d);
	free(out);
}

/*
 * The oracle, written apart from json.c: the length of the valid UTF-8
 * sequence at @p (RFC 3629: no overlongs, no surrogates, at most U+10FFFF),
 * or 0.
 */
static size_t oracle_utf8(const unsigned char *p, size_t n)
{
	static const unsigned char lo2[] = { 0x80, 0xa0, 0x80, 0x80, 0x90, 0x80, 0x80 };
	static const unsigned char hi2[] = { 0xbf, 0xbf, 0x9f, 0xbf, 0xbf, 0xbf, 0x8f };
	size_t need, i;
	int k;

	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		need = 2, k = 0;
	else if (p[0] == 0xe0)
		need = 3, k = 1;
	else if (p[0] == 0xed)
		need = 3, k = 2;
	else if (p[0] >= 0xe1 && p[0] <= 0xef)
		need = 3, k = 3;
	else if (p[0] == 0xf0)
		need = 4, k = 4;
	else if (p[0] >= 0xf1 && p[0] <= 0xf3)
		need = 4, k = 5;
	else if (p[0] == 0xf4)
		need = 4, k = 6;
	else
		return 0;
	if (n < need || p[1] < lo2[k] || p[1] > hi2[k])
		return 0;
	for (i = 2; i < need; i++)
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	return need;
}

static void walk(const struct json_value *v, unsigned int depth)
{
	const struct json_value *c;
	uint64_t u;
	int64_t i;
	double x;
	bool b;
	size_t k;

	(void)json_u64(v, &u);
	(void)json_i64(v, &i);
	(void)json_double(v, &x);
	(void)json_bool(v, &b);
	if (json_is(v, JSON_STRING) && strlen(json_string(v)) == v->len) {
		size_t len = 0;
		char *back = round_trip(json_string(v), &len);

		/* A string the reader took is valid UTF-8: it comes back unchanged. */
		if (!back || len != v->len || memcmp(back, json_string(v), len))
			abort();
		free(back);
	}
	if (json_is(v, JSON_OBJECT)) {
		for (c = v->child; c; c = c->next)
			if (c->key && strlen(c->key) == c->key_len && json_get(v, c->key) == NULL)
				abort();	/* every key finds a member */
	}
	for (c = v->child, k = 0; c; c = c->next, k++) {
		if (json_is(v, JSON_ARRAY) && json_at(v, k) != c)
			abort();
		if (depth < 64)
			walk(c, depth + 1);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct json_limits lim = { .max_depth = 16, .max_nodes = 4096, .max_string = 4096 };
	struct json_doc *d;
	uint32_t tids[8];
	unsigned int nr;
	char uuid[64], *s, *back;
	size_t len = 0;

	d = json_parse((const char *)data, size, &lim, NULL);
	if (d) {
		walk(json_root(d), 0);
		json_free(d);
	}
	(void)qmp_parse_cpus_fast((const char *)data, size, tids, 8, &nr);
	(void)qmp_parse_uuid((const char *)data, size, uuid, sizeof(uuid));

	/* Any bytes (up to the first NUL) as a string to write. */
	s = malloc(size + 1);
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	back = round_trip(s, &len);
	if (!back)
		abort();
	/* Read back: the bytes, each invalid one as U+FFFD (EF BF BD), nothing else changed. */
	{
		const unsigned char *p = (const unsigned char *)s;
		size_t left = strlen(s), j = 0, n;

		while (left) {
			n = oracle_utf8(p, left);
			if (n) {
				if (j + n > len || memcmp(back + j, p, n))
					abort();
				j += n;
			} else {
				if (j + 3 > len || memcmp(back + j, "\xef\xbf\xbd", 3))
					abort();
				j += 3;
				n = 1;
			}
			p += n;
			left -= n;
		}
		if (j != len)
			abort();
	}
	html_check(s, back, len);
	free(back);
	free(s);
	return 0;
}
