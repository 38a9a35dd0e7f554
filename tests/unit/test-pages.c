// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Page iterator and validator: every event type, both commit flags, the
 * sign-extended commit word, sub-buffers other than 4 KiB, and hostile pages.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "vt_le.h"
#include "vt_pages.h"

static const char header_page_4k[] =
	"\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n"
	"\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n"
	"\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n"
	"\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n";

static const char header_page_8k[] =
	"\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n"
	"\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n"
	"\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n"
	"\tfield: char data;\toffset:16;\tsize:8176;\tsigned:0;\n";

static const char header_page_32[] =
	"\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n"
	"\tfield: local_t commit;\toffset:8;\tsize:4;\tsigned:1;\n"
	"\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n"
	"\tfield: char data;\toffset:12;\tsize:4084;\tsigned:0;\n";

/* A page under construction. */
struct t_page {
	struct vt_page_fmt fmt;
	uint8_t *buf;
	uint32_t pos;
};

static void t_page_init(struct t_page *tp, uint32_t subbuf, uint64_t ts)
{
	vt_page_fmt_default(&tp->fmt);
	tp->fmt.subbuf_size = subbuf;
	tp->buf = calloc(1, subbuf);
	assert_non_null(tp->buf);
	vt_put_le64(tp->buf, ts);
	tp->pos = tp->fmt.data_offset;
}

static void t_word(struct t_page *tp, uint32_t w)
{
	vt_put_le32(tp->buf + tp->pos, w);
	tp->pos += 4;
}

/* A small data event: type_len = words of payload; payload starts with id. */
static void t_small(struct t_page *tp, uint32_t delta, uint16_t id, uint32_t words)
{
	t_word(tp, (delta << 5) | words);
	vt_put_le16(tp->buf + tp->pos, id);
	tp->pos += words * 4;
}

static void t_large(struct t_page *tp, uint32_t delta, uint16_t id, uint32_t payload)
{
	t_word(tp, delta << 5);
	t_word(tp, payload + 4);
	vt_put_le16(tp->buf + tp->pos, id);
	tp->pos += (payload + 3) & ~3u;
}

static void t_commit(struct t_page *tp, uint64_t flags)
{
	vt_put_le64(tp->buf + 8, (tp->pos - tp->fmt.data_offset) | flags);
}

static void test_fmt_parse(void **state)
{
	struct vt_page_fmt fmt;

	assert_int_equal(vt_page_fmt_parse(&fmt, header_page_4k, strlen(header_page_4k)), 0);
	assert_int_equal(fmt.subbuf_size, 4096);
	assert_int_equal(fmt.commit_size, 8);
	assert_int_equal(fmt.data_offset, 16);

	assert_int_equal(vt_page_fmt_parse(&fmt, header_page_8k, strlen(header_page_8k)), 0);
	assert_int_equal(fmt.subbuf_size, 8192);

	assert_int_equal(vt_page_fmt_parse(&fmt, header_page_32, strlen(header_page_32)), 0);
	assert_int_equal(fmt.subbuf_size, 4096);
	assert_int_equal(fmt.commit_size, 4);
	assert_int_equal(fmt.data_offset, 12);

	/* A missing data field, an absurd size, and a truncated text. */
	assert_int_equal(vt_page_fmt_parse(&fmt, header_page_4k, 100), -EBADMSG);
	assert_int_equal(vt_page_fmt_parse(&fmt, "\tfield: char data;\toffset:16;\tsize:99999999;\n", 44),
			 -EBADMSG);
	assert_int_equal(vt_page_fmt_parse(&fmt, "", 0), -EBADMSG);
}

static void test_small_events(void **state)
{
	struct vt_page_iter it;
	struct vt_event ev;
	struct t_page tp;
	uint32_t n, words;

	t_page_init(&tp, 4096, 1000);
	for (words = 1; words <= 28; words++)
		t_small(&tp, words, 100 + words, words);
	t_commit(&tp, 0);

	assert_int_equal(vt_page_iter_init(&it, &tp.fmt, tp.buf, 4096), 0);
	uint64_t ts = 1000;
	for (words = 1; words <= 28; words++) {
		assert_int_equal(vt_page_iter_next(&it, &ev), 1);
		ts += words;
		assert_int_equal(ev.ts, ts);
		assert_int_equal(ev.id, 100 + words);
		assert_int_equal(ev.len, words * 4);
	}
	assert_int_equal(vt_page_iter_next(&it, &ev), 0);
	assert_int_equal(vt_page_iter_next(&it, &ev), 0);
	assert_int_equal(vt_page_validate(&tp.fmt, tp.buf, 4096, NULL, &n, NULL, NULL), 0);
	assert_int_equal(n, 28);
	free(tp.buf);
}

