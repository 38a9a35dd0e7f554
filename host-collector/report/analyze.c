// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * What the report's analyses share: bounded access to event fields (the
 * JSON writer is libcollect's, json.c). libtraceevent's own accessors trust the field
 * offsets and __data_loc words of a record; a guest writes those bytes, so
 * every offset and length is checked here against the record's size first.
 */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include <event-parse.h>

#include "analyze.h"

/**
 * an_field() - an event's field by name
 * @ev: the event (NULL gives NULL)
 * @name: the field
 *
 * Return: the field, or NULL.
 */
struct tep_format_field *an_field(struct tep_event *ev, const char *name)
{
	return ev ? tep_find_field(ev, name) : NULL;
}

static bool fits(const struct tep_record *rec, unsigned int off, unsigned int len)
{
	return rec->size >= 0 && off <= (unsigned int)rec->size && len <= (unsigned int)rec->size - off;
}

/**
 * an_u64() - a numeric field of a record, checked against the record's size
 * @rec: the record
 * @f: the field (NULL fails)
 * @v: set to the value, zero-extended
 *
 * Return: true when the field is a 1, 2, 4 or 8-byte number inside the record.
 */
bool an_u64(const struct tep_record *rec, const struct tep_format_field *f, uint64_t *v)
{
	unsigned long long x;

	if (!f || (f->flags & (TEP_FIELD_IS_ARRAY | TEP_FIELD_IS_DYNAMIC)) ||
	    (f->size != 1 && f->size != 2 && f->size != 4 && f->size != 8) ||
	    f->offset < 0 || !fits(rec, f->offset, f->size))
		return false;
	if (tep_read_number_field((struct tep_format_field *)f, rec->data, &x) < 0)
		return false;
	*v = x;
	return true;
}

/**
 * an_i64() - like an_u64(), sign-extended when the field is signed
 * @rec: the record
 * @f: the field
 * @v: set to the value
 *
 * Return: true when the field could be read.
 */
bool an_i64(const struct tep_record *rec, const struct tep_format_field *f, int64_t *v)
{
	uint64_t x;

	if (!an_u64(rec, f, &x))
		return false;
	if ((f->flags & TEP_FIELD_IS_SIGNED) && f->size < 8 && (x >> (f->size * 8 - 1)) & 1)
		x |= ~0ull << (f->size * 8);
	*v = (int64_t)x;
	return true;
}

/**
 * an_sanitize() - replace bytes that are not printable ASCII with '?'
 * @s: the string, changed in place
 */
void an_sanitize(char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f)
			*s = '?';
}

/**
 * an_str() - a string field (__string/__data_loc, __rel_loc or char[N]), bounded
 * @rec: the record
 * @f: the field
 * @buf: where the string goes, NUL-terminated, truncated to @size - 1,
 *	 without trailing newlines, and sanitized (an_sanitize())
 * @size: size of @buf (> 0)
 *
 * Return: true when the field and the bytes it points at lie inside the record.
 */
bool an_str(const struct tep_record *rec, const struct tep_format_field *f, char *buf, size_t size)
{
	unsigned int off, len;
	uint64_t loc;
	size_t n;

	buf[0] = '\0';
	if (!f || f->offset < 0)
		return false;
	if (f->flags & TEP_FIELD_IS_DYNAMIC) {
		if (f->size != 4 || !fits(rec, f->offset, 4) ||
		    tep_read_number_field((struct tep_format_field *)f, rec->data,
					  (unsigned long long *)&loc) < 0)
			return false;
		off = loc & 0xffff;
		len = (loc >> 16) & 0xffff;
		if (f->flags & TEP_FIELD_IS_RELATIVE)
			off += f->offset + f->size;
	} else if (f->flags & TEP_FIELD_IS_ARRAY) {
		off = f->offset;
		/* char buf[] of size 0 (ftrace's print): to the end of the record. */
		len = f->size ? (unsigned int)f->size :
		      (rec->size > f->offset ? (unsigned int)(rec->size - f->offset) : 0);
	} else {
		return false;
	}
	if (!fits(rec, off, len))
		return false;
	n = len < size - 1 ? len : size - 1;
	memcpy(buf, (const char *)rec->data + off, n);
	buf[n] = '\0';
	n = strlen(buf);
	while (n && buf[n - 1] == '\n')
		buf[--n] = '\0';
	an_sanitize(buf);
	return true;
}

/**
 * an_func() - the kernel function an address falls in, from the trace's kallsyms
 * @tep: the trace's event handle (its kallsyms, modules included, were loaded
 *	 by libtracecmd from the file)
 * @addr: the address
 * @start: set to the function's start (may be NULL)
 *
 * Return: the name, or NULL when no symbol covers @addr.
 */
const char *an_func(struct tep_handle *tep, uint64_t addr, uint64_t *start)
{
	unsigned long long s = 0;
	unsigned long size = 0;
	const char *name = NULL;

	if (!addr || tep_find_function_info(tep, addr, &name, &s, &size) <= 0 || !name || addr < s)
		return NULL;
	if (start)
		*start = s;
	return name;
}

/**
 * an_ts() - a timestamp as trace-cmd report and the mmiotrace log print it
 * @buf: where to write "SEC.USEC"
 * @size: its size
 * @ns: nanoseconds (libtracecmd's timestamps, host-aligned for a guest)
 *
 * Microseconds are rounded to the nearest, as both do.
 *
 * Return: @buf.
 */
const char *an_ts(char *buf, size_t size, uint64_t ns)
{
	uint64_t us = ns / 1000u + (ns % 1000u >= 500);

	snprintf(buf, size, "%" PRIu64 ".%06" PRIu64, us / 1000000u, us % 1000000u);
	return buf;
}
