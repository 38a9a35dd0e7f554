// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Metadata bundle codec: a bundle round-trips exactly, and every malformed
 * or oversized bundle from a guest is refused without leaking or crashing.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "vt_le.h"
#include "vt_meta.h"

static const char header_page[] =
	"\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n"
	"\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n"
	"\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n"
	"\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n";

static void set_blob(struct vt_blob *b, const char *s)
{
	b->len = strlen(s);
	b->data = strdup(s);
	assert_non_null(b->data);
}

static void make_meta(struct vt_meta *m)
{
	memset(m, 0, sizeof(*m));
	set_blob(&m->header_page, header_page);
	set_blob(&m->header_event, "# compressed entry header\n\ttype_len    :    5 bits\n");
	assert_int_equal(vt_meta_add_event(m, "ftrace", "print", "name: print\nID: 5\n", 18), 0);
	assert_int_equal(vt_meta_add_event(m, "sched", "sched_switch", "name: sched_switch\nID: 316\n", 27), 0);
	assert_int_equal(vt_meta_add_event(m, "sched", "sched_wakeup", "name: sched_wakeup\nID: 318\n", 27), 0);
	assert_int_equal(vt_meta_add_event(m, "irq", "irq_handler_entry", "ID: 40\n", 7), 0);
	set_blob(&m->kallsyms, "0000000000000000 T _stext\n");
	set_blob(&m->printk_formats, "0x0 : \"x\"\n");
	set_blob(&m->saved_cmdlines, "1 init\n");
	set_blob(&m->saved_tgids, "1 1\n");
	set_blob(&m->trace_clock, "local global [x86-tsc]\n");
	set_blob(&m->uname, "Linux 6.1.0 #1 SMP x86_64");
	set_blob(&m->iommu_groups, "0 DMA-FQ 0000:00:00.0\n2 identity 0000:00:05.0\n");
	set_blob(&m->pci_devices, "0000\t808629c0\t0\n");
	m->nr_cpus = 2;
	m->subbuf_size = 4096;
}

static void assert_blob_eq(const struct vt_blob *a, const struct vt_blob *b)
{
	assert_int_equal(a->len, b->len);
	assert_memory_equal(a->data, b->data, a->len);
}

static void test_roundtrip(void **state)
{
	struct vt_meta m, d;
	size_t len, len2;
	void *buf, *buf2;
	uint32_t i, j;

	make_meta(&m);
	assert_int_equal(vt_meta_encode(&m, &buf, &len), 0);
	assert_int_equal(vt_meta_decode(&d, buf, len), 0);
	assert_blob_eq(&m.header_page, &d.header_page);
	assert_blob_eq(&m.header_event, &d.header_event);
	assert_blob_eq(&m.kallsyms, &d.kallsyms);
	assert_blob_eq(&m.trace_clock, &d.trace_clock);
	assert_blob_eq(&m.uname, &d.uname);
	assert_blob_eq(&m.iommu_groups, &d.iommu_groups);
	assert_blob_eq(&m.pci_devices, &d.pci_devices);
	assert_int_equal(d.nr_cpus, 2);
	assert_int_equal(d.subbuf_size, 4096);
	assert_int_equal(d.ftrace.nr_events, 1);
	assert_string_equal(d.ftrace.events[0].name, "print");
	assert_int_equal(d.nr_systems, m.nr_systems);
	for (i = 0; i < m.nr_systems; i++) {
		assert_string_equal(d.systems[i].name, m.systems[i].name);
		assert_int_equal(d.systems[i].nr_events, m.systems[i].nr_events);
		for (j = 0; j < m.systems[i].nr_events; j++) {
			assert_string_equal(d.systems[i].events[j].name, m.systems[i].events[j].name);
			assert_blob_eq(&d.systems[i].events[j].format, &m.systems[i].events[j].format);
		}
	}
	/* Encoding what was decoded gives the same bytes. */
	assert_int_equal(vt_meta_encode(&d, &buf2, &len2), 0);
	assert_int_equal(len, len2);
	assert_memory_equal(buf, buf2, len);
	free(buf);
	free(buf2);
	vt_meta_free(&m);
	vt_meta_free(&d);
}

