/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Ring-buffer sub-buffers ("pages") as the kernel hands them out through
 * per_cpu/cpuN/trace_pipe_raw. Pages come from guests, so every function
 * here treats its input as hostile: no input reads outside the page, loops,
 * or crashes; a malformed page is -EBADMSG with the offset of the fault.
 */
#ifndef VT_PAGES_H
#define VT_PAGES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Sub-buffer sizes we accept: a page up to the kernel's largest subbuf (1 MiB). */
#define VT_SUBBUF_MIN		64u
#define VT_SUBBUF_MAX		(1u << 20)

/* Commit word: low 27 bits are the data length; high bits are flags. */
#define VT_COMMIT_LEN_MASK	((1u << 27) - 1)
#define VT_COMMIT_MISSED	(1ull << 31)	/* events were lost before this page */
#define VT_COMMIT_MISSED_STORED	(1ull << 30)	/* the lost count follows the data */

/* Event header type_len values above the data range. */
#define VT_TYPE_DATA_MAX	28
#define VT_TYPE_PADDING		29
#define VT_TYPE_TIME_EXTEND	30
#define VT_TYPE_TIME_STAMP	31

/**
 * struct vt_page_fmt - the layout described by events/header_page
 * @subbuf_size: bytes per sub-buffer, header included (data offset + data size)
 * @commit_size: width of the commit word, 4 or 8 (the kernel's long)
 * @data_offset: where event data starts (16 on 64-bit kernels)
 */
struct vt_page_fmt {
	uint32_t subbuf_size;
	uint32_t commit_size;
	uint32_t data_offset;
};

/**
 * struct vt_page_info - what a page's header says
 * @timestamp: absolute time of the page, in trace-clock units
 * @len: bytes of event data (commit & VT_COMMIT_LEN_MASK)
 * @missed: events were lost between the previous page and this one
 * @missed_stored: @missed_events holds how many
 * @missed_events: the stored lost-event count, 0 when not stored
 */
struct vt_page_info {
	uint64_t timestamp;
	uint32_t len;
	bool missed;
	bool missed_stored;
	uint64_t missed_events;
};

/**
 * struct vt_event - one data event inside a page
 * @ts: absolute timestamp (page timestamp plus every delta before it)
 * @data: the payload, starting with the u16 common_type
 * @len: payload length in bytes (at least 2)
 * @id: the event id (common_type)
 * @offset: where the event header sits, from the start of the page
 */
struct vt_event {
	uint64_t ts;
	const uint8_t *data;
	uint32_t len;
	uint16_t id;
	uint32_t offset;
};

/**
 * struct vt_page_iter - cursor over one page; treat as opaque
 */
struct vt_page_iter {
	const uint8_t *page;
	uint32_t pos;		/* next event header, absolute offset */
	uint32_t end;		/* data_offset + len */
	uint64_t ts;
	uint32_t bad_offset;
	const char *bad_reason;
};

int vt_page_fmt_parse(struct vt_page_fmt *fmt, const char *header_page, size_t len);
int vt_format_field(const char *format, size_t len, const char *name, unsigned long *offset,
		    unsigned long *size);
void vt_page_fmt_default(struct vt_page_fmt *fmt);
int vt_page_header(const struct vt_page_fmt *fmt, const void *page, size_t size,
		   struct vt_page_info *info);
int vt_page_iter_init(struct vt_page_iter *it, const struct vt_page_fmt *fmt,
		      const void *page, size_t size);
int vt_page_iter_next(struct vt_page_iter *it, struct vt_event *ev);
int vt_page_validate(const struct vt_page_fmt *fmt, const void *page, size_t size,
		     struct vt_page_info *info, uint32_t *nr_events,
		     uint32_t *bad_offset, const char **bad_reason);
int vt_page_pad(const struct vt_page_fmt *fmt, void *page, size_t size);
int vt_page_size_check(const struct vt_page_fmt *fmt, const void *page, size_t size,
		       const char **why);

#endif
