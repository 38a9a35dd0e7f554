// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The metadata bundle on the wire. A bundle is a magic, a version, and a
 * sequence of records { u32 tag; u32 len; u8 data[len]; } ending with tag 0.
 * All integers are little-endian. doc/virtio-trace-protocol.5 documents it.
 *
 * vt_meta_decode() takes bundles from guests: every length is checked
 * against what is left, every count and size against the VT_META_MAX_*
 * bounds, names against a strict character set, and singletons may appear
 * only once.
 */
#include <errno.h>
#include <stdbool.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "vt_le.h"
#include "vt_meta.h"
#include "vt_pages.h"
#include "vt_grow.h"

#define META_MAGIC	"VTMETA\0\0"
#define META_VERSION	1
#define META_HDR	12	/* magic + u32 version */
#define REC_HDR		8

enum meta_tag {
	TAG_END = 0,
	TAG_HEADER_PAGE,
	TAG_HEADER_EVENT,
	TAG_EVENT,		/* system \0 name \0 format; system "ftrace" for ftrace formats */
	TAG_KALLSYMS,
	TAG_PRINTK_FORMATS,
	TAG_SAVED_CMDLINES,
	TAG_SAVED_TGIDS,
	TAG_TRACE_CLOCK,
	TAG_UNAME,
	TAG_NR_CPUS,		/* u32 */
	TAG_SUBBUF_SIZE,	/* u32 */
	TAG_IOMMU_GROUPS,	/* optional; older decoders skip it */
	TAG_PCI_DEVICES,	/* optional; older decoders skip it */
	TAG_KALLSYMS_PART,	/* kallsyms in pieces, concatenated in order (instead of TAG_KALLSYMS) */
	TAG_KALLSYMS_KEY,	/* u64, not 0; optional; older decoders skip it */
	TAG_MAX
};

/*
 * Where an encoding goes: into a growing buffer (@emit NULL), or piece by
 * piece to @emit, which may also be a counter. @len is the bytes so far.
 */
struct wbuf {
	uint8_t *p;
	size_t len, cap;
	int (*emit)(void *ctx, const void *data, size_t len);
	void *ctx;
};

static int wbuf_reserve(struct wbuf *w, size_t more)
{
	if (more > VT_META_MAX_TOTAL || w->len + more > VT_META_MAX_TOTAL)
		return -E2BIG;
	if (w->emit)
		return 0;
	return vt_grow((void **)&w->p, &w->cap, w->len + more, 1);
}

/* Append @len bytes; wbuf_reserve() made room. */
static int wbuf_put(struct wbuf *w, const void *data, size_t len)
{
	int ret = 0;

	if (!len)
		return 0;
	if (w->emit)
		ret = w->emit(w->ctx, data, len);
	else
		memcpy(w->p + w->len, data, len);
	if (ret < 0)
		return ret;
	w->len += len;
	return 0;
}

/* Append one record made of up to three pieces (strings get their NUL). */
static int put_rec(struct wbuf *w, uint32_t tag, const void *a, size_t alen,
		   const void *b, size_t blen, const void *c, size_t clen)
{
	size_t len = alen + blen + clen;
	uint8_t hdr[REC_HDR];
	int ret;

	if (len > UINT32_MAX)
		return -E2BIG;
	ret = wbuf_reserve(w, REC_HDR + len);
	if (ret < 0)
		return ret;
	vt_put_le32(hdr, tag);
	vt_put_le32(hdr + 4, len);
	if ((ret = wbuf_put(w, hdr, REC_HDR)) < 0 || (ret = wbuf_put(w, a, alen)) < 0 ||
	    (ret = wbuf_put(w, b, blen)) < 0 || (ret = wbuf_put(w, c, clen)) < 0)
		return ret;
	return 0;
}

static int put_blob(struct wbuf *w, uint32_t tag, const struct vt_blob *b)
{
	if (!b->data)
		return 0;
	return put_rec(w, tag, b->data, b->len, NULL, 0, NULL, 0);
}