/* A bundle from an older agent (no sysinfo records) decodes with them empty. */
static void test_no_sysinfo(void **state)
{
	struct vt_meta m, d;
	size_t len;
	void *buf;

	make_meta(&m);
	free(m.iommu_groups.data);
	free(m.pci_devices.data);
	memset(&m.iommu_groups, 0, sizeof(m.iommu_groups));
	memset(&m.pci_devices, 0, sizeof(m.pci_devices));
	assert_int_equal(vt_meta_encode(&m, &buf, &len), 0);
	assert_int_equal(vt_meta_decode(&d, buf, len), 0);
	assert_null(d.iommu_groups.data);
	assert_null(d.pci_devices.data);
	free(buf);
	vt_meta_free(&m);
	vt_meta_free(&d);
}

/* Every prefix of a valid bundle is refused. */
struct sink {
	uint8_t *p;
	size_t len, calls, fail_at;
};

static int sink_emit(void *ctx, const void *data, size_t len)
{
	struct sink *k = ctx;

	if (k->fail_at && ++k->calls == k->fail_at)
		return -EPIPE;
	k->p = realloc(k->p, k->len + len);
	assert_non_null(k->p);
	memcpy(k->p + k->len, data, len);
	k->len += len;
	return 0;
}

/* Piece by piece: the same bytes as the whole encoding; the sink's error ends it. */
static void test_encode_to(void **state)
{
	struct sink k = { 0 };
	struct vt_meta m;
	size_t len, counted = 0, got = 0;
	void *buf;

	make_meta(&m);
	assert_int_equal(vt_meta_encode(&m, &buf, &len), 0);
	assert_int_equal(vt_meta_encode_to(&m, NULL, NULL, &counted), 0);
	assert_int_equal(counted, len);
	assert_int_equal(vt_meta_encode_to(&m, sink_emit, &k, &got), 0);
	assert_int_equal(got, len);
	assert_int_equal(k.len, len);
	assert_memory_equal(k.p, buf, len);
	free(k.p);
	k = (struct sink){ .fail_at = 3 };
	assert_int_equal(vt_meta_encode_to(&m, sink_emit, &k, NULL), -EPIPE);
	assert_int_equal(k.calls, 3);
	free(k.p);
	free(buf);
	vt_meta_free(&m);
}

/* Find the first record with @tag; returns its header offset. */
static size_t find_rec(const uint8_t *p, size_t len, uint32_t tag)
{
	size_t off = 12;

	while (off + 8 <= len) {
		if (vt_get_le32(p + off) == tag)
			return off;
		off += 8 + vt_get_le32(p + off + 4);
	}
	fail();
	return 0;
}

/*
 * kallsyms from a file, in pieces (what the agent sends to a host that takes
 * open bundles): decoded, the same bundle as with kallsyms whole; pieces
 * mixed with a whole kallsyms, or empty, are malformed.
 */
