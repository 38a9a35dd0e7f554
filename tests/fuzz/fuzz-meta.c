// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * libFuzzer harness for the metadata bundle decoder (bundles come from guests).
 * vt-fuzz-sources: lib/meta_codec.c lib/meta.c lib/pages.c
 *
 * Whatever decodes must encode again and decode to the same bytes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "vt_meta.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vt_meta m, m2;
	void *buf, *buf2;
	size_t len, len2;

	if (vt_meta_decode(&m, data, size) < 0)
		return 0;
	if (vt_meta_encode(&m, &buf, &len) < 0)
		abort();
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