static int put_u32(struct wbuf *w, uint32_t tag, uint32_t v)
{
	uint8_t le[4];

	vt_put_le32(le, v);
	return put_rec(w, tag, le, 4, NULL, 0, NULL, 0);
}

static int put_key(struct wbuf *w, uint64_t key)
{
	uint8_t le[8];

	if (!key)
		return 0;
	vt_put_le64(le, key);
	return put_rec(w, TAG_KALLSYMS_KEY, le, 8, NULL, 0, NULL, 0);
}

static int put_system(struct wbuf *w, const char *sys, const struct vt_meta_system *s)
{
	uint32_t i;
	int ret;

	for (i = 0; i < s->nr_events; i++) {
		const struct vt_meta_event *e = &s->events[i];
		size_t slen = strlen(sys) + 1, nlen = strlen(e->name) + 1;
		char *name;

		/* system \0 name \0 format: two pieces for the names, one for the body. */
		name = malloc(slen + nlen);
		if (!name)
			return -ENOMEM;
		memcpy(name, sys, slen);
		memcpy(name + slen, e->name, nlen);
		ret = put_rec(w, TAG_EVENT, name, slen + nlen, e->format.data, e->format.len,
			      NULL, 0);
		free(name);
		if (ret < 0)
			return ret;
	}
	return 0;
}

/* How much of kallsyms one TAG_KALLSYMS_PART carries when read from a file. */
#define KALLSYMS_PIECE	(64u << 10)

/* kallsyms read from @fd as it goes, one TAG_KALLSYMS_PART per piece. */
static int put_pieces(struct wbuf *w, int fd)
{
	uint64_t total = 0;
	bool eof = false;
	uint8_t *buf;
	int ret = 0;

	buf = malloc(KALLSYMS_PIECE);
	if (!buf)
		return -ENOMEM;
	while (!eof && ret == 0) {
		size_t fill = 0;

		while (fill < KALLSYMS_PIECE) {
			ssize_t n = read(fd, buf + fill, KALLSYMS_PIECE - fill);

			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0) {
				ret = -errno;
				break;
			}
			if (n == 0) {
				eof = true;
				break;
			}
			fill += n;
		}
		if (ret < 0 || !fill)
			break;
		total += fill;
		if (total > VT_META_MAX_BLOB)
			ret = -EFBIG;
		else
			ret = put_rec(w, TAG_KALLSYMS_PART, buf, fill, NULL, 0, NULL, 0);
	}
	free(buf);
	return ret;
}

/* @kfd: when not negative, kallsyms comes from it in pieces (@m has none). */
static int encode(const struct vt_meta *m, struct wbuf *w, int kfd)
{
	uint8_t hdr[META_HDR];
	uint32_t i;
	int ret;

	ret = wbuf_reserve(w, META_HDR);
	if (ret < 0)
		return ret;
	memcpy(hdr, META_MAGIC, 8);
	vt_put_le32(hdr + 8, META_VERSION);
	if ((ret = wbuf_put(w, hdr, META_HDR)) < 0)
		return ret;
	if ((ret = put_blob(w, TAG_HEADER_PAGE, &m->header_page)) < 0 ||
	    (ret = put_blob(w, TAG_HEADER_EVENT, &m->header_event)) < 0 ||
	    (ret = put_system(w, "ftrace", &m->ftrace)) < 0)
		return ret;
	for (i = 0; i < m->nr_systems; i++) {
		ret = put_system(w, m->systems[i].name, &m->systems[i]);
		if (ret < 0)
			return ret;
	}
	if ((ret = kfd >= 0 ? put_pieces(w, kfd) : put_blob(w, TAG_KALLSYMS, &m->kallsyms)) < 0 ||
	    (ret = put_blob(w, TAG_PRINTK_FORMATS, &m->printk_formats)) < 0 ||
	    (ret = put_blob(w, TAG_SAVED_CMDLINES, &m->saved_cmdlines)) < 0 ||
	    (ret = put_blob(w, TAG_SAVED_TGIDS, &m->saved_tgids)) < 0 ||
	    (ret = put_blob(w, TAG_TRACE_CLOCK, &m->trace_clock)) < 0 ||
	    (ret = put_blob(w, TAG_UNAME, &m->uname)) < 0 ||
	    (ret = put_u32(w, TAG_NR_CPUS, m->nr_cpus)) < 0 ||
	    (ret = put_u32(w, TAG_SUBBUF_SIZE, m->subbuf_size)) < 0 ||
	    (ret = put_blob(w, TAG_IOMMU_GROUPS, &m->iommu_groups)) < 0 ||
	    (ret = put_blob(w, TAG_PCI_DEVICES, &m->pci_devices)) < 0 ||
	    (ret = put_key(w, m->kallsyms_key)) < 0 ||
	    (ret = put_rec(w, TAG_END, NULL, 0, NULL, 0, NULL, 0)) < 0)
		return ret;
	return 0;
}

