/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Little-endian loads and stores that never assume alignment. Everything a
 * guest sends and everything we write to disk is little-endian.
 */
#ifndef VT_LE_H
#define VT_LE_H

#include <stdint.h>
#include <string.h>
#include <endian.h>

static inline uint16_t vt_get_le16(const void *p)
{
	uint16_t v;

	memcpy(&v, p, sizeof(v));
	return le16toh(v);
}

static inline uint32_t vt_get_le32(const void *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return le32toh(v);
}

static inline uint64_t vt_get_le64(const void *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return le64toh(v);
}

static inline void vt_put_le16(void *p, uint16_t v)
{
	v = htole16(v);
	memcpy(p, &v, sizeof(v));
}

static inline void vt_put_le32(void *p, uint32_t v)
{
	v = htole32(v);
	memcpy(p, &v, sizeof(v));
}

static inline void vt_put_le64(void *p, uint64_t v)
{
	v = htole64(v);
	memcpy(p, &v, sizeof(v));
}

#endif