static void test_encode_fd(void **state)
{
	char path[] = "/tmp/test-meta-codec-XXXXXX";
	size_t i, ksize = 200000, len = 0, dlen, off;
	struct sink k = { 0 };
	struct vt_meta m, d;
	char *ks;
	void *buf;
	int fd;

	/* A file of three whole 64 KiB pieces and a part. */
	ks = malloc(ksize);
	assert_non_null(ks);
	for (i = 0; i < ksize; i++)
		ks[i] = i % 37 == 36 ? '\n' : 'a' + i % 26;
	fd = mkstemp(path);
	assert_true(fd >= 0);
	unlink(path);
	assert_int_equal(write(fd, ks, ksize), (ssize_t)ksize);
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);

	make_meta(&m);
	assert_int_equal(vt_meta_encode_fd(&m, fd, sink_emit, &k, NULL), -EINVAL);	/* has kallsyms */
	free(m.kallsyms.data);
	m.kallsyms.data = NULL;
	m.kallsyms.len = 0;
	assert_int_equal(vt_meta_encode_fd(&m, fd, sink_emit, &k, &len), 0);
	assert_int_equal(k.len, len);
	assert_int_equal(vt_meta_decode(&d, k.p, k.len), 0);
	assert_int_equal(d.kallsyms.len, ksize);
	assert_memory_equal(d.kallsyms.data, ks, ksize);
	assert_int_equal(d.kallsyms.data[ksize], '\0');
	assert_blob_eq(&d.printk_formats, &m.printk_formats);
	assert_int_equal(d.nr_cpus, 2);
	/* Re-encoded whole, then decoded: the same kallsyms. */
	assert_int_equal(vt_meta_encode(&d, &buf, &dlen), 0);
	vt_meta_free(&d);
	assert_int_equal(vt_meta_decode(&d, buf, dlen), 0);
	assert_int_equal(d.kallsyms.len, ksize);
	assert_memory_equal(d.kallsyms.data, ks, ksize);
	vt_meta_free(&d);
	free(buf);

	/* A piece record has tag 14: the first as a whole kallsyms, then a whole one after a piece. */
	if (!k.p)
		fail();
	off = find_rec(k.p, k.len, 14);
	assert_int_equal(vt_get_le32(k.p + off + 4), 64u << 10);
	vt_put_le32(k.p + off, 4);	/* the next piece comes after a whole kallsyms */
	assert_int_equal(vt_meta_decode(&d, k.p, k.len), -EBADMSG);
	vt_put_le32(k.p + off, 14);
	off += 8 + vt_get_le32(k.p + off + 4);
	assert_int_equal(vt_get_le32(k.p + off), 14);
	vt_put_le32(k.p + off, 4);	/* a whole kallsyms after a piece */
	assert_int_equal(vt_meta_decode(&d, k.p, k.len), -EBADMSG);
	vt_put_le32(k.p + off, 14);
	assert_int_equal(vt_meta_decode(&d, k.p, k.len), 0);
	vt_meta_free(&d);

	/* A failing emit ends it with its error. */
	free(k.p);
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	k = (struct sink){ .fail_at = 20 };
	assert_int_equal(vt_meta_encode_fd(&m, fd, sink_emit, &k, NULL), -EPIPE);
	free(k.p);
	close(fd);
	free(ks);
	vt_meta_free(&m);
}

/* The kallsyms key: kept through a round trip, left out when 0; never 0, never twice. */
static void test_kallsyms_key(void **state)
{
	struct vt_meta m, d;
	size_t len, len0, off;
	uint8_t *p;
	void *buf;

	make_meta(&m);
	assert_int_equal(vt_meta_encode(&m, &buf, &len0), 0);
	free(buf);
	m.kallsyms_key = 0xfedcba9876543210ull;
	assert_int_equal(vt_meta_encode(&m, &buf, &len), 0);
	assert_int_equal(len, len0 + 16);
	assert_int_equal(vt_meta_decode(&d, buf, len), 0);
	assert_true(d.kallsyms_key == m.kallsyms_key);
	assert_blob_eq(&d.kallsyms, &m.kallsyms);
	vt_meta_free(&d);
	p = buf;
	off = find_rec(p, len, 15);
	assert_int_equal(vt_get_le32(p + off + 4), 8);
	vt_put_le64(p + off + 8, 0);
	assert_int_equal(vt_meta_decode(&d, buf, len), -EBADMSG);
	/* Twice: a second key record before the end. */
	vt_put_le64(p + off + 8, 1);
	{
		uint8_t *two = malloc(len + 16);

		assert_non_null(two);
		memcpy(two, p, len - 8);
		memcpy(two + len - 8, p + off, 16);
		memcpy(two + len + 8, p + len - 8, 8);
		assert_int_equal(vt_meta_decode(&d, two, len + 16), -EBADMSG);
		assert_int_equal(vt_meta_decode(&d, p, len), 0);	/* one alone is fine */
		assert_true(d.kallsyms_key == 1);
		vt_meta_free(&d);
		free(two);
	}
	free(buf);
	vt_meta_free(&m);
}

