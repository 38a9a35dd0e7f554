// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * record --last-boot NAME: the guest's previous boot's trace, kept by the
 * kernel in a persistent boot-mapped instance NAME across a crash and warm
 * reset (Linux 6.12+), asked for before anything else is configured and
 * written to guest-GUEST.lastboot.dat. Its timestamps are the previous boot's
 * trace clock: the file says so (a LAST_BOOT_INFO option, as trace-cmd 3.4
 * writes for such buffers) and has no TIME_SHIFT, so it is never merged with
 * this boot's host timeline.
 *
 * The bundle is the guest's: its instance name must be the one asked for,
 * its info text is made safe (control characters and invalid UTF-8 replaced,
 * and a line of its own that would pass for ours disarmed) before it goes
 * into the note, and its metadata is cleaned as every trace's is. The file
 * is made like the run's others: relative to the output directory's fd, as
 * an exclusive temporary file never through a link, then renamed into place.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collect.h"
#include "lastboot-file.h"
#include "recopts.h"
#include "text.h"
#include "store/spool.h"
#include "vt_lastboot.h"
#include "vt_meta.h"
#include "vt_pages.h"
#include "vt_proto.h"
#include "vt_tracedat.h"

#define OPT_LAST_BOOT_INFO	24	/* trace-cmd 3.4's TRACECMD_OPTION_LAST_BOOT_INFO */
/* Of the guest's text in the note: ours always fits after it. */
#define NOTE_INFO_MAX		4096
#define OUR_LINE		"# virtio-trace:"

/*
 * The note: the kernel's text (what trace-cmd 3.4 reads), made safe and cut
 * at NOTE_INFO_MAX, then our line saying what it means here. A guest line
 * that starts as ours does is disarmed ('#' becomes '?'): the last line is
 * always ours. Return: its length, without the NUL it ends with.
 */
static size_t make_note(char *note, size_t size, const struct vt_lastboot *lb, const char *instance,
			uint64_t *replaced)
{
	size_t len = lb->info_len < NOTE_INFO_MAX ? lb->info_len : NOTE_INFO_MAX, i;
	int n;

	memcpy(note, lb->info, len);
	len = vt_text_clean(note, len, "\t\n", replaced);
	for (i = 0; i < len; i++)
		if ((i == 0 || note[i - 1] == '\n') && len - i >= strlen(OUR_LINE) &&
		    !memcmp(note + i, OUR_LINE, strlen(OUR_LINE))) {
			note[i] = '?';
			(*replaced)++;
		}
	if (len && note[len - 1] != '\n')
		note[len++] = '\n';
	n = snprintf(note + len, size - len, OUR_LINE " the previous boot's trace of instance %s; "
		     "timestamps are that boot's trace clock, not synchronised with the host\n",
		     instance);
	return len + (n > 0 ? (size_t)n : 0);
}

/* Write @lb as a trace file to @fd; sets @pages and @bad. */
static int write_file(int fd, const struct vt_lastboot *lb, const struct vt_meta *m,
		      const struct record_opts *o, uint64_t *pages, uint64_t *bad,
		      uint64_t *replaced)
{
	struct vt_tracedat_opts opts = { .version = o->file_version,
					 .compression = VT_TD_COMPRESS_NONE };
	struct vt_page_fmt fmt;
	struct vt_tracedat *w;
	char note[NOTE_INFO_MAX + 512];
	uint32_t cpu, i;
	size_t n;
	int ret;

	ret = vt_page_fmt_parse(&fmt, m->header_page.data, m->header_page.len);
	if (ret < 0)
		return ret;
	w = vt_tracedat_create(fd, m, &opts);
	if (!w)
		return -errno;
	n = make_note(note, sizeof(note), lb, o->last_boot, replaced);
	ret = vt_tracedat_add_option(w, OPT_LAST_BOOT_INFO, note, n + 1);
	for (cpu = 0; ret == 0 && cpu < m->nr_cpus; cpu++) {
		ret = vt_tracedat_cpu_begin(w, cpu);
		for (i = 0; ret == 0 && i < lb->nr_cpus; i++) {
			const struct vt_lastboot_cpu *c = &lb->cpus[i];
			uint64_t off;

			if (c->cpu != cpu)
				continue;
			for (off = 0; ret == 0 && off + fmt.subbuf_size <= c->len; off += fmt.subbuf_size) {
				const uint8_t *p = c->data + off;

				if (vt_page_size_check(&fmt, p, fmt.subbuf_size, NULL) < 0 ||
				    vt_page_validate(&fmt, p, fmt.subbuf_size, NULL, NULL, NULL, NULL) < 0) {
					(*bad)++;
					continue;
				}
				ret = vt_tracedat_cpu_write(w, p, fmt.subbuf_size);
				(*pages)++;
			}
		}
		ret = ret ?: vt_tracedat_cpu_end(w);
	}
	ret = ret ?: vt_tracedat_finish(w);
	vt_tracedat_free(w);
	return ret;
}

