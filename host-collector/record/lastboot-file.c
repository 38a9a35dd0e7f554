// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * record --last-boot NAME: the guest's previous boot's trace, kept by the
 * kernel in a persistent boot-mapped instance NAME across a crash and warm
 * reset (Linux 6.12+), asked for before anything else is configured and
 * written to guest-GUEST.lastboot.dat. Its timestamps are the previous boot's
 * trace clock: the file says so (a LAST_BOOT_INFO option, as trace-cmd 3.4
 * writes for such buffers) and has no TIME_SHIFT, so it is never merged with
 * this boot's host timeline.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collect.h"
#include "lastboot-file.h"
#include "record.h"
#include "session.h"
#include "vt_lastboot.h"
#include "vt_meta.h"
#include "vt_pages.h"
#include "vt_proto.h"
#include "vt_tracedat.h"

#define OPT_LAST_BOOT_INFO	24	/* trace-cmd 3.4's TRACECMD_OPTION_LAST_BOOT_INFO */

/* Write @lb as a trace file at @path; sets @pages and @bad. */
static int write_file(const char *path, const struct vt_lastboot *lb, const struct vt_meta *m,
		      const struct record_opts *o, uint64_t *pages, uint64_t *bad)
{
	struct vt_tracedat_opts opts = { .version = o->file_version,
					 .compression = VT_TD_COMPRESS_NONE };
	struct vt_page_fmt fmt;
	struct vt_tracedat *w;
	char note[8192];
	uint32_t cpu, i;
	int fd, n, ret;

	ret = vt_page_fmt_parse(&fmt, m->header_page.data, m->header_page.len);
	if (ret < 0)
		return ret;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	w = vt_tracedat_create(fd, m, &opts);
	if (!w) {
		ret = -errno;
		goto out_close;
	}
	/* The kernel's own text first (what trace-cmd 3.4 reads), then what it means here. */
	n = snprintf(note, sizeof(note), "%.*s%s# virtio-trace: the previous boot's trace of instance "
		     "%.*s; timestamps are that boot's trace clock, not synchronised with the host\n",
		     (int)lb->info_len, lb->info,
		     lb->info_len && lb->info[lb->info_len - 1] != '\n' ? "\n" : "",
		     (int)lb->name_len, lb->name);
	ret = vt_tracedat_add_option(w, OPT_LAST_BOOT_INFO, note,
				     (size_t)n < sizeof(note) ? (size_t)n + 1 : sizeof(note));
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
out_close:
	if (close(fd) < 0 && !ret)
		ret = -errno;
	if (ret < 0)
		unlink(path);
	return ret;
}

/**
 * lastboot_save() - write the previous boot's trace, received in @g->meta_rx,
 * to guest-NAME.lastboot.dat
 * @g: the guest; session.c asked for the bundle (LASTBOOT_REQ) and has it
 * @o: options (@o->last_boot names the instance, @o->out_dir the directory)
 *
 * Return: 0, or -errno with the guest failed (a malformed bundle, a write error).
 */
int lastboot_save(struct guest *g, const struct record_opts *o)
{
	static struct vt_lastboot lb;
	uint64_t pages = 0, bad = 0;
	char path[PATH_MAX];
	struct vt_meta m;
	int ret;

	ret = vt_lastboot_decode(&lb, g->meta_rx.data, g->meta_rx.len);
	if (ret == 0)
		ret = vt_meta_decode(&m, lb.meta, lb.meta_len);
	if (ret < 0) {
		session_fail(g, "the last boot's trace bundle is malformed (%s)", strerror(-ret));
		return ret;
	}
	if ((size_t)snprintf(path, sizeof(path), "%s/guest-%s.lastboot.dat", o->out_dir, g->name) >=
	    sizeof(path))
		ret = -ENAMETOOLONG;
	else
		ret = write_file(path, &lb, &m, o, &pages, &bad);
	vt_meta_free(&m);
	vt_proto_meta_rx_release(&g->meta_rx);
	if (ret < 0) {
		session_fail(g, "cannot write %s: %s", path, strerror(-ret));
		return ret;
	}
	if (bad)
		log_warn("guest %s: the last boot's trace had %llu malformed pages, left out", g->name,
			 (unsigned long long)bad);
	log_info("guest %s: the last boot's trace of instance %s: %llu pages in %s (its own clock, "
		 "not merged with the host)", g->name, o->last_boot, (unsigned long long)pages, path);
	return 0;
}
