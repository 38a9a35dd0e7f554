// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * libFuzzer harness for the last-boot bundle decoder (bundles come from guests).
 * vt-fuzz-sources: lib/lastboot-codec.c
 *
 * Whatever decodes must encode again to the very same bytes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "vt_lastboot.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct vt_lastboot lb;
	size_t len;
	void *buf;

	if (vt_lastboot_decode(&lb, data, size) < 0)
		return 0;
	if (vt_lastboot_encode(&lb, &buf, &len) < 0)
		abort();
	if (len != size || memcmp(buf, data, len))
		abort();
	free(buf);
	return 0;
}
