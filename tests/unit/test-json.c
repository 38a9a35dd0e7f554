// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The manifest's JSON reader (host-collector/json.c): valid documents parse
 * into exactly the values written, 64-bit integers come back exactly, every
 * escape decodes; malformed, truncated and hostile input (deep nesting, huge
 * numbers, bad escapes and UTF-8, over-limit sizes) is rejected with the
 * documented errno and the position of the fault, never a crash.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "json.h"

static const char t_manifest[] =
	"{\n"
	"  \"tool\": \"virtio-trace-collect\",\n"
	"  \"recovered\": false,\n"
	"  \"host\": null,\n"
	"  \"guests\": [\n"
	"    { \"name\": \"vm\\u00e9\", \"file\": \"guest-vm.dat\",\n"
	"      \"cpus\": [ { \"cpu\": 0, \"events\": 18446744073709551615 }, { \"cpu\": 1, \"events\": 0 } ],\n"
	"      \"sync\": { \"method\": \"probe\", \"bound_ns\": 136554.1,\n"
	"                \"epochs\": [ { \"cpu\": 0, \"offset\": -9223372036854775808, \"drift\": true } ] },\n"
	"      \"problems\": \"\" }\n"
	"  ]\n"
	"}\n";

/* Parse @s (its strlen) and expect failure with @err. */
static void t_reject(const char *s, int err)
{
	struct json_error e;
	struct json_doc *d;

	errno = 0;
	d = json_parse(s, strlen(s), NULL, &e);
	if (d)
		fail_msg("accepted: %s", s);
	assert_int_equal(errno, err);
	assert_true(e.msg[0] != 0);
	assert_true(e.offset <= strlen(s));
}

static struct json_doc *t_accept(const char *s)
{
	struct json_error e;
	struct json_doc *d = json_parse(s, strlen(s), NULL, &e);

	if (!d)
		fail_msg("rejected (%s at %zu): %s", e.msg, e.offset, s);
	return d;
}

static void test_manifest(void **state)
{
	struct json_doc *d = t_accept(t_manifest);
	const struct json_value *r = json_root(d), *g, *c, *ep;
	uint64_t u;
	int64_t i;
	double x;
	bool b;

	(void)state;
	assert_true(json_is(r, JSON_OBJECT));
	assert_int_equal(r->count, 4);
	assert_string_equal(json_string(json_get(r, "tool")), "virtio-trace-collect");
	assert_int_equal(json_bool(json_get(r, "recovered"), &b), 0);
	assert_false(b);
	assert_true(json_is(json_get(r, "host"), JSON_NULL));
	assert_null(json_get(r, "missing"));
	g = json_at(json_get(r, "guests"), 0);
	assert_non_null(g);
	assert_null(json_at(json_get(r, "guests"), 1));
	assert_string_equal(json_string(json_get(g, "name")), "vm\xc3\xa9");
	assert_string_equal(json_string(json_get(g, "problems")), "");
	c = json_get(g, "cpus");
	assert_int_equal(c->count, 2);
	assert_int_equal(json_u64(json_get(json_at(c, 0), "events"), &u), 0);
	assert_true(u == UINT64_MAX);
	assert_int_equal(json_u64(json_get(json_at(c, 1), "cpu"), &u), 0);
	assert_true(u == 1);
	assert_int_equal(json_double(json_get(json_get(g, "sync"), "bound_ns"), &x), 0);
	assert_true(x > 136554.09 && x < 136554.11);
	ep = json_at(json_get(json_get(g, "sync"), "epochs"), 0);
	assert_int_equal(json_i64(json_get(ep, "offset"), &i), 0);
	assert_true(i == INT64_MIN);
	assert_int_equal(json_bool(json_get(ep, "drift"), &b), 0);
	assert_true(b);
	/* Wrong types are refused, not coerced. */
	assert_null(json_string(json_get(ep, "offset")));
	assert_int_equal(json_u64(json_get(g, "name"), &u), -EINVAL);
	assert_int_equal(json_bool(json_get(g, "name"), &b), -EINVAL);
	assert_null(json_get(json_get(r, "guests"), "name"));
	assert_null(json_at(g, 0));
	assert_null(json_get(NULL, "x"));
	json_free(d);
	json_free(NULL);
}