static void test_large_extend_abs_padding(void **state)
{
	struct vt_page_info info;
	struct vt_page_iter it;
	struct vt_event ev;
	struct t_page tp;
	uint32_t n;

	t_page_init(&tp, 4096, (3ull << 59) | 500);
	t_large(&tp, 7, 42, 201);			/* ts 507, len 201 */
	t_word(&tp, (5u << 5) | VT_TYPE_TIME_EXTEND);	/* + (2 << 27) + 5 */
	t_word(&tp, 2);
	t_small(&tp, 1, 43, 2);				/* ts 507 + 2<<27 + 6 */
	t_word(&tp, (9u << 5) | VT_TYPE_PADDING);	/* discarded: skip 12, delta 9 */
	t_word(&tp, 12);
	tp.pos += 8;
	t_small(&tp, 0, 44, 3);
	t_word(&tp, (0x10u << 5) | VT_TYPE_TIME_STAMP);	/* absolute: (1 << 27) | 0x10 */
	t_word(&tp, 1);
	t_small(&tp, 3, 45, 1);
	t_commit(&tp, 0);

	assert_int_equal(vt_page_iter_init(&it, &tp.fmt, tp.buf, 4096), 0);
	assert_int_equal(vt_page_iter_next(&it, &ev), 1);
	assert_int_equal(ev.id, 42);
	assert_int_equal(ev.len, 201);
	assert_int_equal(ev.ts, (3ull << 59) | 507);
	assert_int_equal(vt_page_iter_next(&it, &ev), 1);
	assert_int_equal(ev.id, 43);
	assert_int_equal(ev.ts, (3ull << 59) + 507 + (2ull << 27) + 5 + 1);
	assert_int_equal(vt_page_iter_next(&it, &ev), 1);
	assert_int_equal(ev.id, 44);
	assert_int_equal(ev.ts, (3ull << 59) + 507 + (2ull << 27) + 6 + 9);
	assert_int_equal(vt_page_iter_next(&it, &ev), 1);
	assert_int_equal(ev.id, 45);
	/* The top five bits come from the running timestamp. */
	assert_int_equal(ev.ts, ((3ull << 59) | (1ull << 27) | 0x10) + 3);
	assert_int_equal(vt_page_iter_next(&it, &ev), 0);

	assert_int_equal(vt_page_validate(&tp.fmt, tp.buf, 4096, &info, &n, NULL, NULL), 0);
	assert_int_equal(n, 4);
	assert_false(info.missed);
	free(tp.buf);
}

static void test_abs_then_delta(void **state)
{
	struct vt_page_iter it;
	struct vt_event ev;
	struct t_page tp;

	t_page_init(&tp, 4096, 0);
	t_word(&tp, (0x10u << 5) | VT_TYPE_TIME_STAMP);
	t_word(&tp, 1);
	t_small(&tp, 3, 45, 1);
	t_commit(&tp, 0);
	assert_int_equal(vt_page_iter_init(&it, &tp.fmt, tp.buf, 4096), 0);
	assert_int_equal(vt_page_iter_next(&it, &ev), 1);
	assert_int_equal(ev.ts, (1ull << 27) + 0x10 + 3);
	free(tp.buf);
}

static void test_null_padding_ends_page(void **state)
{
	struct vt_page_iter it;
	struct vt_event ev;
	struct t_page tp;
	uint32_t n;

	t_page_init(&tp, 4096, 0);
	t_small(&tp, 1, 7, 2);
	t_word(&tp, VT_TYPE_PADDING);		/* delta 0: the rest is empty */
	t_word(&tp, 0xdeadbeef);		/* never read as an event */
	t_small(&tp, 1, 8, 2);
	t_commit(&tp, 0);
	assert_int_equal(vt_page_iter_init(&it, &tp.fmt, tp.buf, 4096), 0);
	assert_int_equal(vt_page_iter_next(&it, &ev), 1);
	assert_int_equal(vt_page_iter_next(&it, &ev), 0);
	assert_int_equal(vt_page_validate(&tp.fmt, tp.buf, 4096, NULL, &n, NULL, NULL), 0);
	assert_int_equal(n, 1);
	free(tp.buf);
}