static void test_truncated(void **state)
{
	struct vt_meta m, d;
	size_t len, cut;
	void *buf;

	make_meta(&m);
	assert_int_equal(vt_meta_encode(&m, &buf, &len), 0);
	for (cut = 0; cut < len; cut++)
		assert_int_equal(vt_meta_decode(&d, buf, cut), -EBADMSG);
	free(buf);
	vt_meta_free(&m);
}

static void test_corrupt(void **state)
{
	struct vt_meta m, d;
	uint8_t *p;
	size_t len, off;
	void *buf;

	make_meta(&m);
	assert_int_equal(vt_meta_encode(&m, &buf, &len), 0);
	p = buf;

	/* Bad magic, unknown version. */
	p[0] ^= 1;
	assert_int_equal(vt_meta_decode(&d, p, len), -EBADMSG);
	p[0] ^= 1;
	vt_put_le32(p + 8, 2);
	assert_int_equal(vt_meta_decode(&d, p, len), -EPROTO);
	vt_put_le32(p + 8, 1);

	/* A record length that runs past the end. */
	off = find_rec(p, len, 4 /* kallsyms */);
	vt_put_le32(p + off + 4, 0xfffffff0);
	assert_int_equal(vt_meta_decode(&d, p, len), -EBADMSG);
	vt_put_le32(p + off + 4, 26);

	/* An event name with a slash or a format string in it. */
	off = find_rec(p, len, 3);
	p[off + 8 + 2] = '/';
	assert_int_equal(vt_meta_decode(&d, p, len), -EBADMSG);
	p[off + 8 + 2] = '%';
	assert_int_equal(vt_meta_decode(&d, p, len), -EBADMSG);
	p[off + 8 + 2] = 'r';
	assert_int_equal(vt_meta_decode(&d, p, len), 0);
	vt_meta_free(&d);

	/* A sub-buffer size that disagrees with header_page. */
	off = find_rec(p, len, 11 /* sub-buffer size */);
	vt_put_le32(p + off + 8, 8192);
	assert_int_equal(vt_meta_decode(&d, p, len), -EBADMSG);
	vt_put_le32(p + off + 8, 4096);

	/* No CPUs, or absurdly many. */
	off = find_rec(p, len, 10 /* nr_cpus */);
	vt_put_le32(p + off + 8, 0);
	assert_int_equal(vt_meta_decode(&d, p, len), -EBADMSG);
	vt_put_le32(p + off + 8, VT_META_MAX_CPUS + 1);
	assert_int_equal(vt_meta_decode(&d, p, len), -EBADMSG);
	vt_put_le32(p + off + 8, 2);

	/* Trailing bytes after the end record. */
	p = realloc(p, len + 4);
	assert_non_null(p);
	memset(p + len, 0, 4);
	assert_int_equal(vt_meta_decode(&d, p, len + 4), -EBADMSG);
	assert_int_equal(vt_meta_decode(&d, p, len), 0);
	vt_meta_free(&d);
	free(p);
	vt_meta_free(&m);
}

static void test_singleton_twice_and_bounds(void **state)
{
	uint8_t buf[256], *p = buf;
	struct vt_meta d;

	memcpy(p, "VTMETA\0\0", 8);
	vt_put_le32(p + 8, 1);
	p += 12;
	vt_put_le32(p, 10);	/* nr_cpus */
	vt_put_le32(p + 4, 4);
	vt_put_le32(p + 8, 1);
	p += 12;
	vt_put_le32(p, 10);	/* again */
	vt_put_le32(p + 4, 4);
	vt_put_le32(p + 8, 1);
	p += 12;
	vt_put_le32(p, 0);
	vt_put_le32(p + 4, 0);
	p += 8;
	assert_int_equal(vt_meta_decode(&d, buf, p - buf), -EBADMSG);
	/* Over the total bound, refused before reading. */
	assert_int_equal(vt_meta_decode(&d, buf, (size_t)VT_META_MAX_TOTAL + 1), -EMSGSIZE);
}

