// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * libFuzzer harness for the metadata bundle decoder (bundles come from guests).
 * vt-fuzz-sources: lib/meta_codec.c lib/meta.c lib/pages.c
 *
 * Whatever decodes must encode again and decode to the same bytes, and
 * vt_meta_encode_to() (the agent's piece-by-piece encoding) must give exactly
 * vt_meta_encode()'s bytes.
 */
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vt_meta m, m2;
	void *buf, *buf2;
	size_t len, len2;

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
	vt_meta_free(&m);
	vt_meta_free(&m2);
	return 0;
}