static void test_scalars(void **state)
{
	static const char *const ok[] = {
		"0", "-0", "1", "-1", "1.5", "1e3", "1E+3", "1e-3", "-0.0e0", "true", "false",
		"null", "\"\"", "[]", "{}", " \t\r\n[ ]\n", "[[],{}]", "{\"\":0}", "[1,2,3]",
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		json_free(t_accept(ok[i]));
}

static void test_escapes(void **state)
{
	struct json_doc *d;
	const struct json_value *v;

	(void)state;
	d = t_accept("\"\\\" \\\\ \\/ \\b \\f \\n \\r \\t\"");
	assert_string_equal(json_string(json_root(d)), "\" \\ / \b \f \n \r \t");
	json_free(d);
	d = t_accept("\"\\u0041\\u00e9\\u20AC\\ud83d\\ude00\"");
	assert_string_equal(json_string(json_root(d)), "A\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
	json_free(d);
	/* An escaped NUL is kept, and the length says so. */
	d = t_accept("{\"a\\u0000b\": \"x\\u0000y\"}");
	v = json_root(d)->child;
	assert_int_equal(v->key_len, 3);
	assert_int_equal(v->len, 3);
	assert_memory_equal(v->str, "x\0y", 3);
	assert_null(json_get(json_root(d), "a"));
	json_free(d);
	/* Raw UTF-8 passes through. */
	d = t_accept("\"\xe2\x82\xac \xf0\x9f\x98\x80\"");
	assert_string_equal(json_string(json_root(d)), "\xe2\x82\xac \xf0\x9f\x98\x80");
	json_free(d);

	t_reject("\"\\x\"", EINVAL);
	t_reject("\"\\u12\"", EINVAL);
	t_reject("\"\\u12G4\"", EINVAL);
	t_reject("\"\\ud83d\"", EINVAL);		/* high surrogate alone */
	t_reject("\"\\ud83d\\u0041\"", EINVAL);	/* followed by a non-surrogate */
	t_reject("\"\\ude00\"", EINVAL);		/* low surrogate alone */
	t_reject("\"\\", EINVAL);
	t_reject("\"a\nb\"", EINVAL);		/* raw control character */
	t_reject("\"\t\"", EINVAL);
	t_reject("\"\xff\"", EINVAL);		/* invalid UTF-8 */
	t_reject("\"\xc0\x80\"", EINVAL);		/* overlong NUL */
	t_reject("\"\xed\xa0\x80\"", EINVAL);	/* encoded surrogate */
	t_reject("\"\xf4\x90\x80\x80\"", EINVAL);	/* beyond U+10FFFF */
	t_reject("\"\xe2\x82\"", EINVAL);		/* truncated sequence */
}

static void test_malformed(void **state)
{
	static const char *const bad[] = {
		"", " ", "[", "]", "{", "}", "[1,]", "[,1]", "{\"a\":1,}", "{\"a\" 1}", "{\"a\":}",
		"{a:1}", "{'a':1}", "['a']", "01", "-", "1.", ".5", "+1", "--1", "1e", "1e+",
		"NaN", "Infinity", "-Infinity", "tru", "nul", "falsey", "{} {}", "1 2", "[1 2]",
		"{\"a\":1 \"b\":2}", "[1]]", "{\"a\":1}}", "/* c */ 1", "[1] // c", "\"abc",
		"{\"a\"", "{\"a\":", "[\"a\",", "\xef\xbb\xbf{}",
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		t_reject(bad[i], EINVAL);
	/* A NUL byte in the input is not whitespace. */
	assert_null(json_parse("[1]\0", 4, NULL, NULL));
	assert_int_equal(errno, EINVAL);
	assert_null(json_parse("[\0]", 3, NULL, NULL));
	assert_null(json_parse(NULL, 1, NULL, NULL));
}

static void test_error_position(void **state)
{
	const char *s = "{\n  \"a\": 1,\n  \"b\": x\n}";
	struct json_error e;

	(void)state;
	assert_null(json_parse(s, strlen(s), NULL, &e));
	assert_int_equal(e.line, 3);
	assert_int_equal(e.offset, (size_t)(strchr(s, 'x') - s));
}

/* Every proper prefix of a valid document is rejected; the whole is accepted. */
static void test_truncation(void **state)
{
	size_t n, len = strlen(t_manifest);
	struct json_doc *d;

	(void)state;
	/* The manifest ends in "}\n": every prefix shorter than len - 1 misses the brace. */
	for (n = 0; n < len - 1; n++) {
		errno = 0;
		d = json_parse(t_manifest, n, NULL, NULL);
		if (d)
			fail_msg("prefix of %zu bytes accepted", n);
		assert_int_equal(errno, EINVAL);
	}
	json_free(t_accept(t_manifest));
}

static char *t_nest(size_t depth, const char *open, const char *close)
{
	size_t lo = strlen(open), lc = strlen(close);
	char *s = malloc(depth * (lo + lc) + 2), *p = s;
	size_t i;

	assert_non_null(s);
	for (i = 0; i < depth; i++, p += lo)
		memcpy(p, open, lo);
	*p++ = '1';
	for (i = 0; i < depth; i++, p += lc)
		memcpy(p, close, lc);
	*p = 0;
	return s;
}

static void test_depth(void **state)
{
	struct json_limits lim = { .max_depth = 8 };
	struct json_error e;
	struct json_doc *d;
	char *s;

	(void)state;
	s = t_nest(8, "[", "]");
	d = json_parse(s, strlen(s), &lim, NULL);
	assert_non_null(d);
	json_free(d);
	free(s);
	s = t_nest(9, "{\"k\":", "}");
	assert_null(json_parse(s, strlen(s), &lim, &e));
	assert_int_equal(errno, E2BIG);
	assert_int_equal(e.offset, 8 * 5);	/* at the ninth opening */
	free(s);
	/* A million open brackets: bounded, no stack exhaustion. */
	s = t_nest(1000000, "[", "]");
	assert_null(json_parse(s, strlen(s), NULL, NULL));
	assert_int_equal(errno, E2BIG);
	free(s);
	s = t_nest(JSON_DEFAULT_DEPTH, "[", "]");
	d = json_parse(s, strlen(s), NULL, NULL);
	assert_non_null(d);
	json_free(d);
	free(s);
	/* Unclosed deep nesting within the limit is merely truncated. */
	t_reject("[[[[[[[[", EINVAL);
}

static void test_numbers(void **state)
{
	const struct json_value *a;
	struct json_doc *d;
	uint64_t u;
	int64_t i;
	double x;
	char *big;

	(void)state;
	d = t_accept("[18446744073709551616, 1e999999, -1, 1.5, 9223372036854775807,"
		     " 9223372036854775808, -9223372036854775809, 1e2, 0]");
	a = json_root(d);

	assert_int_equal(json_u64(json_at(a, 0), &u), -ERANGE);
	assert_int_equal(json_double(json_at(a, 0), &x), 0);
	assert_true(x > 1.8e19);
	assert_int_equal(json_double(json_at(a, 1), &x), -ERANGE);
	assert_int_equal(json_u64(json_at(a, 1), &u), -EINVAL);
	assert_int_equal(json_u64(json_at(a, 2), &u), -EINVAL);
	assert_int_equal(json_i64(json_at(a, 2), &i), 0);
	assert_true(i == -1);
	assert_int_equal(json_u64(json_at(a, 3), &u), -EINVAL);
	assert_int_equal(json_i64(json_at(a, 3), &i), -EINVAL);
	assert_int_equal(json_i64(json_at(a, 4), &i), 0);
	assert_true(i == INT64_MAX);
	assert_int_equal(json_i64(json_at(a, 5), &i), -ERANGE);
	assert_int_equal(json_u64(json_at(a, 5), &u), 0);
	assert_true(u == (uint64_t)INT64_MAX + 1);
	assert_int_equal(json_i64(json_at(a, 6), &i), -ERANGE);
	assert_int_equal(json_u64(json_at(a, 7), &u), -EINVAL);	/* exponent: not exact */
	assert_int_equal(json_u64(json_at(a, 8), &u), 0);
	assert_true(u == 0);
	json_free(d);

	/* 100000 digits: within the default limits, a number; beyond a small one, E2BIG. */
	big = malloc(100001);
	assert_non_null(big);
	memset(big, '7', 100000);
	big[100000] = 0;
	d = t_accept(big);
	assert_int_equal(json_u64(json_root(d), &u), -ERANGE);
	assert_int_equal(json_double(json_root(d), &x), -ERANGE);
	json_free(d);
	{
		struct json_limits lim = { .max_string = 1000 };

		assert_null(json_parse(big, 100000, &lim, NULL));
		assert_int_equal(errno, E2BIG);
	}
	free(big);
}

static void test_limits(void **state)
{
	struct json_limits lim = { .max_nodes = 50, .max_string = 16 };
	char s[1024];
	size_t n = 0, i;
	struct json_doc *d;

	(void)state;
	n += snprintf(s + n, sizeof(s) - n, "[");
	for (i = 0; i < 49; i++)
		n += snprintf(s + n, sizeof(s) - n, "%s%zu", i ? "," : "", i);
	snprintf(s + n, sizeof(s) - n, "]");
	d = json_parse(s, strlen(s), &lim, NULL);	/* 50 values with the array */
	assert_non_null(d);
	assert_int_equal(json_root(d)->count, 49);
	json_free(d);
	snprintf(s + n, sizeof(s) - n, ",49]");
	assert_null(json_parse(s, strlen(s), &lim, NULL));
	assert_int_equal(errno, E2BIG);
	d = json_parse("\"0123456789abcdef\"", 18, &lim, NULL);
	assert_non_null(d);
	json_free(d);
	assert_null(json_parse("\"0123456789abcdefg\"", 19, &lim, NULL));
	assert_int_equal(errno, E2BIG);
	assert_null(json_parse("{\"0123456789abcdefg\":1}", 23, &lim, NULL));
	assert_int_equal(errno, E2BIG);
}

/* Random corruption of a valid document: parsed or rejected, never a crash (run under ASan). */
static void test_mutations(void **state)
{
	size_t len = strlen(t_manifest), i;
	char *buf = malloc(len);
	unsigned int seed = 12345, accepted = 0;

	(void)state;
	assert_non_null(buf);
	for (i = 0; i < 20000; i++) {
		struct json_doc *d;
		unsigned int k, flips;

		memcpy(buf, t_manifest, len);
		seed = seed * 1103515245 + 12345;
		flips = 1 + (seed >> 16) % 4;
		for (k = 0; k < flips; k++) {
			seed = seed * 1103515245 + 12345;
			buf[(seed >> 8) % len] = (char)(seed >> 20);
		}
		d = json_parse(buf, len - (seed >> 4) % 3, NULL, NULL);
		if (d) {
			accepted++;
			assert_non_null(json_root(d));
		}
		json_free(d);
	}
	assert_true(accepted > 0 && accepted < 20000);
	free(buf);
}

/* The one escaper: UTF-8 kept, control characters (C0, DEL, C1) escaped, invalid bytes as U+FFFD. */
static void test_write_string(void **state)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		{ "plain", "\"plain\"" },
		{ "q\"b\\s", "\"q\\\"b\\\\s\"" },
		{ "\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "\"\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"" },
		{ "\x1b[2J\n\x7f", "\"\\u001b[2J\\u000a\\u007f\"" },
		/* C1 controls (a terminal's CSI U+009B among them) escaped; U+00A0 kept. */
		{ "\xc2\x9b" "2J\xc2\x80\xc2\xa0", "\"\\u009b2J\\u0080\xc2\xa0\"" },
		{ "a\xff" "b\xc0\x80", "\"a\\ufffdb\\ufffd\\ufffd\"" },
		{ "\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\"" },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *buf = NULL;
		size_t n = 0;
		FILE *f = open_memstream(&buf, &n);
		struct json_doc *d;

		assert_non_null(f);
		json_write_string(f, cases[i].in);
		fclose(f);
		assert_string_equal(buf, cases[i].out);
		d = json_parse(buf, n, NULL, NULL);
		assert_non_null(d);
		json_free(d);
		free(buf);
	}
}

/* @s through @write, in a string of its own (the caller frees it). */
static char *t_written(void (*write)(FILE *, const char *), const char *s, size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);

	assert_non_null(f);
	write(f, s);
	assert_int_equal(fclose(f), 0);
	return buf;
}

/*
 * HTML mode: what a guest names its tasks or writes in a marker cannot end report --html's
 * <script> or start markup in it ('<', '>', '&' escaped), nor break a line for JavaScript
 * (U+2028, U+2029), and reads back as the same JSON string as the plain escaper's.
 */
static void test_write_string_html(void **state)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		{ "</script><script>alert(1)</script>",
		  "\"\\u003c/script\\u003e\\u003cscript\\u003ealert(1)\\u003c/script\\u003e\"" },
		{ "</SCRIPT ><!--x-->", "\"\\u003c/SCRIPT \\u003e\\u003c!--x--\\u003e\"" },
		{ "a&amp;b", "\"a\\u0026amp;b\"" },
		{ "x\xe2\x80\xa8y\xe2\x80\xa9z", "\"x\\u2028y\\u2029z\"" },
		/* The rest as the plain escaper: quotes, controls, UTF-8 kept, invalid bytes. */
		{ "q\"b\\s\x1b[2J\xc2\x9b", "\"q\\\"b\\\\s\\u001b[2J\\u009b\"" },
		{ "\xc3\xa9 \xe2\x82\xac \xe2\x80\xa7\xe2\x80\xaa", "\"\xc3\xa9 \xe2\x82\xac \xe2\x80\xa7\xe2\x80\xaa\"" },
		{ "<\xff>\xe2\x80", "\"\\u003c\\ufffd\\u003e\\ufffd\\ufffd\"" },
		{ "/script plain", "\"/script plain\"" },
	};
	size_t i, n, pn;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *buf = t_written(json_write_string_html, cases[i].in, &n);
		char *plain = t_written(json_write_string, cases[i].in, &pn);
		struct json_doc *d = json_parse(buf, n, NULL, NULL), *pd = json_parse(plain, pn, NULL, NULL);

		assert_string_equal(buf, cases[i].out);
		assert_null(strpbrk(buf, "<>&"));
		assert_null(strstr(buf, "\xe2\x80\xa8"));
		assert_null(strstr(buf, "\xe2\x80\xa9"));
		assert_non_null(d);
		assert_non_null(pd);
		assert_string_equal(json_string(json_root(d)), json_string(json_root(pd)));
		if (i < 4)	/* valid UTF-8 without controls: the very text */
			assert_string_equal(json_string(json_root(d)), cases[i].in);
		json_free(d);
		json_free(pd);
		free(buf);
		free(plain);
	}
}

