// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * libFuzzer harness for the page iterator and validator.
 * vt-fuzz-sources: lib/pages.c
 *
 * The first input byte picks the layout (commit word 4 or 8 bytes, and one of
 * several sub-buffer sizes); the rest is the page, zero-filled or cut to size.
 * The validator and the iterator must agree on every page, every event must
 * lie inside the page, and both must terminate.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "vt_pages.h"

static const uint32_t sizes[] = { 64, 128, 4096, 8192, 65536 };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vt_page_info info;
	struct vt_page_fmt fmt;
	struct vt_page_iter it;
	struct vt_event ev;
	uint32_t n = 0, count = 0, off = 0;
	uint8_t *page;
	int r1, r2;

	if (size < 1)
		return 0;
	fmt.commit_size = data[0] & 0x80 ? 4 : 8;
	fmt.data_offset = 8 + fmt.commit_size;
	fmt.subbuf_size = sizes[(data[0] & 0x7f) % (sizeof(sizes) / sizeof(sizes[0]))];
	data++;
	size--;

	/* An exact-size heap copy, so ASan sees any read past the page. */
	page = calloc(1, fmt.subbuf_size);
	if (!page)
		return 0;
	memcpy(page, data, size < fmt.subbuf_size ? size : fmt.subbuf_size);

	r1 = vt_page_validate(&fmt, page, fmt.subbuf_size, &info, &n, &off, NULL);
	r2 = vt_page_iter_init(&it, &fmt, page, fmt.subbuf_size);
	if (r2 == 0) {
		while ((r2 = vt_page_iter_next(&it, &ev)) == 1) {
			if (ev.data < page + fmt.data_offset ||
			    ev.data + ev.len > page + fmt.subbuf_size || ev.len < 2)
				abort();
			count++;
		}
	}
	if (r1 != r2 || (r1 == 0 && n != count) || (r1 < 0 && off != it.bad_offset))
		abort();
	if (r1 == 0 && vt_page_pad(&fmt, page, fmt.subbuf_size) != 0)
		abort();
	free(page);
	return 0;
}