static void test_commit_flags(void **state)
{
	struct vt_page_info info;
	struct t_page tp;

	t_page_init(&tp, 4096, 0);
	t_small(&tp, 1, 7, 2);
	t_commit(&tp, VT_COMMIT_MISSED);
	assert_int_equal(vt_page_header(&tp.fmt, tp.buf, 4096, &info), 0);
	assert_true(info.missed);
	assert_false(info.missed_stored);
	assert_int_equal(info.len, 12);

	/* The lost count is an unsigned long stored right after the data. */
	vt_put_le64(tp.buf + tp.pos, 123456);
	t_commit(&tp, VT_COMMIT_MISSED | VT_COMMIT_MISSED_STORED);
	assert_int_equal(vt_page_header(&tp.fmt, tp.buf, 4096, &info), 0);
	assert_true(info.missed_stored);
	assert_int_equal(info.missed_events, 123456);

	/* Sign-extended commit word, as seen from a 64-bit kernel. */
	vt_put_le64(tp.buf + 8, 0xffffffff80000000ull | 12);
	assert_int_equal(vt_page_header(&tp.fmt, tp.buf, 4096, &info), 0);
	assert_true(info.missed);
	assert_false(info.missed_stored);
	assert_int_equal(info.len, 12);
	assert_int_equal(vt_page_validate(&tp.fmt, tp.buf, 4096, NULL, NULL, NULL, NULL), 0);

	/* A stored count with no room left for it. */
	vt_put_le64(tp.buf + 8, (4096 - 16 - 4) | VT_COMMIT_MISSED | VT_COMMIT_MISSED_STORED);
	assert_int_equal(vt_page_header(&tp.fmt, tp.buf, 4096, &info), -EBADMSG);
	free(tp.buf);
}

static void test_other_subbuf_sizes(void **state)
{
	static const uint32_t sizes[] = { 8192, 65536, VT_SUBBUF_MAX };
	struct vt_page_iter it;
	struct vt_event ev;
	unsigned int i, k;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct t_page tp;
		uint32_t n, count = 0;

		t_page_init(&tp, sizes[i], 0);
		while (tp.pos + 12 <= sizes[i])
			t_small(&tp, 1, 9, 2);
		t_commit(&tp, 0);
		k = (sizes[i] - 16) / 12;
		assert_int_equal(vt_page_validate(&tp.fmt, tp.buf, sizes[i], NULL, &n, NULL, NULL), 0);
		assert_int_equal(n, k);
		assert_int_equal(vt_page_iter_init(&it, &tp.fmt, tp.buf, sizes[i]), 0);
		while (vt_page_iter_next(&it, &ev) == 1)
			count++;
		assert_int_equal(count, k);
		/* The wrong size for the format is refused, never read past. */
		assert_int_equal(vt_page_validate(&tp.fmt, tp.buf, 4096, NULL, NULL, NULL, NULL),
				 -EINVAL);
		free(tp.buf);
	}
}

static void expect_bad(struct t_page *tp, uint32_t at)
{
	struct vt_page_iter it;
	struct vt_event ev;
	const char *why = NULL;
	uint32_t off = 0;
	int ret;

	assert_int_equal(vt_page_validate(&tp->fmt, tp->buf, tp->fmt.subbuf_size, NULL, NULL,
					  &off, &why), -EBADMSG);
	assert_int_equal(off, at);
	assert_non_null(why);
	ret = vt_page_iter_init(&it, &tp->fmt, tp->buf, tp->fmt.subbuf_size);
	if (ret == 0) {
		while ((ret = vt_page_iter_next(&it, &ev)) == 1)
			;
	}
	assert_int_equal(ret, -EBADMSG);
	assert_int_equal(it.bad_offset, at);
}