/* One document, compact and pretty: the same values; pretty indents, jw_inline() keeps one line. */
static void emit(struct jw *w)
{
	jw_obj(w, NULL);
	jw_str(w, "name", "g\x1b");
	jw_inline(w, "host_tsc", '{');
	jw_u64(w, "khz", 2445405);
	jw_str(w, "method", NULL);
	jw_end(w, '}');
	jw_arr(w, "rows");
	jw_inline(w, NULL, '{');
	jw_u64(w, "cpu", 0);
	jw_obj(w, "stats");
	jw_i64(w, "lo", -3);
	jw_end(w, '}');
	jw_end(w, '}');
	jw_inline(w, NULL, '{');
	jw_end(w, '}');
	jw_end(w, ']');
	jw_inline(w, "tids", '[');
	jw_u64(w, NULL, 7);
	jw_u64(w, NULL, 8);
	jw_end(w, ']');
	jw_arr(w, "none");
	jw_end(w, ']');
	jw_obj(w, "sync");
	jw_fixed(w, "bound_ns", 77931.06, 1);
	jw_fixed(w, "ms", INFINITY, 3);
	jw_bool(w, "on", true);
	jw_end(w, '}');
	jw_end(w, '}');
}

static void test_writer_pretty(void **state)
{
	static const char compact[] =
		"{\"name\":\"g\\u001b\",\"host_tsc\":{\"khz\":2445405,\"method\":null},"
		"\"rows\":[{\"cpu\":0,\"stats\":{\"lo\":-3}},{}],\"tids\":[7,8],\"none\":[],"
		"\"sync\":{\"bound_ns\":77931.1,\"ms\":null,\"on\":true}}\n";
	static const char pretty[] =
		"{\n"
		"  \"name\": \"g\\u001b\",\n"
		"  \"host_tsc\": { \"khz\": 2445405, \"method\": null },\n"
		"  \"rows\": [\n"
		"    { \"cpu\": 0, \"stats\": { \"lo\": -3 } },\n"
		"    {}\n"
		"  ],\n"
		"  \"tids\": [ 7, 8 ],\n"
		"  \"none\": [],\n"
		"  \"sync\": {\n"
		"    \"bound_ns\": 77931.1,\n"
		"    \"ms\": null,\n"
		"    \"on\": true\n"
		"  }\n"
		"}\n";
	const char *want[2] = { compact, pretty };
	int mode;

	(void)state;
	for (mode = 0; mode < 2; mode++) {
		char *buf = NULL;
		size_t n = 0;
		FILE *f = open_memstream(&buf, &n);
		struct json_doc *d;
		struct jw w;

		assert_non_null(f);
		if (mode)
			jw_begin_pretty(&w, f);
		else
			jw_begin(&w, f);
		emit(&w);
		fclose(f);
		assert_string_equal(buf, want[mode]);
		d = json_parse(buf, n, NULL, NULL);
		assert_non_null(d);
		json_free(d);
		free(buf);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_write_string),
		cmocka_unit_test(test_write_string_html),
		cmocka_unit_test(test_writer_pretty),
		cmocka_unit_test(test_manifest),
		cmocka_unit_test(test_scalars),
		cmocka_unit_test(test_escapes),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_error_position),
		cmocka_unit_test(test_truncation),
		cmocka_unit_test(test_depth),
		cmocka_unit_test(test_numbers),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_mutations),
	};

	printf("test-json: the manifest reader parses valid JSON exactly and rejects malformed, "
	       "truncated and hostile input within its bounds\n");
	return cmocka_run_group_tests(tests, NULL, NULL) ? 1 : 0;
}