/**
 * vt_meta_encode() - serialise a bundle for the control port
 * @m: the bundle
 * @buf: set to a malloc()ed buffer holding the encoding
 * @len: set to its length
 *
 * Return: 0, -ENOMEM, or -E2BIG when the encoding would exceed
 * VT_META_MAX_TOTAL.
 */
int vt_meta_encode(const struct vt_meta *m, void **buf, size_t *len)
{
	struct wbuf w = { 0 };
	int ret;

	ret = encode(m, &w, -1);
	if (ret < 0) {
		free(w.p);
		return ret;
	}
	*buf = w.p;
	*len = w.len;
	return 0;
}

static int count_only(void *ctx, const void *data, size_t len)
{
	return 0;
}

/**
 * vt_meta_encode_to() - serialise a bundle piece by piece, holding no copy
 * @m: the bundle
 * @emit: called with each piece in order (a record's header, then its
 *	data, straight from @m); a negative return ends the encoding with it.
 *	NULL: only count.
 * @ctx: for @emit
 * @len: when not NULL, set to the whole encoding's length
 *
 * The pieces are exactly the bytes vt_meta_encode() would return. Count
 * first (@emit NULL) to learn the length, then emit.
 *
 * Return: 0, @emit's error, or -E2BIG when the encoding would exceed
 * VT_META_MAX_TOTAL (then nothing was emitted).
 */
int vt_meta_encode_to(const struct vt_meta *m, int (*emit)(void *ctx, const void *data, size_t len),
		      void *ctx, size_t *len)
{
	struct wbuf w = { .emit = count_only };
	int ret;

	ret = encode(m, &w, -1);
	if (ret < 0 || !emit) {
		if (ret == 0 && len)
			*len = w.len;
		return ret;
	}
	w = (struct wbuf){ .emit = emit, .ctx = ctx };
	ret = encode(m, &w, -1);
	if (ret == 0 && len)
		*len = w.len;
	return ret;
}

/**
 * vt_meta_encode_fd() - serialise a bundle piece by piece, kallsyms from a file
 * @m: the bundle, without kallsyms
 * @kfd: /proc/kallsyms (or a file like it), read to its end as the encoding
 *	goes, at most VT_META_MAX_BLOB
 * @emit: called with each piece in order, as for vt_meta_encode_to()
 * @ctx: for @emit
 * @len: when not NULL, set to the whole encoding's length
 *
 * The bundle's length is known only at its end, and kallsyms is never held
 * whole: it goes out in TAG_KALLSYMS_PART records of up to 64 KiB, which
 * vt_meta_decode() joins again.
 *
 * Return: 0, @emit's error, the read's error, -EINVAL when @m has kallsyms,
 * -EFBIG when the file is over VT_META_MAX_BLOB, -E2BIG when the encoding
 * is over VT_META_MAX_TOTAL, -ENOMEM. On error, part may have been emitted.
 */
int vt_meta_encode_fd(const struct vt_meta *m, int kfd,
		      int (*emit)(void *ctx, const void *data, size_t len), void *ctx, size_t *len)
{
	struct wbuf w = { .emit = emit, .ctx = ctx };
	int ret;

	if (kfd < 0 || !emit || m->kallsyms.data)
		return -EINVAL;
	ret = encode(m, &w, kfd);
	if (ret == 0 && len)
		*len = w.len;
	return ret;
}

