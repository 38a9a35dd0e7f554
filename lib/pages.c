// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Ring-buffer sub-buffers: header_page parsing, the event iterator and the
 * validator. A page is a u64 timestamp, a commit word (the kernel's long) and
 * `len` bytes of events. Each event starts with a u32 whose low 5 bits are
 * type_len and high 27 bits a time delta.
 *
 * Every page may come from a hostile guest. The iterator reads only inside
 * [data_offset, data_offset + len), advances at least 4 bytes per step, and
 * reports the first malformation as -EBADMSG with its offset and a reason.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "vt_le.h"
#include "vt_pages.h"

#define TS_SHIFT	27
#define TS_DELTA_MASK	((1u << TS_SHIFT) - 1)
#define TS_ABS_BITS	59
#define TS_ABS_MASK	((1ull << TS_ABS_BITS) - 1)

/*
 * Find "field: <decl> <name>; offset:N; size:N;" for @name in a header_page
 * text. The text is hostile in the collector (it comes from a guest).
 */
static int find_field(const char *text, size_t len, const char *name,
		      unsigned long *offset, unsigned long *size)
{
	size_t nlen = strlen(name);
	const char *p = text, *end = text + len;

	while (p < end) {
		const char *eol = memchr(p, '\n', end - p);
		const char *semi, *o, *s;
		char line[256];
		size_t l;

		if (!eol)
			eol = end;
		l = eol - p;
		if (l >= sizeof(line))
			goto next;
		memcpy(line, p, l);
		line[l] = '\0';
		semi = strchr(line, ';');
		if (!semi || strncmp(line, "\tfield:", 7) != 0 || (size_t)(semi - line) < nlen ||
		    memcmp(semi - nlen, name, nlen) != 0 ||
		    (semi - nlen > line && semi[-(long)nlen - 1] != ' ' && semi[-(long)nlen - 1] != '\t'))
			goto next;
		o = strstr(semi, "offset:");
		s = strstr(semi, "size:");
		if (!o || !s)
			return -EBADMSG;
		*offset = strtoul(o + 7, NULL, 10);
		*size = strtoul(s + 5, NULL, 10);
		return 0;
next:
		p = eol + 1;
	}
	return -ENOENT;
}

/**
 * vt_format_field() - where a field sits in an event's format text
 * @format: an events/SYSTEM/EVENT/format or events/header_page text (need
 *	not be NUL-terminated)
 * @len: its length
 * @name: the field
 * @offset: set to its offset in the event's payload
 * @size: set to its size in bytes
 *
 * Return: 0, -ENOENT when there is no such field, -EBADMSG when its line
 * has no offset or size.
 */
int vt_format_field(const char *format, size_t len, const char *name, unsigned long *offset,
		    unsigned long *size)
{
	return find_field(format, len, name, offset, size);
}

/**
 * vt_page_fmt_parse() - read the page layout from an events/header_page text
 * @fmt: filled on success
 * @header_page: the text (need not be NUL-terminated)
 * @len: its length
 *
 * The sub-buffer size is the data field's offset plus its size; it is not
 * always the system page size.
 *
 * Return: 0, or -EBADMSG when a field is missing or out of bounds.
 */
int vt_page_fmt_parse(struct vt_page_fmt *fmt, const char *header_page, size_t len)
{
	unsigned long ts_off, ts_size, c_off, c_size, d_off, d_size;

	if (find_field(header_page, len, "timestamp", &ts_off, &ts_size) < 0 ||
	    find_field(header_page, len, "commit", &c_off, &c_size) < 0 ||
	    find_field(header_page, len, "data", &d_off, &d_size) < 0)
		return -EBADMSG;
	if (ts_off != 0 || ts_size != 8 || c_off != 8 || (c_size != 4 && c_size != 8))
		return -EBADMSG;
	if (d_off != 8 + c_size || d_size > VT_SUBBUF_MAX || d_off + d_size < VT_SUBBUF_MIN ||
	    d_off + d_size > VT_SUBBUF_MAX)
		return -EBADMSG;
	fmt->subbuf_size = d_off + d_size;
	fmt->commit_size = c_size;
	fmt->data_offset = d_off;
	return 0;
}

/**
 * vt_page_fmt_default() - the layout of a 64-bit kernel with 4 KiB sub-buffers
 * @fmt: filled
 */
void vt_page_fmt_default(struct vt_page_fmt *fmt)
{
	fmt->subbuf_size = 4096;
	fmt->commit_size = 8;
	fmt->data_offset = 16;
}

static bool fmt_ok(const struct vt_page_fmt *fmt, size_t size)
{
	return fmt->subbuf_size >= VT_SUBBUF_MIN && fmt->subbuf_size <= VT_SUBBUF_MAX &&
	       (fmt->commit_size == 4 || fmt->commit_size == 8) &&
	       fmt->data_offset == 8 + fmt->commit_size && size == fmt->subbuf_size;
}

/**
 * vt_page_header() - decode and bound-check a page header
 * @fmt: the page layout
 * @page: the page
 * @size: its size; must equal @fmt->subbuf_size
 * @info: filled on success
 *
 * Checks the commit length against the page and, when the lost-event count
 * is stored, that it fits after the data. The upper half of a 64-bit commit
 * word is ignored: kernels leave it sign-extended.
 *
 * Return: 0, -EINVAL for a bad @fmt or @size, -EBADMSG for a bad header.
 */
int vt_page_header(const struct vt_page_fmt *fmt, const void *page, size_t size,
		   struct vt_page_info *info)
{
	const uint8_t *p = page;
	uint32_t commit;

	if (!fmt_ok(fmt, size))
		return -EINVAL;
	/* Only the low 32 bits matter; on 64-bit kernels the rest is sign fill. */
	commit = vt_get_le32(p + 8);
	info->timestamp = vt_get_le64(p);
	info->len = commit & VT_COMMIT_LEN_MASK;
	info->missed = commit & VT_COMMIT_MISSED;
	info->missed_stored = commit & VT_COMMIT_MISSED_STORED;
	info->missed_events = 0;
	if (info->len > fmt->subbuf_size - fmt->data_offset)
		return -EBADMSG;
	if (info->missed_stored) {
		uint32_t at = fmt->data_offset + info->len;

		if (fmt->subbuf_size - at < fmt->commit_size)
			return -EBADMSG;
		info->missed_events = fmt->commit_size == 8 ? vt_get_le64(p + at) :
							     vt_get_le32(p + at);
	}
	return 0;
}

/**
 * vt_page_iter_init() - start iterating over a page's events
 * @it: the iterator
 * @fmt: the page layout
 * @page: the page, which must stay valid while iterating
 * @size: its size; must equal @fmt->subbuf_size
 *
 * Return: 0, or the error of vt_page_header().
 */
int vt_page_iter_init(struct vt_page_iter *it, const struct vt_page_fmt *fmt,
		      const void *page, size_t size)
{
	struct vt_page_info info;
	int ret;

	memset(it, 0, sizeof(*it));
	ret = vt_page_header(fmt, page, size, &info);
	if (ret < 0) {
		it->bad_offset = 8;
		it->bad_reason = ret == -EINVAL ? "page size does not match the format" :
						  "commit length or lost count out of bounds";
		return ret;
	}
	it->page = page;
	it->pos = fmt->data_offset;
	it->end = fmt->data_offset + info.len;
	it->ts = info.timestamp;
	return 0;
}

static int iter_fail(struct vt_page_iter *it, uint32_t offset, const char *why)
{
	it->bad_offset = offset;
	it->bad_reason = why;
	it->pos = it->end;
	return -EBADMSG;
}

/**
 * vt_page_iter_next() - step to the next data event
 * @it: the iterator
 * @ev: filled with the event when 1 is returned
 *
 * Time extends, absolute timestamps and padding are consumed on the way.
 * Padding with a zero delta ends the page.
 *
 * Return: 1 for an event, 0 at the end of the page, -EBADMSG for a malformed
 * page (it->bad_offset and it->bad_reason say where and why; further calls
 * return 0).
 */
int vt_page_iter_next(struct vt_page_iter *it, struct vt_event *ev)
{
	while (it->pos < it->end) {
		uint32_t pos = it->pos, room = it->end - pos;
		uint32_t hdr, type_len, delta, arg, len;

		if (room < 4)
			return iter_fail(it, pos, "event header crosses the end of data");
		hdr = vt_get_le32(it->page + pos);
		type_len = hdr & 0x1f;
		delta = hdr >> 5;

		if (type_len >= 1 && type_len <= VT_TYPE_DATA_MAX) {
			len = type_len * 4;
			if (room - 4 < len)
				return iter_fail(it, pos, "event crosses the end of data");
			it->ts += delta;
			it->pos = pos + 4 + len;
			ev->ts = it->ts;
			ev->data = it->page + pos + 4;
			ev->len = len;
			ev->id = vt_get_le16(ev->data);
			ev->offset = pos;
			return 1;
		}
		if (type_len == VT_TYPE_PADDING && delta == 0) {
			/* The rest of the page is empty. */
			it->pos = it->end;
			return 0;
		}
		if (room < 8)
			return iter_fail(it, pos, "event length word crosses the end of data");
		arg = vt_get_le32(it->page + pos + 4);

		switch (type_len) {
		case 0:
			/* arg is the payload length plus its own 4 bytes. */
			if (arg < 4 + 2)
				return iter_fail(it, pos, "large event shorter than an event id");
			len = (arg + 3) & ~3u;
			if (len < arg || room - 4 < len)
				return iter_fail(it, pos, "large event crosses the end of data");
			it->ts += delta;
			it->pos = pos + 4 + len;
			ev->ts = it->ts;
			ev->data = it->page + pos + 8;
			ev->len = arg - 4;
			ev->id = vt_get_le16(ev->data);
			ev->offset = pos;
			return 1;
		case VT_TYPE_PADDING:
			/* A discarded event: skip it, but its delta still counts. */
			len = (arg + 3) & ~3u;
			if (len < arg || room - 4 < len || len < 4)
				return iter_fail(it, pos, "padding crosses the end of data");
			it->ts += delta;
			it->pos = pos + 4 + len;
			break;
		case VT_TYPE_TIME_EXTEND:
			it->ts += ((uint64_t)arg << TS_SHIFT) + delta;
			it->pos = pos + 8;
			break;
		default: /* VT_TYPE_TIME_STAMP */
			it->ts = (it->ts & ~TS_ABS_MASK) |
				 ((((uint64_t)arg << TS_SHIFT) | delta) & TS_ABS_MASK);
			it->pos = pos + 8;
			break;
		}
	}
	return 0;
}

/**
 * vt_page_validate() - check a whole page without producing events
 * @fmt: the page layout
 * @page: the page
 * @size: its size; must equal @fmt->subbuf_size
 * @info: when not NULL, the decoded header
 * @nr_events: when not NULL, the number of data events
 * @bad_offset: when not NULL and the page is malformed, where
 * @bad_reason: when not NULL and the page is malformed, why (a static string)
 *
 * This is the check the collector runs on every page it ingests. It walks the
 * event headers only; payloads are not read.
 *
 * Return: 0 for a well-formed page, -EINVAL for a bad @fmt or @size, -EBADMSG
 * for a malformed page.
 */
int vt_page_validate(const struct vt_page_fmt *fmt, const void *page, size_t size,
		     struct vt_page_info *info, uint32_t *nr_events,
		     uint32_t *bad_offset, const char **bad_reason)
{
	const uint8_t *p = page;
	struct vt_page_info hdr;
	uint32_t pos, end, count = 0;
	int ret;

	ret = vt_page_header(fmt, page, size, &hdr);
	if (ret < 0) {
		if (bad_offset)
			*bad_offset = 8;
		if (bad_reason)
			*bad_reason = ret == -EINVAL ? "page size does not match the format" :
						       "commit length or lost count out of bounds";
		return ret;
	}
	if (info)
		*info = hdr;
	pos = fmt->data_offset;
	end = pos + hdr.len;

	/*
	 * The same rules as vt_page_iter_next(), without the timestamps: this is
	 * the hot path of ingest, so keep it to one load and one branch per event.
	 */
	while (pos < end) {
		uint32_t room = end - pos, hdr32, type_len, arg, len;
		const char *why;

		if (room < 4) {
			why = "event header crosses the end of data";
			goto bad;
		}
		hdr32 = vt_get_le32(p + pos);
		type_len = hdr32 & 0x1f;
		if (type_len - 1 < VT_TYPE_DATA_MAX) {
			len = type_len * 4;
			if (room - 4 < len) {
				why = "event crosses the end of data";
				goto bad;
			}
			pos += 4 + len;
			count++;
			continue;
		}
		if (type_len == VT_TYPE_PADDING && (hdr32 >> 5) == 0)
			break;
		if (room < 8) {
			why = "event length word crosses the end of data";
			goto bad;
		}
		if (type_len >= VT_TYPE_TIME_EXTEND) {
			pos += 8;
			continue;
		}
		arg = vt_get_le32(p + pos + 4);
		len = (arg + 3) & ~3u;
		if (type_len == 0 && arg < 4 + 2) {
			why = "large event shorter than an event id";
			goto bad;
		}
		if (len < arg || len < 4 || room - 4 < len) {
			why = type_len == 0 ? "large event crosses the end of data" :
					      "padding crosses the end of data";
			goto bad;
		}
		pos += 4 + len;
		count += type_len == 0;
		continue;
bad:
		if (bad_offset)
			*bad_offset = pos;
		if (bad_reason)
			*bad_reason = why;
		return -EBADMSG;
	}
	if (nr_events)
		*nr_events = count;
	return 0;
}

/**
 * vt_page_pad() - make a partial page whole, the way the kernel pads
 * @fmt: the page layout
 * @page: a buffer of @fmt->subbuf_size bytes whose first bytes hold the page
 * @size: how many of those bytes are valid (at least the header)
 *
 * Zeroes everything after the data (and the stored lost count), so that the
 * page reads as its events followed by nothing. The commit length is left as
 * it is: readers stop there.
 *
 * Return: 0, -EINVAL for a bad @fmt or a @size smaller than the header, or
 * -EBADMSG when the header claims more data than @size holds.
 */
int vt_page_pad(const struct vt_page_fmt *fmt, void *page, size_t size)
{
	struct vt_page_info info;
	uint8_t *p = page;
	size_t keep;
	int ret;

	if (size < fmt->data_offset || size > fmt->subbuf_size)
		return -EINVAL;
	if (size < fmt->subbuf_size)
		memset(p + size, 0, fmt->subbuf_size - size);
	ret = vt_page_header(fmt, page, fmt->subbuf_size, &info);
	if (ret < 0)
		return ret;
	keep = fmt->data_offset + info.len + (info.missed_stored ? fmt->commit_size : 0);
	if (keep > size)
		return -EBADMSG;
	memset(p + keep, 0, fmt->subbuf_size - keep);
	return 0;
}

/**
 * vt_page_size_check() - is a page of the size its format announces?
 * @fmt: the page layout (the announced sub-buffer size)
 * @page: the page, @fmt->subbuf_size bytes as the stream framed it
 * @size: its size; must equal @fmt->subbuf_size
 * @why: when not NULL and the page is of another size, why (a static string)
 *
 * Two things hold for every page the kernel hands out: its commit length fits
 * the sub-buffer, and everything after its data (and the stored lost count) is
 * zero, because the kernel clears the rest of a page before it leaves the ring
 * buffer (ring_buffer_read_page()). Framed with a size larger than the
 * sender's, a page is followed by the sender's next page inside the frame:
 * bytes after the data. Framed with a smaller size, a page's commit length
 * runs past the frame. Either way every later page is misframed: callers
 * report it as one error rather than as many malformed pages. A page that is
 * malformed in any other way passes here and is vt_page_validate()'s to judge.
 *
 * Return: 0, -EINVAL for a bad @fmt or @size, -EMSGSIZE for a page of another
 * size.
 */
int vt_page_size_check(const struct vt_page_fmt *fmt, const void *page, size_t size,
		       const char **why)
{
	const uint8_t *p = page;
	uint32_t commit, len, end, i;

	if (!fmt_ok(fmt, size))
		return -EINVAL;
	commit = vt_get_le32(p + 8);
	len = commit & VT_COMMIT_LEN_MASK;
	if (len > fmt->subbuf_size - fmt->data_offset) {
		if (len <= VT_SUBBUF_MAX - fmt->data_offset) {
			if (why)
				*why = "commit length longer than the page: the sender's sub-buffers are larger";
			return -EMSGSIZE;
		}
		return 0;
	}
	end = fmt->data_offset + len;
	if ((commit & VT_COMMIT_MISSED_STORED) && fmt->subbuf_size - end >= fmt->commit_size)
		end += fmt->commit_size;
	/* Word at a time where aligned: this runs on every page ingested. */
	for (i = end; i < fmt->subbuf_size && (i & 7); i++)
		if (p[i])
			goto data_after;
	for (; i + 8 <= fmt->subbuf_size; i += 8)
		if (vt_get_le64(p + i))
			goto data_after;
	for (; i < fmt->subbuf_size; i++)
		if (p[i])
			goto data_after;
	return 0;
data_after:
	if (why)
		*why = "data after the page's end: the sender's sub-buffers are smaller";
	return -EMSGSIZE;
}