/*
 * DIR/@name, made as every output is (store/spool.c): @name.tmp exclusively,
 * never through a link, in the output directory, then renamed over @name
 * (which may only be a regular file, or absent).
 */
static int save_file(int out_fd, const char *name, const struct vt_lastboot *lb,
		     const struct vt_meta *m, const struct record_opts *o, uint64_t *pages,
		     uint64_t *bad, uint64_t *replaced)
{
	char tmp[COLLECT_NAME_MAX + 64];
	struct stat st;
	int fd, ret;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", name) >= sizeof(tmp))
		return -ENAMETOOLONG;
	if (fstatat(out_fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISREG(st.st_mode))
		return S_ISLNK(st.st_mode) ? -ELOOP : -EEXIST;
	fd = spool_create(out_fd, tmp, O_WRONLY, true);
	if (fd < 0)
		return fd;
	ret = write_file(fd, lb, m, o, pages, bad, replaced);
	if (close(fd) < 0 && !ret)
		ret = -errno;
	if (ret == 0 && renameat(out_fd, tmp, out_fd, name) < 0)
		ret = -errno;
	if (ret < 0)
		unlinkat(out_fd, tmp, 0);
	return ret;
}

/**
 * lastboot_save() - write the previous boot's trace, received in @rx, to
 * guest-NAME.lastboot.dat
 * @guest: the guest's name
 * @out_fd: the output directory
 * @rx: the bundle, which the session asked for (LASTBOOT_REQ); released here
 * @o: options (@o->last_boot names the instance, @o->out_dir the directory)
 * @why: where to say why the guest must fail, on an error
 * @size: its size
 *
 * Takes the guest's name, its output directory and the bundle, not the guest,
 * so that this file does not depend on the session (record/'s include graph).
 *
 * Return: 0, or -errno with @why set for the guest's failure (a malformed
 * bundle, a write error).
 */
int lastboot_save(const char *guest, int out_fd, struct vt_proto_meta_rx *rx,
		  const struct record_opts *o, char *why, size_t size)
{
	static struct vt_lastboot lb;
	uint64_t pages = 0, bad = 0, replaced = 0;
	char name[COLLECT_NAME_MAX + 32], path[PATH_MAX], raw[VT_PROTO_MAX_NAME];
	struct vt_meta_clean clean;
	struct vt_meta m;
	int ret;

	ret = vt_lastboot_decode(&lb, rx->data, rx->len);
	if (ret == 0 && (lb.name_len != strlen(o->last_boot) ||
			 memcmp(lb.name, o->last_boot, lb.name_len))) {
		char said[64];

		snprintf(raw, sizeof(raw), "%.*s", (int)(lb.name_len < sizeof(raw) - 1 ?
			 lb.name_len : sizeof(raw) - 1), lb.name);
		collect_sanitize(said, sizeof(said), raw, false);
		snprintf(why, size, "the last boot's trace it sent is of instance '%s', not of "
			 "--last-boot %s: refused", said, o->last_boot);
		vt_proto_meta_rx_release(rx);
		return -EBADMSG;
	}
	if (ret == 0)
		ret = vt_meta_decode(&m, lb.meta, lb.meta_len);
	if (ret < 0) {
		snprintf(why, size, "the last boot's trace bundle is malformed (%s)", strerror(-ret));
		vt_proto_meta_rx_release(rx);
		return ret;
	}
	vt_meta_sanitize(&m, &clean);
	if (clean.formats_dropped)
		log_err("guest %s: the last boot's trace: %u event formats hold control characters "
			"or invalid UTF-8 and are refused (the first: %s)", guest,
			clean.formats_dropped, clean.first_dropped);
	if (clean.formats_out_of_bounds)
		log_err("guest %s: the last boot's trace: %u event formats refused, a field or print "
			"argument outside the event (%s)", guest, clean.formats_out_of_bounds,
			clean.out_of_bounds);
	snprintf(name, sizeof(name), "guest-%s.lastboot.dat", guest);
	snprintf(path, sizeof(path), "%s/%s", o->out_dir, name);
	ret = save_file(out_fd, name, &lb, &m, o, &pages, &bad, &replaced);
	vt_meta_free(&m);
	vt_proto_meta_rx_release(rx);
	if (ret < 0) {
		snprintf(why, size, "cannot write %s: %s", path,
			 ret == -ELOOP ? "a symbolic link is in the way" : strerror(-ret));
		return ret;
	}
	if (clean.replaced + replaced)
		log_warn("guest %s: the last boot's trace: %llu control characters or invalid "
			 "UTF-8 bytes replaced by '?' in its note and metadata", guest,
			 (unsigned long long)(clean.replaced + replaced));
	if (bad)
		log_warn("guest %s: the last boot's trace had %llu malformed pages, left out", guest,
			 (unsigned long long)bad);
	log_info("guest %s: the last boot's trace of instance %s: %llu pages in %s (its own clock, "
		 "not merged with the host)", guest, o->last_boot, (unsigned long long)pages, path);
	return 0;
}