/* Names become trace.dat section names and report columns: keep them tame. */
static bool name_ok(const char *s, size_t len)
{
	size_t i;

	if (len == 0 || len > VT_META_MAX_NAME)
		return false;
	for (i = 0; i < len; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '-' || c == '.'))
			return false;
	}
	return true;
}

static int take_blob(struct vt_blob *b, const uint8_t *p, uint32_t len, uint32_t max)
{
	if (b->data)
		return -EBADMSG;	/* a singleton seen twice */
	if (len > max)
		return -EMSGSIZE;
	b->data = malloc((size_t)len + 1);
	if (!b->data)
		return -ENOMEM;
	memcpy(b->data, p, len);
	b->data[len] = '\0';
	b->len = len;
	return 0;
}

/* A TAG_KALLSYMS_PART: appended to what the earlier pieces gave. */
static int take_piece(struct vt_blob *b, size_t *cap, const uint8_t *p, uint32_t len)
{
	int ret;

	/* Never empty, and never after a whole TAG_KALLSYMS. */
	if (!len || (b->data && !*cap))
		return -EBADMSG;
	if (len > VT_META_MAX_BLOB - b->len)
		return -EMSGSIZE;
	/* b->len + len is at most VT_META_MAX_BLOB (above), and one more for the NUL. */
	ret = vt_grow_max((void **)&b->data, cap, b->len + len + 1, 1, (size_t)VT_META_MAX_BLOB + 1);
	if (ret < 0)
		return ret;
	memcpy(b->data + b->len, p, len);
	b->len += len;
	b->data[b->len] = '\0';
	return 0;
}

static int take_event(struct vt_meta *m, const uint8_t *p, uint32_t len, uint32_t *nr_events)
{
	const char *sys = (const char *)p, *name, *body;
	const uint8_t *end = p + len, *z1, *z2;

	z1 = memchr(p, '\0', len);
	if (!z1)
		return -EBADMSG;
	z2 = memchr(z1 + 1, '\0', end - (z1 + 1));
	if (!z2)
		return -EBADMSG;
	name = (const char *)z1 + 1;
	body = (const char *)z2 + 1;
	if (!name_ok(sys, z1 - p) || !name_ok(name, z2 - (z1 + 1)))
		return -EBADMSG;
	if ((size_t)(end - (const uint8_t *)body) > VT_META_MAX_FORMAT)
		return -EMSGSIZE;
	if (memchr(body, '\0', end - (const uint8_t *)body))
		return -EBADMSG;
	if (++*nr_events > VT_META_MAX_EVENTS)
		return -EMSGSIZE;
	if (strcmp(sys, "ftrace") != 0 && m->nr_systems >= VT_META_MAX_SYSTEMS) {
		uint32_t i;

		/* A new system past the bound is refused; an existing one is fine. */
		for (i = 0; i < m->nr_systems; i++)
			if (strcmp(m->systems[i].name, sys) == 0)
				break;
		if (i == m->nr_systems)
			return -EMSGSIZE;
	}
	return vt_meta_add_event(m, sys, name, body, end - (const uint8_t *)body);
}

/**
 * vt_meta_decode() - parse a bundle that came from a guest
 * @m: filled on success; on failure it is left empty
 * @buf: the encoding
 * @len: its length
 *
 * Return: 0; -EBADMSG for a malformed bundle (bad magic, a record that runs
 * past the end, a bad name, a singleton twice, a missing header_page or a
 * sub-buffer size that disagrees with it); -EMSGSIZE when a bound is
 * exceeded; -EPROTO for an unknown version; -ENOMEM.
 */
