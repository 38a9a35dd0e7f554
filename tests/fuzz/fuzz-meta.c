// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * libFuzzer harness for the metadata bundle decoder (bundles come from guests).
 * vt-fuzz-sources: lib/meta_codec.c lib/meta.c lib/pages.c lib/grow.c
 *
 * Whatever decodes must encode again and decode to the same bytes, and
 * vt_meta_encode_to() (the agent's piece-by-piece encoding) must give exactly
 * vt_meta_encode()'s bytes.
 *
 * The format checks (issue 37): vt_meta_sanitize() keeps only formats that
 * pass vt_meta_format_check() against the bundle's largest event, and counts
 * every one it leaves out; the check itself, run on the input as one format
 * text, answers 0, -ERANGE or -EBADMSG and nothing else.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "vt_meta.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct cmp {
	const uint8_t *want;
	size_t len, off;
};

/* Each piece must be the next bytes of the whole encoding. */
static int compare(void *ctx, const void *piece, size_t len)
{
	struct cmp *c = ctx;

	if (len > c->len - c->off || memcmp(c->want + c->off, piece, len))
		abort();
	c->off += len;
	return 0;
}

static uint32_t nr_formats(const struct vt_meta *m)
{
	uint32_t i, n = m->ftrace.nr_events;

	for (i = 0; i < m->nr_systems; i++)
		n += m->systems[i].nr_events;
	return n;
}

static void formats_checked(const struct vt_meta_system *s, uint32_t max_event)
{
	uint32_t i;

	for (i = 0; i < s->nr_events; i++)
		if (vt_meta_format_check(s->events[i].format.data, s->events[i].format.len, max_event))
			abort();
}

/* What sanitize keeps passes the check; what it leaves out is counted. */
static void check_sanitize(struct vt_meta *m)
{
	uint32_t before = nr_formats(m), max_event = vt_meta_max_event(m), i;
	struct vt_meta_clean c;

	vt_meta_sanitize(m, &c);
	if (nr_formats(m) + c.formats_dropped + c.formats_out_of_bounds != before ||
	    (c.formats_out_of_bounds && !c.out_of_bounds[0]))
		abort();
	formats_checked(&m->ftrace, max_event);
	for (i = 0; i < m->nr_systems; i++)
		formats_checked(&m->systems[i], max_event);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vt_meta m, m2;
	void *buf, *buf2;
	size_t len, len2;
	int r;

	r = vt_meta_format_check((const char *)data, size, 4072);
	if (r != 0 && r != -ERANGE && r != -EBADMSG)
		abort();
	if (vt_meta_decode(&m, data, size) < 0)
		return 0;
	if (vt_meta_encode(&m, &buf, &len) < 0)
		abort();
	{
		struct cmp c = { buf, len, 0 };
		size_t counted;

		if (vt_meta_encode_to(&m, compare, &c, &counted) < 0 || c.off != len || counted != len)
			abort();
	}
	if (vt_meta_decode(&m2, buf, len) < 0)
		abort();
	if (vt_meta_encode(&m2, &buf2, &len2) < 0 || len != len2 || memcmp(buf, buf2, len))
		abort();
	free(buf);
	free(buf2);
	check_sanitize(&m2);
	vt_meta_free(&m);
	vt_meta_free(&m2);
	return 0;
}