/* saved_cmdlines merge: the bundle's names win, one line per pid, sorted, junk dropped. */
static void test_merge_cmdlines(void **state)
{
	static const char more[] = "12 bash\n1 systemd\n7 kworker/0:1 x\nabc def\n-3 neg\n"
				   "9\n8 \n99999999999 big\n12 dup\n5 last";
	struct vt_meta m;

	(void)state;
	memset(&m, 0, sizeof(m));
	set_blob(&m.saved_cmdlines, "1 init\n300 qemu-system-x86\n");
	assert_int_equal(vt_meta_merge_cmdlines(&m, more, strlen(more)), 0);
	assert_string_equal(m.saved_cmdlines.data,
			    "1 init\n5 last\n7 kworker/0:1 x\n12 bash\n300 qemu-system-x86\n");
	assert_int_equal(m.saved_cmdlines.len, strlen(m.saved_cmdlines.data));
	/* Nothing to add: the text stays as it is; an empty bundle takes the lines. */
	assert_int_equal(vt_meta_merge_cmdlines(&m, NULL, 0), 0);
	assert_string_equal(m.saved_cmdlines.data,
			    "1 init\n5 last\n7 kworker/0:1 x\n12 bash\n300 qemu-system-x86\n");
	vt_meta_free(&m);
	assert_int_equal(vt_meta_merge_cmdlines(&m, "4 a\n", 4), 0);
	assert_string_equal(m.saved_cmdlines.data, "4 a\n");
	vt_meta_free(&m);
}

/* vt_text_clean(): control characters and invalid UTF-8 become '?', the rest stays. */
static void test_text_clean(void **state)
{
	static const struct { const char *in, *keep, *out; uint64_t n; } t[] = {
		{ "plain text", "", "plain text", 0 },
		{ "a\x1b]0;t\x07" "b", "", "a?]0;t?b", 2 },
		{ "tab\tnl\n", "\t\n", "tab\tnl\n", 0 },
		{ "tab\tnl\n", "\n", "tab?nl\n", 1 },
		{ "del\x7f", "", "del?", 1 },
		{ "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 0 },
		{ "c1 \xc2\x9b[2J", "", "c1 ?[2J", 1 },		/* C1 CSI, as UTF-8 */
		{ "bad \xff\xfe end", "", "bad ?? end", 2 },
		{ "overlong \xc0\xaf", "", "overlong ??", 2 },
		{ "surrogate \xed\xa0\x80", "", "surrogate ???", 3 },
		{ "cut \xe2\x82", "", "cut ??", 2 },
		{ "stray \x80x", "", "stray ?x", 1 },
	};
	char buf[64];
	unsigned int i;

	(void)state;
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		uint64_t n = 0;
		size_t len;

		snprintf(buf, sizeof(buf), "%s", t[i].in);
		len = vt_text_clean(buf, strlen(buf), t[i].keep, &n);
		assert_int_equal(len, strlen(t[i].out));
		assert_string_equal(buf, t[i].out);
		assert_int_equal(n, t[i].n);
	}
	/* A NUL inside a counted text is a control character like the others. */
	memcpy(buf, "a\0b", 3);
	assert_int_equal(vt_text_clean(buf, 3, "", NULL), 3);
	assert_memory_equal(buf, "a?b", 3);
}