int vt_meta_decode(struct vt_meta *m, const void *buf, size_t len)
{
	const uint8_t *p = buf, *end = p + len;
	struct vt_page_fmt fmt;
	uint32_t nr_events = 0;
	bool seen_cpus = false, seen_subbuf = false, ended = false;
	size_t kallsyms_cap = 0;	/* not 0 once kallsyms came in pieces */
	int ret = 0;

	memset(m, 0, sizeof(*m));
	if (len > VT_META_MAX_TOTAL)
		return -EMSGSIZE;
	if (len < META_HDR || memcmp(p, META_MAGIC, 8) != 0)
		return -EBADMSG;
	if (vt_get_le32(p + 8) != META_VERSION)
		return -EPROTO;
	p += META_HDR;

	while (!ended) {
		uint32_t tag, rlen;

		if ((size_t)(end - p) < REC_HDR) {
			ret = -EBADMSG;
			goto err;
		}
		tag = vt_get_le32(p);
		rlen = vt_get_le32(p + 4);
		p += REC_HDR;
		if (rlen > (size_t)(end - p)) {
			ret = -EBADMSG;
			goto err;
		}
		switch (tag) {
		case TAG_END:
			ended = rlen == 0 && p == end;
			if (!ended)
				ret = -EBADMSG;
			break;
		case TAG_HEADER_PAGE:
			ret = take_blob(&m->header_page, p, rlen, VT_META_MAX_FORMAT);
			break;
		case TAG_HEADER_EVENT:
			ret = take_blob(&m->header_event, p, rlen, VT_META_MAX_FORMAT);
			break;
		case TAG_EVENT:
			ret = take_event(m, p, rlen, &nr_events);
			break;
		case TAG_KALLSYMS:
			ret = take_blob(&m->kallsyms, p, rlen, VT_META_MAX_BLOB);
			break;
		case TAG_KALLSYMS_PART:
			ret = take_piece(&m->kallsyms, &kallsyms_cap, p, rlen);
			break;
		case TAG_PRINTK_FORMATS:
			ret = take_blob(&m->printk_formats, p, rlen, VT_META_MAX_BLOB);
			break;
		case TAG_SAVED_CMDLINES:
			ret = take_blob(&m->saved_cmdlines, p, rlen, VT_META_MAX_BLOB);
			break;
		case TAG_SAVED_TGIDS:
			ret = take_blob(&m->saved_tgids, p, rlen, VT_META_MAX_BLOB);
			break;
		case TAG_TRACE_CLOCK:
			ret = take_blob(&m->trace_clock, p, rlen, VT_META_MAX_NAME * 4);
			break;
		case TAG_UNAME:
			ret = take_blob(&m->uname, p, rlen, VT_META_MAX_NAME * 4);
			break;
		case TAG_IOMMU_GROUPS:
			ret = take_blob(&m->iommu_groups, p, rlen, VT_META_MAX_SYSINFO);
			break;
		case TAG_PCI_DEVICES:
			ret = take_blob(&m->pci_devices, p, rlen, VT_META_MAX_SYSINFO);
			break;
		case TAG_KALLSYMS_KEY:
			if (rlen != 8 || m->kallsyms_key || !vt_get_le64(p)) {
				ret = -EBADMSG;
				break;
			}
			m->kallsyms_key = vt_get_le64(p);
			break;
		case TAG_NR_CPUS:
		case TAG_SUBBUF_SIZE:
			if (rlen != 4 || (tag == TAG_NR_CPUS ? seen_cpus : seen_subbuf)) {
				ret = -EBADMSG;
				break;
			}
			if (tag == TAG_NR_CPUS) {
				m->nr_cpus = vt_get_le32(p);
				seen_cpus = true;
			} else {
				m->subbuf_size = vt_get_le32(p);
				seen_subbuf = true;
			}
			break;
		default:
			/* Unknown tags from a newer agent are skipped, not trusted. */
			break;
		}
		if (ret < 0)
			goto err;
		p += rlen;
	}

	/* What every reader needs, and consistent with itself. */
	if (!m->header_page.data || !m->header_event.data || !seen_cpus || !seen_subbuf ||
	    m->nr_cpus == 0 || m->nr_cpus > VT_META_MAX_CPUS ||
	    vt_page_fmt_parse(&fmt, m->header_page.data, m->header_page.len) < 0 ||
	    fmt.subbuf_size != m->subbuf_size) {
		ret = -EBADMSG;
		goto err;
	}
	return 0;
err:
	vt_meta_free(m);
	memset(m, 0, sizeof(*m));
	return ret;
}
