// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The last-boot bundle codec (see vt_lastboot.h). The encoder is the agent's,
 * the decoder the collector's: every length is checked against what is left.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "vt_lastboot.h"
#include "vt_le.h"

#define LB_MAGIC	"VTLB"
#define LB_VERSION	1u

/**
 * vt_lastboot_encode() - one blob from a bundle
 * @lb: the bundle
 * @blob: set to a malloc()ed blob
 * @len: set to its length
 *
 * Return: 0, -EINVAL for a bundle with too many CPUs, -ENOMEM.
 */
int vt_lastboot_encode(const struct vt_lastboot *lb, void **blob, size_t *len)
{
	size_t total = 12 + 4 + lb->name_len + 4 + lb->info_len + 8 + lb->meta_len, off;
	uint8_t *b;
	uint32_t i;

	if (lb->nr_cpus > VT_LASTBOOT_MAX_CPUS)
		return -EINVAL;
	for (i = 0; i < lb->nr_cpus; i++)
		total += 12 + lb->cpus[i].len;
	b = malloc(total);
	if (!b)
		return -ENOMEM;
	memcpy(b, LB_MAGIC, 4);
	vt_put_le32(b + 4, LB_VERSION);
	vt_put_le32(b + 8, lb->nr_cpus);
	off = 12;
	vt_put_le32(b + off, lb->name_len);
	memcpy(b + off + 4, lb->name, lb->name_len);
	off += 4 + lb->name_len;
	vt_put_le32(b + off, lb->info_len);
	if (lb->info_len)
		memcpy(b + off + 4, lb->info, lb->info_len);
	off += 4 + lb->info_len;
	vt_put_le64(b + off, lb->meta_len);
	memcpy(b + off + 8, lb->meta, lb->meta_len);
	off += 8 + lb->meta_len;
	for (i = 0; i < lb->nr_cpus; i++) {
		vt_put_le32(b + off, lb->cpus[i].cpu);
		vt_put_le64(b + off + 4, lb->cpus[i].len);
		if (lb->cpus[i].len)
			memcpy(b + off + 12, lb->cpus[i].data, lb->cpus[i].len);
		off += 12 + lb->cpus[i].len;
	}
	*blob = b;
	*len = total;
	return 0;
}

static const uint8_t *take(const uint8_t **p, size_t *left, uint64_t n)
{
	const uint8_t *at = *p;

	if (n > *left)
		return NULL;
	*p += n;
	*left -= n;
	return at;
}

/**
 * vt_lastboot_decode() - a bundle from a blob (hostile input)
 * @lb: filled; its pointers point into @blob, which must outlive it
 * @blob: the bytes
 * @len: their length
 *
 * Return: 0, or -EBADMSG for anything malformed: a bad magic or version,
 * more than VT_LASTBOOT_MAX_CPUS CPUs, a CPU number twice, a length past the
 * end, bytes left over.
 */
int vt_lastboot_decode(struct vt_lastboot *lb, const void *blob, size_t len)
{
	const uint8_t *p = blob, *f;
	size_t left = len;
	uint32_t i, j;

	memset(lb, 0, sizeof(*lb));
	f = take(&p, &left, 12);
	if (!f || memcmp(f, LB_MAGIC, 4) != 0 || vt_get_le32(f + 4) != LB_VERSION)
		return -EBADMSG;
	lb->nr_cpus = vt_get_le32(f + 8);
	if (lb->nr_cpus > VT_LASTBOOT_MAX_CPUS)
		return -EBADMSG;
	if (!(f = take(&p, &left, 4)))
		return -EBADMSG;
	lb->name_len = vt_get_le32(f);
	if (!(lb->name = (const char *)take(&p, &left, lb->name_len)) || !(f = take(&p, &left, 4)))
		return -EBADMSG;
	lb->info_len = vt_get_le32(f);
	if (!(lb->info = (const char *)take(&p, &left, lb->info_len)) || !(f = take(&p, &left, 8)))
		return -EBADMSG;
	lb->meta_len = vt_get_le64(f);
	if (!(lb->meta = take(&p, &left, lb->meta_len)))
		return -EBADMSG;
	for (i = 0; i < lb->nr_cpus; i++) {
		if (!(f = take(&p, &left, 12)))
			return -EBADMSG;
		lb->cpus[i].cpu = vt_get_le32(f);
		lb->cpus[i].len = vt_get_le64(f + 4);
		if (lb->cpus[i].cpu >= VT_LASTBOOT_MAX_CPUS ||
		    !(lb->cpus[i].data = take(&p, &left, lb->cpus[i].len)))
			return -EBADMSG;
		for (j = 0; j < i; j++)
			if (lb->cpus[j].cpu == lb->cpus[i].cpu)
				return -EBADMSG;
	}
	return left ? -EBADMSG : 0;
}