static void test_hostile(void **state)
{
	struct t_page tp;

	/* Commit length beyond the page. */
	t_page_init(&tp, 4096, 0);
	vt_put_le64(tp.buf + 8, 4081);
	expect_bad(&tp, 8);
	free(tp.buf);

	/* A small event crossing the committed end. */
	t_page_init(&tp, 4096, 0);
	t_small(&tp, 1, 1, 2);
	t_small(&tp, 1, 1, 8);
	vt_put_le64(tp.buf + 8, 12 + 20);
	expect_bad(&tp, 28);
	free(tp.buf);

	/* A large event whose length wraps when rounded. */
	t_page_init(&tp, 4096, 0);
	t_word(&tp, 0);
	t_word(&tp, 0xfffffffd);
	t_commit(&tp, 0);
	vt_put_le64(tp.buf + 8, 64);
	expect_bad(&tp, 16);
	free(tp.buf);

	/* A large event too short to hold an id. */
	t_page_init(&tp, 4096, 0);
	t_word(&tp, 0);
	t_word(&tp, 4);
	t_commit(&tp, 0);
	expect_bad(&tp, 16);
	free(tp.buf);

	/* A time extend cut by the end of data. */
	t_page_init(&tp, 4096, 0);
	t_small(&tp, 1, 1, 1);
	t_word(&tp, VT_TYPE_TIME_EXTEND);
	t_commit(&tp, 0);
	expect_bad(&tp, 24);
	free(tp.buf);

	/* Padding that claims more than the page. */
	t_page_init(&tp, 4096, 0);
	t_word(&tp, (1u << 5) | VT_TYPE_PADDING);
	t_word(&tp, 8192);
	t_commit(&tp, 0);
	vt_put_le64(tp.buf + 8, 100);
	expect_bad(&tp, 16);
	free(tp.buf);

	/* A trailing 2 bytes that cannot hold a header. */
	t_page_init(&tp, 4096, 0);
	t_small(&tp, 1, 1, 1);
	vt_put_le64(tp.buf + 8, 10);
	expect_bad(&tp, 24);
	free(tp.buf);
}

/*
 * Random pages: the iterator and the validator must agree on every one, and
 * neither may read outside the page (the sanitizer build checks that).
 */
static void test_random_pages_agree(void **state)
{
	struct vt_page_fmt fmt;
	unsigned int seed = 12345, i, j, bad = 0;
	uint8_t *page;

	vt_page_fmt_default(&fmt);
	fmt.subbuf_size = 256;
	page = malloc(256);
	assert_non_null(page);
	for (i = 0; i < 200000; i++) {
		struct vt_page_iter it;
		struct vt_event ev;
		uint32_t n = 0, count = 0, off1 = 0;
		int r1, r2;

		for (j = 0; j < 256; j++) {
			seed = seed * 1103515245 + 12345;
			page[j] = seed >> 16;
		}
		/* Bias towards plausible headers so deep paths are reached. */
		vt_put_le64(page + 8, (seed >> 8) % 260);
		for (j = 16; j < 256; j += 4 * (1 + (seed >> 28)))
			page[j] = (page[j] & 0xe0) | ((seed + j) % 32 < 4 ? 29 + (j % 3) : (j % 6));

		r1 = vt_page_validate(&fmt, page, 256, NULL, &n, &off1, NULL);
		r2 = vt_page_iter_init(&it, &fmt, page, 256);
		if (r2 == 0) {
			while ((r2 = vt_page_iter_next(&it, &ev)) == 1) {
				assert_true(ev.data >= page + 16 && ev.data + ev.len <= page + 256);
				count++;
			}
		}
		assert_int_equal(r1, r2);
		if (r1 == 0)
			assert_int_equal(n, count);
		else
			assert_int_equal(off1, it.bad_offset);
		bad += r1 < 0;
	}
	/* Both outcomes must have been exercised. */
	assert_true(bad > 1000 && bad < 199000);
	free(page);
}

