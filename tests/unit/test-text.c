// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The one rule for text that others chose, as the collector prints it
 * (host-collector/text.c): control characters (C0, DEL, C1) and invalid
 * UTF-8 become '?', a newline or tab a space, valid UTF-8 stays; text made
 * safe passes unchanged; a line is cut at a character's end, with "...".
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "text.h"

static const struct {
	const char *in, *out;
} t_cases[] = {
	{ "plain /path/x", "plain /path/x" },
	{ "\x1b]0;pwned\x07\x1b[2J", "?]0;pwned??[2J" },
	{ "a\nvirtio-trace-collect: forged\r\tb", "a virtio-trace-collect: forged? b" },
	{ "\x7f\x08", "??" },
	{ "\xc2\x9b" "2J\xc2\x80\xc2\x9f\xc2\xa0", "?2J??\xc2\xa0" },	/* C1; NBSP kept */
	{ "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80" },
	{ "a\xff" "b\xc0\x80" "c\xed\xa0\x80" "d\xe2\x82", "a?b??c???d??" },
	{ "back\\slash \\x1b", "back\\slash \\x1b" },	/* nothing escaped twice */
};

/* Each case, through the buffer and the stream; the output is a fixed point. */
static void test_cases(void **state)
{
	char out[256], again[256], *buf;
	size_t i, n;
	FILE *f;

	(void)state;
	for (i = 0; i < sizeof(t_cases) / sizeof(t_cases[0]); i++) {
		n = collect_text_safe(out, sizeof(out), t_cases[i].in);
		assert_string_equal(out, t_cases[i].out);
		assert_int_equal(n, strlen(out));
		collect_text_safe(again, sizeof(again), out);
		assert_string_equal(again, out);
		buf = NULL;
		f = open_memstream(&buf, &n);
		assert_non_null(f);
		collect_fput_safe(f, t_cases[i].in);
		fclose(f);
		assert_string_equal(buf, t_cases[i].out);
		free(buf);
	}
}

/* Cut to the buffer: at a character's end, "..." after, never a split UTF-8 sequence. */
static void test_bound(void **state)
{
	char out[8];

	(void)state;
	assert_int_equal(collect_text_safe(out, sizeof(out), "abcdefg"), 7);
	assert_string_equal(out, "abcdefg");
	collect_text_safe(out, sizeof(out), "abcdefgh");
	assert_string_equal(out, "abcd...");
	collect_text_safe(out, sizeof(out), "ab\xc3\xa9\xc3\xa9\xc3\xa9");
	assert_string_equal(out, "ab\xc3\xa9...");
	collect_text_safe(out, sizeof(out), "abc\xf0\x9f\x98\x80z");
	assert_string_equal(out, "abc...");
	collect_text_safe(out, 4, "\x1b\x1b\x1b\x1b");
	assert_string_equal(out, "...");
}

/* collect_line(): formatted whole, then made safe, one newline of its own. */
static void test_line(void **state)
{
	char *buf = NULL, big[10000];
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);

	(void)state;
	assert_non_null(f);
	collect_line(f, "  %s: %s", "q\x1b[31m", "cannot open /x\n\x07y");
	fclose(f);
	assert_string_equal(buf, "  q?[31m: cannot open /x ?y\n");
	free(buf);

	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	buf = NULL;
	f = open_memstream(&buf, &n);
	assert_non_null(f);
	collect_line(f, "%s", big);
	fclose(f);
	assert_true(n > 8000 && n < 8200);
	assert_memory_equal(buf + n - 4, "...\n", 4);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cases),
		cmocka_unit_test(test_bound),
		cmocka_unit_test(test_line),
	};

	printf("test-text: text others chose is printed without control characters or invalid "
	       "UTF-8, valid UTF-8 kept, bounded\n");
	return cmocka_run_group_tests(tests, NULL, NULL) ? 1 : 0;
}