/* vt_meta_sanitize(): texts cleaned, a format with a control character left out. */
static void test_sanitize(void **state)
{
	static const char bad_fmt[] = "name: evil\nID: 7\nprint fmt: \"\x1b[2J\"\n";
	static const char utf8_fmt[] = "name: ok\nID: 8\nprint fmt: \"\xff\"\n";
	struct vt_meta_clean c;
	struct vt_meta m;

	(void)state;
	make_meta(&m);
	free(m.kallsyms.data);
	set_blob(&m.kallsyms, "ffffffff81000000 T ev\x1b]0;x\x07il\t[mo\x1b[2Jd]\nffffffff81000010 T caf\xc3\xa9\n");
	free(m.saved_cmdlines.data);
	set_blob(&m.saved_cmdlines, "1 in\x1bit\n2 \xc3\xbc\n");
	assert_int_equal(vt_meta_add_event(&m, "evil", "evil", bad_fmt, strlen(bad_fmt)), 0);
	assert_int_equal(vt_meta_add_event(&m, "sched", "badutf8", utf8_fmt, strlen(utf8_fmt)), 0);
	vt_meta_sanitize(&m, &c);
	assert_string_equal(m.kallsyms.data, "ffffffff81000000 T ev?]0;x?il\t[mo?[2Jd]\nffffffff81000010 T caf\xc3\xa9\n");
	assert_int_equal(m.kallsyms.len, strlen(m.kallsyms.data));
	assert_string_equal(m.saved_cmdlines.data, "1 in?it\n2 \xc3\xbc\n");
	assert_int_equal(c.replaced, 4);
	assert_int_equal(c.formats_dropped, 2);
	assert_string_equal(c.first_dropped, "sched:badutf8");
	/* sched keeps its two good formats; evil is left with none. */
	for (uint32_t i = 0; i < m.nr_systems; i++) {
		if (!strcmp(m.systems[i].name, "sched"))
			assert_int_equal(m.systems[i].nr_events, 2);
		if (!strcmp(m.systems[i].name, "evil"))
			assert_int_equal(m.systems[i].nr_events, 0);
	}
	vt_meta_free(&m);
}