static void test_pad_partial(void **state)
{
	struct t_page tp;
	uint32_t n;

	t_page_init(&tp, 4096, 0);
	t_small(&tp, 1, 1, 2);
	t_small(&tp, 1, 1, 2);
	t_commit(&tp, 0);
	memset(tp.buf + tp.pos, 0xaa, 4096 - tp.pos);	/* junk past the data */
	assert_int_equal(vt_page_pad(&tp.fmt, tp.buf, tp.pos), 0);
	for (uint32_t k = tp.pos; k < 4096; k++)
		assert_int_equal(tp.buf[k], 0);
	assert_int_equal(vt_page_validate(&tp.fmt, tp.buf, 4096, NULL, &n, NULL, NULL), 0);
	assert_int_equal(n, 2);
	/* A header that claims more data than arrived. */
	assert_int_equal(vt_page_pad(&tp.fmt, tp.buf, tp.pos - 4), -EBADMSG);
	assert_int_equal(vt_page_pad(&tp.fmt, tp.buf, 8), -EINVAL);
	free(tp.buf);
}

/*
 * Pages framed with the wrong size: two 4 KiB pages read as one 8 KiB page
 * (the second page is data after the first one's end), and an 8 KiB page read
 * as 4 KiB ones (its commit length runs past the frame). Pages of the right
 * size pass, including one with a stored lost count.
 */
static void test_size_check(void **state)
{
	struct t_page a, b, big;
	struct vt_page_fmt fmt8;
	const char *why = NULL;
	uint8_t *pair;
	int i;

	t_page_init(&a, 4096, 1000);
	for (i = 0; i < 10; i++)
		t_small(&a, 1, 7, 4);
	t_commit(&a, 0);
	assert_int_equal(vt_page_size_check(&a.fmt, a.buf, 4096, &why), 0);
	/* A stored lost count right after the data is part of the page. */
	vt_put_le64(a.buf + a.pos, 12345);
	t_commit(&a, VT_COMMIT_MISSED | VT_COMMIT_MISSED_STORED);
	assert_int_equal(vt_page_size_check(&a.fmt, a.buf, 4096, &why), 0);
	/* One stray byte in the tail is not. */
	a.buf[4095] = 1;
	assert_int_equal(vt_page_size_check(&a.fmt, a.buf, 4096, &why), -EMSGSIZE);
	a.buf[4095] = 0;

	t_page_init(&b, 4096, 2000);
	t_small(&b, 1, 7, 4);
	t_commit(&b, 0);
	pair = calloc(1, 8192);
	assert_non_null(pair);
	memcpy(pair, a.buf, 4096);
	memcpy(pair + 4096, b.buf, 4096);
	assert_int_equal(vt_page_fmt_parse(&fmt8, header_page_8k, strlen(header_page_8k)), 0);
	/* The pair is a well-formed 8 KiB page to the validator: only the size check sees it. */
	assert_int_equal(vt_page_validate(&fmt8, pair, 8192, NULL, NULL, NULL, NULL), 0);
	why = NULL;
	assert_int_equal(vt_page_size_check(&fmt8, pair, 8192, &why), -EMSGSIZE);
	assert_non_null(why);
	assert_non_null(strstr(why, "smaller"));

	t_page_init(&big, 8192, 3000);
	for (i = 0; i < 300; i++)
		t_small(&big, 1, 7, 4);
	t_commit(&big, 0);
	assert_int_equal(vt_page_size_check(&fmt8, big.buf, 8192, &why), 0);
	why = NULL;
	assert_int_equal(vt_page_size_check(&a.fmt, big.buf, 4096, &why), -EMSGSIZE);
	assert_non_null(strstr(why, "larger"));
	/* An absurd commit length is the validator's business, not a size mismatch. */
	vt_put_le64(big.buf + 8, VT_COMMIT_LEN_MASK);
	assert_int_equal(vt_page_size_check(&a.fmt, big.buf, 4096, &why), 0);
	assert_int_equal(vt_page_size_check(&a.fmt, big.buf, 4000, &why), -EINVAL);
	free(pair);
	free(a.buf);
	free(b.buf);
	free(big.buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fmt_parse),
		cmocka_unit_test(test_small_events),
		cmocka_unit_test(test_large_extend_abs_padding),
		cmocka_unit_test(test_abs_then_delta),
		cmocka_unit_test(test_null_padding_ends_page),
		cmocka_unit_test(test_commit_flags),
		cmocka_unit_test(test_other_subbuf_sizes),
		cmocka_unit_test(test_hostile),
		cmocka_unit_test(test_random_pages_agree),
		cmocka_unit_test(test_pad_partial),
		cmocka_unit_test(test_size_check),
	};

	return cmocka_run_group_tests_name("pages: iterator and validator", tests, NULL, NULL);
}