/* vt_meta_format_check(): every field within the largest event, numbers as libtraceevent reads them. */
static void test_format_check(void **state)
{
	static const struct {
		const char *fmt;
		int ret;
	} t[] = {
		/* A kernel's: fixed fields, a dynamic one, a field named offset, the print line's "size :". */
		{ "name: x\nID: 1\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
		  "\tfield:__data_loc char[] name;\toffset:8;\tsize:4;\tsigned:0;\n"
		  "\tfield:unsigned long offset;\toffset:16;\tsize:8;\tsigned:0;\n"
		  "\nprint fmt: \"%d\", REC->a ? REC->size : 100000\n", 0 },
		/* The last byte of the largest event, and one past it. */
		{ "\tfield:char c[72];\toffset:4000;\tsize:72;\n", 0 },
		{ "\tfield:char c[73];\toffset:4000;\tsize:73;\n", -ERANGE },
		/* The hostile sched_switch of issue 37. */
		{ "\tfield:char prev_comm[16];\toffset:100000000;\tsize:16;\tsigned:0;\n", -ERANGE },
		{ "\tfield:char x[4073];\toffset:0;\tsize:4073;\n", -ERANGE },
		/* Past an int: refused, not wrapped. */
		{ "\tfield:int x;\toffset:2147483648;\tsize:4;\n", -ERANGE },
		{ "\tfield:int x;\toffset:99999999999;\tsize:4;\n", -EBADMSG },
		{ "\tfield:int x;\toffset:4294967300;\tsize:4;\n", -ERANGE },
		{ "\tfield:int x;\toffset:8;\tsize:4294967292;\n", -ERANGE },
		/* Spellings libtraceevent reads otherwise (sign, hex, octal) or not at all. */
		{ "\tfield:int x;\toffset:-8;\tsize:4;\n", -EBADMSG },
		{ "\tfield:int x;\toffset:0x10;\tsize:4;\n", -EBADMSG },
		{ "\tfield:int x;\toffset:010;\tsize:4;\n", -EBADMSG },
		{ "\tfield:int x;\toffset:;\tsize:4;\n", -EBADMSG },
		{ "\tfield:int x;\toffset:8;\tsize:4", 0 },
		{ "\tfield:int x;\toffset:8;\tsize:", -EBADMSG },
		/* Spaces do not hide a field from libtraceevent, nor from the check. */
		{ "\tfield : int x ; offset : 5000 ; size : 4 ;\n", -ERANGE },
		/* A dynamic field's fixed part is its 4-byte word, in range. */
		{ "\tfield:__data_loc char[] s;\toffset:4070;\tsize:4;\n", -ERANGE },
		{ "\tfield:__rel_loc char[] s;\toffset:8;\tsize:8;\n", -EBADMSG },
		{ "\tfield:__data_loc char[] s;\toffset:4068;\tsize:4;\n", 0 },
		/* Only the line that begins with "print" is the print format's. */
		{ "\tfield:int print;\toffset:5000;\tsize:4;\n", -ERANGE },
		{ "print fmt: \"offset:99999999\"\n\tfield:int x;\toffset:5000;\tsize:4;\n", -ERANGE },
		/* Print arguments: a length or index the record gives is refused, a __data_loc one kept. */
		{ "print fmt: \"%s\", __print_hex(REC->b, REC->n)\n", -ERANGE },
		{ "print fmt: \"%s\", __print_hex(REC->vec, 100000000)\n", -ERANGE },
		{ "print fmt: \"%s\", __print_hex_str (REC->b, REC->n)\n", -ERANGE },
		{ "print fmt: \"%s\", __print_hex(__get_dynamic_array(b), __get_dynamic_array_len(b))\n", 0 },
		{ "print fmt: \"%s\", __print_array(__get_dynamic_array(a), "
		  "__get_dynamic_array_len(a) / sizeof(u64), sizeof(u64))\n", 0 },
		{ "print fmt: \"%s\", __print_array(__get_dynamic_array(a), __get_dynamic_array_len(a), 16)\n",
		  -ERANGE },
		{ "print fmt: \"%s\", __print_array(REC->a, REC->n, 8)\n", -ERANGE },
		{ "print fmt: \"%d\", REC->b[REC->n]\n", -ERANGE },
		{ "print fmt: \"%d\", REC->b[5000]\n", -ERANGE },
		{ "print fmt: \"%lx %lx\", REC->caller[0], REC->caller[ 7 ]\n", 0 },
		/* Inside the quoted format it is text; a quote escaped does not end it. */
		{ "print fmt: \"[%d] __print_hex(x, y) [i]\", REC->n\n", 0 },
		{ "print fmt: \"\\\" [%d]\", __print_hex(REC->b, 9)\n", -ERANGE },
		/* The arguments go on past a newline, for libtraceevent too. */
		{ "print fmt: \"%s\",\n __print_hex(REC->b, REC->n)\n", -ERANGE },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		int ret = vt_meta_format_check(t[i].fmt, strlen(t[i].fmt), 4072);

		if (ret != t[i].ret)
			fail_msg("case %zu: %d, want %d", i, ret, t[i].ret);
	}
}

/*
 * vt_meta_sanitize(): a format whose field lies past the largest event is
 * left out, counted and named apart; the rest of the bundle is kept.
 */
static void test_sanitize_bounds(void **state)
{
	static const char hostile[] = "name: sched_switch\nID: 316\nformat:\n"
		"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
		"\tfield:char prev_comm[16];\toffset:100000000;\tsize:16;\tsigned:0;\n";
	static const char good[] = "name: sched_waking\nID: 317\nformat:\n"
		"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
		"\tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:0;\n";
	struct vt_meta_clean c;
	struct vt_meta m;
	uint32_t i, j;

	(void)state;
	make_meta(&m);
	/* 4096-byte sub-buffers, 16 bytes of page header: 4072 for an event. */
	assert_int_equal(vt_meta_max_event(&m), 4072);
	assert_int_equal(vt_meta_add_event(&m, "sched", "sched_switch2", hostile, strlen(hostile)), 0);
	assert_int_equal(vt_meta_add_event(&m, "sched", "sched_waking", good, strlen(good)), 0);
	vt_meta_sanitize(&m, &c);
	assert_int_equal(c.formats_dropped, 0);
	assert_int_equal(c.formats_out_of_bounds, 1);
	assert_string_equal(c.out_of_bounds, "sched:sched_switch2");
	for (i = 0; i < m.nr_systems; i++) {
		if (strcmp(m.systems[i].name, "sched"))
			continue;
		assert_int_equal(m.systems[i].nr_events, 3);
		for (j = 0; j < m.systems[i].nr_events; j++)
			assert_string_not_equal(m.systems[i].events[j].name, "sched_switch2");
	}
	assert_int_equal(m.ftrace.nr_events, 1);
	vt_meta_free(&m);

	/* The host's own bundle: its kernel's formats are trusted, only its text is cleaned. */
	make_meta(&m);
	assert_int_equal(vt_meta_add_event(&m, "sched", "sched_switch2", hostile, strlen(hostile)), 0);
	vt_meta_sanitize_own(&m, &c);
	assert_int_equal(c.formats_out_of_bounds, 0);
	assert_string_equal(c.out_of_bounds, "");
	for (i = 0; i < m.nr_systems; i++)
		if (!strcmp(m.systems[i].name, "sched"))
			assert_int_equal(m.systems[i].nr_events, 3);
	vt_meta_free(&m);
}

static void put_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

/* /proc scan on a fake tree: every thread, names cut at their newline, non-tasks ignored. */
static void test_scan_comms(void **state)
{
	char root[] = "/tmp/vt-proc.XXXXXX", path[256];
	struct vt_meta m;
	struct vt_blob b = { 0 };
	int ret;

	(void)state;
	assert_non_null(mkdtemp(root));
	snprintf(path, sizeof(path), "%s/self", root);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/42", root);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/42/task", root);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/42/task/42", root);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/42/task/42/comm", root);
	put_file(path, "qemu-system-x86\n");
	snprintf(path, sizeof(path), "%s/42/task/43", root);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/42/task/43/comm", root);
	put_file(path, "CPU 0/TCG\n");
	snprintf(path, sizeof(path), "%s/42/task/44", root);	/* ended: no comm */
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/42/task/45", root);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/42/task/45/comm", root);
	put_file(path, "two\nlines\n");
	ret = vt_meta_scan_comms(root, &b);
	assert_int_equal(ret, 0);
	memset(&m, 0, sizeof(m));
	assert_int_equal(vt_meta_merge_cmdlines(&m, b.data, b.len), 0);
	assert_string_equal(m.saved_cmdlines.data, "42 qemu-system-x86\n43 CPU 0/TCG\n45 two?lines\n");
	vt_meta_free(&m);
	free(b.data);
	assert_int_equal(vt_meta_scan_comms("/nonexistent-proc", &b), -ENOENT);
	snprintf(path, sizeof(path), "rm -rf '%s'", root);
	assert_int_equal(system(path), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_encode_to),
		cmocka_unit_test(test_encode_fd),
		cmocka_unit_test(test_kallsyms_key),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_no_sysinfo),
		cmocka_unit_test(test_corrupt),
		cmocka_unit_test(test_singleton_twice_and_bounds),
		cmocka_unit_test(test_merge_cmdlines),
		cmocka_unit_test(test_scan_comms),
		cmocka_unit_test(test_text_clean),
		cmocka_unit_test(test_sanitize),
		cmocka_unit_test(test_format_check),
		cmocka_unit_test(test_sanitize_bounds),
	};

	return cmocka_run_group_tests_name("meta codec: bundles round-trip, hostile ones are refused",
					   tests, NULL, NULL);
}
